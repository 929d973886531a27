"""One host↔device session over a Link (docs/protocol.md, "Session").

HELLO → check sizes → for each sample: INPUT, wait for its OUTPUT (resend on NACK) → END →
STATUS → EOT. Every wait has a deadline; every error carries the results received so far
(``err.partial``) and says what the device sent.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO, Callable

from ..errors import TabulaError
from .link import Link, LinkClosed, LinkTimeout
from .protocol import (
    SEQ_UNKNOWN,
    Frame,
    FrameParser,
    Hello,
    MsgType,
    ProtocolError,
    encode_frame,
    parse_hello,
    parse_nack,
    parse_output,
    parse_status,
)

MAX_RESENDS = 3
TAIL_BYTES = 200
EOT_WAIT_S = 2.0


@dataclass
class SessionResult:
    hello: Hello | None = None
    outputs: list[list[bytes]] = field(default_factory=list)  # per sample, split by output sizes
    ticks: list[int] = field(default_factory=list)  # per sample, ticks in tabula_model_run
    model_status: list[int] = field(default_factory=list)  # per sample, tabula_model_run's status
    exit_code: int | None = None  # from STATUS; None until it arrives
    n_inferences: int | None = None  # from STATUS
    eot: bool = False  # the EOT byte followed STATUS
    n_rejected_frames: int = 0
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> count
    n_resends: int = 0
    n_ignored_frames: int = 0  # duplicates, stale seqs, unexpected types
    transcript_path: Path | None = None  # raw bytes received from the device
    process_exit_code: int | None = None  # set by run_on_board once the runner has exited
    runner: str | None = None  # set by run_on_board: which runner ran it

    @property
    def board_name(self) -> str | None:
        return self.hello.board_name if self.hello else None

    @property
    def tick_hz(self) -> int | None:
        return self.hello.tick_hz if self.hello else None


class SessionError(TabulaError):
    """Base of session failures; ``partial`` holds the SessionResult received so far."""

    exit_code = 1  # the device or the link failed, not the user's input

    def __init__(self, message: str, partial: SessionResult):
        super().__init__(message)
        self.partial = partial


class DeviceTimeout(SessionError):
    """The device did not answer in time."""


class DeviceError(SessionError):
    """The device misbehaved: non-zero status, closed the link early, refused input, bad HELLO."""


class DeviceReset(DeviceError):
    """The device rebooted mid-run (a second HELLO arrived): its state is gone."""


class InputSizeMismatch(SessionError, ValueError):
    """The inputs given to the host do not match what the firmware says it takes."""


def _printable(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 or b == 10 else f"\\x{b:02x}" for b in data)


class _Receiver:
    """Reads the link into a FrameParser, records a transcript and the last bytes seen."""

    def __init__(self, link: Link, log: BinaryIO | IO[str] | None, result: SessionResult):
        self.link, self.log, self.result = link, log, result
        self.parser = FrameParser()
        self.pending: list[Frame] = []
        self.tail = bytearray()
        self.n_received = 0

    def received(self) -> str:
        if not self.n_received:
            return "received nothing from the device"
        shown = bytes(self.tail[-TAIL_BYTES:])
        which = f", last {len(shown)}" if self.n_received > len(shown) else ""
        return f"received {self.n_received} bytes{which}: '{_printable(shown)}'"

    def sync_stats(self) -> None:
        self.result.n_rejected_frames = self.parser.n_rejected
        self.result.rejected = dict(self.parser.rejected)

    def poll(self) -> None:
        data = self.link.read(4096)  # waits at most the link's poll interval
        if not data:
            return
        self.n_received += len(data)
        self.tail += data
        del self.tail[:-TAIL_BYTES]
        if self.log is not None:
            self.log.write(data if not isinstance(self.log, io.TextIOBase) else data.decode("latin-1"))
            self.log.flush()
        self.pending += self.parser.feed(data)
        self.sync_stats()

    def next_frame(self, deadline: float) -> Frame | None:
        """The next good frame, or None at the deadline. Raises LinkClosed."""
        while not self.pending:
            if time.monotonic() >= deadline:
                return None
            self.poll()
        return self.pending.pop(0)

    def wait_for(self, accept: Callable[[Frame], bool], deadline: float) -> Frame | None:
        while (frame := self.next_frame(deadline)) is not None:
            if accept(frame):
                return frame
            self.result.n_ignored_frames += 1
        return None


def _open_log(log) -> tuple[IO | None, bool, Path | None]:
    if log is None:
        return None, False, None
    if isinstance(log, (str, os.PathLike)):
        path = Path(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "wb"), True, path
    name = getattr(log, "name", None)
    return log, False, Path(name) if isinstance(name, str) else None


def run_session(link: Link, inputs: list[bytes], *, timeout_s: float,
                expect_input_bytes: list[int] | None = None,
                log: str | os.PathLike | IO | None = None,
                hello_timeout_s: float | None = None) -> SessionResult:
    """Run every sample in ``inputs`` (one bytes per sample, all model inputs concatenated).

    ``timeout_s`` bounds each wait (HELLO, each OUTPUT attempt, STATUS); ``hello_timeout_s``
    overrides it for the boot. ``expect_input_bytes`` is what the host thinks each model input
    takes; it must equal HELLO's sizes. ``log`` receives the raw bytes the device sent.
    """
    result = SessionResult()
    fh, owned, result.transcript_path = _open_log(log)
    rx = _Receiver(link, fh, result)
    stage = "HELLO"

    def fail(cls, message: str):
        rx.sync_stats()
        return cls(f"{message}; {rx.received()}", result)

    try:
        boot_s = timeout_s if hello_timeout_s is None else hello_timeout_s
        frame = rx.wait_for(lambda f: f.type == MsgType.HELLO, time.monotonic() + boot_s)
        if frame is None:
            raise fail(DeviceTimeout, f"no HELLO from the device within {boot_s:g} s")
        try:
            hello = result.hello = parse_hello(frame.payload)
        except ProtocolError as e:
            raise fail(DeviceError, f"bad HELLO: {e}") from e
        _check_sizes(hello, inputs, expect_input_bytes, result)

        for i, sample in enumerate(inputs):
            seq = i & 0xFFFF
            stage = f"OUTPUT for sample {i} (seq {seq})"
            out_frame = _exchange(rx, link.write, MsgType.INPUT, seq, sample, MsgType.OUTPUT,
                                  timeout_s, stage, fail)
            try:
                out = parse_output(out_frame.payload, hello.output_sizes)
            except ProtocolError as e:
                raise fail(DeviceError, f"bad {stage}: {e}") from e
            result.outputs.append(out.outputs)
            result.ticks.append(out.ticks)
            result.model_status.append(out.status)

        seq = len(inputs) & 0xFFFF
        stage = f"STATUS (END seq {seq})"
        eot_before = rx.parser.eot_count
        st_frame = _exchange(rx, link.write, MsgType.END, seq, b"", MsgType.STATUS, timeout_s, stage, fail)
        try:
            status = parse_status(st_frame.payload)
        except ProtocolError as e:
            raise fail(DeviceError, f"bad STATUS: {e}") from e
        result.exit_code, result.n_inferences = status.exit_code, status.n_inferences

        stage = "EOT"
        deadline = time.monotonic() + min(timeout_s, EOT_WAIT_S)
        try:
            while rx.parser.eot_count == eot_before and time.monotonic() < deadline:
                rx.poll()
        except LinkClosed:
            pass  # the device exits right after EOT; a closed link here is normal
        result.eot = rx.parser.eot_count > eot_before
        rx.sync_stats()

        bad = [(i, s) for i, s in enumerate(result.model_status) if s != 0]
        if status.exit_code != 0 or bad:
            what = f"device exited with status {status.exit_code}"
            if bad:
                what += f"; tabula_model_run failed on {len(bad)} sample(s), first: " \
                        f"sample {bad[0][0]} status {bad[0][1]}"
            raise fail(DeviceError, what)
        return result
    except LinkClosed as e:
        raise fail(DeviceError, f"link closed while waiting for {stage} ({e})") from e
    except LinkTimeout as e:
        raise fail(DeviceTimeout, f"could not send to the device while waiting for {stage} ({e})") from e
    finally:
        rx.sync_stats()
        if owned and fh is not None:
            fh.close()


def _check_sizes(hello: Hello, inputs: list[bytes], expect: list[int] | None,
                 result: SessionResult) -> None:
    if expect is not None and list(expect) != list(hello.input_sizes):
        raise InputSizeMismatch(
            f"the host model's inputs take {list(expect)} bytes but the firmware "
            f"({hello.board_name}) reports {list(hello.input_sizes)} bytes", result)
    total = sum(hello.input_sizes)
    for i, sample in enumerate(inputs):
        if len(sample) != total:
            raise InputSizeMismatch(
                f"sample {i} is {len(sample)} bytes but the firmware expects {total} bytes "
                f"(inputs {list(hello.input_sizes)})", result)


def _exchange(rx: _Receiver, send, req_type: MsgType, seq: int, payload: bytes,
              reply_type: MsgType, timeout_s: float, stage: str, fail) -> Frame:
    """Send one request and wait for its reply with the same seq; resend on NACK."""
    try:
        frame = encode_frame(req_type, seq, payload)
    except ProtocolError as e:
        raise fail(InputSizeMismatch, f"cannot send {req_type.name} seq {seq}: {e}") from e
    sends = 0
    while True:
        send(frame)
        sends += 1
        deadline = time.monotonic() + timeout_s

        def accept(f: Frame) -> bool:
            return (f.type == reply_type and f.seq == seq) or f.type == MsgType.HELLO or (
                f.type == MsgType.NACK and f.seq in (seq, SEQ_UNKNOWN))

        reply = rx.wait_for(accept, deadline)
        if reply is None:
            raise fail(DeviceTimeout, f"no {stage} within {timeout_s:g} s")
        if reply.type == reply_type:
            return reply
        if reply.type == MsgType.HELLO:  # a device only says HELLO after a reset
            raise fail(DeviceReset, f"device reset while waiting for {stage} (it sent HELLO "
                                    f"again; {len(rx.result.outputs)} sample(s) were done)")
        try:
            reason = parse_nack(reply.payload)
        except ProtocolError:
            reason = "unreadable"
        name = getattr(reason, "name", str(reason)).lower().replace("_", " ")
        if sends > MAX_RESENDS:
            raise fail(DeviceError, f"device refused {req_type.name} seq {seq} {sends} times "
                                    f"(last NACK: {name})")
        rx.result.n_resends += 1
