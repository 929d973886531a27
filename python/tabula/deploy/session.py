"""One host↔device session over a Link (docs/protocol.md, "Session" and "Retry").

HELLO → check sizes → for each sample: INPUT, wait for its OUTPUT → END → STATUS → EXIT → EOT.
Every wait has a deadline; every error carries the results received so far (``err.partial``) and
says what the device sent.

A noisy link costs a retry, not the run. A version 2 device answers every request idempotently
(a repeated INPUT or a RESEND replays the stored OUTPUT, a repeated END repeats STATUS, a HELLO
request repeats HELLO), so whenever the reply does not come the host simply asks again:

=========================================================  =====================================
what the host sees while waiting for a reply               what it sends again
=========================================================  =====================================
a NACK for this request (its seq or 0xFFFF; any seq when   the request in full (INPUT k, END...)
the reason says the frame arrived damaged)
a damaged frame (CRC, hex, length or newline check)        RESEND k while waiting for OUTPUT k
                                                           (INPUT k if it looks like a NACK),
                                                           else the request
silence for one retransmission timeout                     the same as for a damaged frame
=========================================================  =====================================

At most ``max_retries`` times per request (then :class:`LinkError`), and never past the request's
deadline (``timeout_s`` after it was first sent; then :class:`DeviceTimeout`). The retransmission
timeout (RTO, :class:`_RetryTimer`) follows TCP's (RFC 6298): smoothed round trip plus four mean
deviations, measured only on requests answered without a retry (Karn's rule), within
[``RETRY_MIN_S``, ``RETRY_MAX_S``], ``RETRY_FIRST_S`` before the first measurement; doubled after
each silence, halved back after a request answered without one. Retries after a NACK or a damaged
frame wait a short exponential backoff first (``BACKOFF_BASE_S``·2^(n-1), at most
``BACKOFF_MAX_S``).

An INPUT's round trip includes the inference, so INPUTs have their own timer: its floor is twice the
inference time the device reports (OUTPUT ticks / HELLO tick_hz) and its cap grows to twice the
longest round trip measured (up to ``timeout_s``), so a device that computes for 10 s per sample is
not asked again every 4 s. A silence that was only a slow device (a loaded emulator, a long
inference) is told apart after the fact, as TCP does with D-SACK (RFC 3708): the device answers every
repeated request, so when the reply to a request that was asked again only on silence arrives once
more (a replay, same frame), that retry was not needed: it moves from ``retries`` to
``spurious_retries`` and the true round trip (first send to first reply) is measured. Retries the
link needed (a lost or damaged frame: no second copy comes) stay counted. A version 1 device is driven the same way except that it gets INPUT again
instead of RESEND (it recomputes), is never asked again on mere silence, and exits after STATUS
without EXIT.

Nothing damaged is ever accepted: a frame counts only if its CRC32 matches, and an OUTPUT only if
its seq is the INPUT's and its size is the model's.
"""

from __future__ import annotations

import io
import os
import time
from collections import Counter
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
    NackReason,
    ProtocolError,
    encode_frame,
    parse_hello,
    parse_nack,
    parse_output,
    parse_status,
)

MAX_RETRIES = 32
"""Retries per request (INPUT, END, EXIT, HELLO request) before the session gives up."""
RETRY_FIRST_S = 3.0
"""Retransmission timeout before any round trip was measured (RFC 2988's initial RTO: the first
inference on a loaded emulator can take a second or two)."""
RETRY_MIN_S = 1.0
"""The retransmission timeout never goes below this (seconds; RFC 6298 rounds up to 1 s too)."""
RETRY_MAX_S = 4.0
"""Nor above this, for requests without an inference (HELLO requests, END, EXIT) and for INPUTs until
a longer inference was measured (the INPUT timer's cap then grows to ``INFERENCE_FACTOR`` times it)."""
INFERENCE_FACTOR = 2.0
"""The INPUT timer waits at least this many times the device's reported inference time, and its cap
grows to this many times the longest INPUT round trip measured."""
BACKOFF_BASE_S = 0.002
BACKOFF_MAX_S = 0.2
TAIL_BYTES = 200
EOT_WAIT_S = 2.0
"""How long a version 1 device gets to write EOT after STATUS."""
EXIT_WAIT_S = 10.0
"""How long the host keeps sending EXIT for the EOT (a parked board never closes the link)."""


@dataclass
class SessionResult:
    hello: Hello | None = None
    outputs: list[list[bytes]] = field(default_factory=list)  # per sample, split by output sizes
    ticks: list[int] = field(default_factory=list)  # per sample, ticks in tabula_model_run
    op_ticks: list[tuple[int, ...]] = field(default_factory=list)  # per sample, per op (profiling firmware only)
    model_status: list[int] = field(default_factory=list)  # per sample, tabula_model_run's status
    exit_code: int | None = None  # from STATUS; None until it arrives
    n_inferences: int | None = None  # from STATUS
    eot: bool = False  # the EOT byte followed STATUS
    n_rejected_frames: int = 0  # damaged frames the host detected (and dropped)
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> count
    n_ignored_frames: int = 0  # duplicates, stale seqs, unexpected types
    n_frames_sent: int = 0  # frames the host wrote, retries included
    n_frames_received: int = 0  # good frames from the device (CRC matched)
    n_nacks: int = 0  # NACKs for the host's requests: damaged frames the device detected
    n_retries: int = 0  # requests sent again because the link lost or damaged something
    retries: dict[str, int] = field(default_factory=dict)  # cause (nack, damaged, silence) -> count
    n_spurious_retries: int = 0  # sent again on silence while the device was only slow (its answer came twice)
    device_rejected: int | None = None  # from a version 2 STATUS: frames the device NACKed
    device_replayed: int | None = None  # from a version 2 STATUS: OUTPUTs sent again from store
    injected: dict | None = None  # ground truth of a FaultyLink (tabula.deploy.faults), if one ran
    transcript_path: Path | None = None  # raw bytes received from the device
    process_exit_code: int | None = None  # set by run_on_board once the runner has exited
    runner: str | None = None  # set by run_on_board: which runner ran it

    @property
    def board_name(self) -> str | None:
        return self.hello.board_name if self.hello else None

    @property
    def tick_hz(self) -> int | None:
        return self.hello.tick_hz if self.hello else None

    @property
    def n_resends(self) -> int:
        """Requests sent again (the name of ``n_retries`` before protocol version 2)."""
        return self.n_retries

    def link_stats(self) -> dict:
        """The link counters as ``results.json`` carries them (``link``).

        ``frames_sent``: host→device frames, retries included; ``frames_received``: good
        device→host frames; ``damaged_detected_by_host`` / ``damaged_detected_by_device``: frames
        rejected by CRC, hex, length or newline checks on each side (the device's count comes in
        STATUS, None from a version 1 device); ``retries`` and ``retries_by_cause`` (nack, damaged,
        silence); ``outputs_replayed``: OUTPUTs the device re-sent from store instead of
        recomputing; ``spurious_retries``: requests sent again on silence while the device was still
        computing (both answers arrived: the link lost nothing; not in ``retries``); ``injected``: what a
        fault-injecting link really did, when one was used (frames, frames_damaged, faults by kind).
        """
        stats = {
            "protocol_version": self.hello.version if self.hello else None,
            "frames_sent": self.n_frames_sent,
            "frames_received": self.n_frames_received,
            "damaged_detected_by_host": self.n_rejected_frames,
            "damaged_detected_by_device": self.device_rejected,
            "nacks_received": self.n_nacks,
            "retries": self.n_retries,
            "retries_by_cause": dict(sorted(self.retries.items())),
            "spurious_retries": self.n_spurious_retries,
            "outputs_replayed": self.device_replayed,
            "ignored_frames": self.n_ignored_frames,
        }
        if self.injected is not None:
            stats["injected"] = self.injected
        return stats


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


class LinkError(DeviceError):
    """The link kept losing or damaging frames: a request was asked ``max_retries`` times without a
    good reply."""


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
        self.last_rx = 0.0  # time.monotonic() of the last byte received

    def received(self) -> str:
        if not self.n_received:
            return "received nothing from the device"
        shown = bytes(self.tail[-TAIL_BYTES:])
        which = f", last {len(shown)}" if self.n_received > len(shown) else ""
        return f"received {self.n_received} bytes{which}: '{_printable(shown)}'"

    def sync_stats(self) -> None:
        self.result.n_rejected_frames = self.parser.n_rejected
        self.result.rejected = dict(self.parser.rejected)
        self.result.n_frames_received = self.parser.n_frames

    def poll(self) -> None:
        data = self.link.read(4096)  # waits at most the link's poll interval
        if not data:
            return
        self.last_rx = time.monotonic()
        self.n_received += len(data)
        self.tail += data
        del self.tail[:-TAIL_BYTES]
        if self.log is not None:
            self.log.write(data if not isinstance(self.log, io.TextIOBase) else data.decode("latin-1"))
            self.log.flush()
        self.pending += self.parser.feed(data)
        self.sync_stats()

    def wait(self, deadline: float, quiet_s: float, since: float, damage_mark: int,
             eot_mark: int | None) -> tuple[str, Frame | None]:
        """Poll until something happens; returns (event, frame). Events: ``frame`` (a good frame),
        ``eot`` (an EOT byte beyond ``eot_mark``, when given), ``damage`` (a frame was rejected
        since the parser's count was ``damage_mark`` and no new frame is under way), ``quiet`` (no
        byte for ``quiet_s`` since ``since`` or the last byte, whichever is later), ``deadline``.
        Raises LinkClosed."""
        while True:
            if self.pending:
                return "frame", self.pending.pop(0)
            if eot_mark is not None and self.parser.eot_count > eot_mark:
                return "eot", None
            if self.parser.n_rejected > damage_mark and not self.parser.in_frame:
                return "damage", None
            now = time.monotonic()
            if now >= deadline:
                return "deadline", None
            if now - max(since, self.last_rx) >= quiet_s:
                return "quiet", None
            self.poll()


class _RetryTimer:
    """The retransmission timeout (RTO). Its base is TCP's (RFC 6298): SRTT + 4·RTTVAR over round
    trips of requests answered without any retry (Karn's rule), at least RETRY_MIN_S (and
    ``floor_s``), RETRY_FIRST_S before the first measurement; ``backoff`` doubles it after a silence
    (a slow device thus teaches the host its pace); ``relax`` halves it back towards the base after a
    request that was answered without a silence; both stay within [base, cap].

    The cap is ``cap_s``; with ``limit_s`` (the INPUT timer) it grows to INFERENCE_FACTOR times the
    longest round trip measured and the floor to INFERENCE_FACTOR times the longest inference the
    device reported (:meth:`inference`), both at most ``limit_s``."""

    def __init__(self, cap_s: float, limit_s: float | None = None):
        self.cap_s = cap_s
        self.limit_s = limit_s if limit_s is not None else cap_s
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.longest = 0.0      # longest round trip measured (s)
        self.floor_s = 0.0      # INFERENCE_FACTOR x the longest inference the device reported (s)
        self.rto = self.base

    @property
    def cap(self) -> float:
        return min(self.limit_s, max(self.cap_s, INFERENCE_FACTOR * self.longest, self.floor_s))

    @property
    def base(self) -> float:
        if self.srtt is None:
            return min(max(RETRY_FIRST_S, self.floor_s), self.cap)
        return min(max(RETRY_MIN_S, self.floor_s, self.srtt + 4 * self.rttvar), self.cap)

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.longest = max(self.longest, rtt)
        self.rto = self.base

    def inference(self, seconds: float) -> None:
        """The device reported computing for ``seconds`` (OUTPUT ticks / tick_hz): never time out sooner
        than INFERENCE_FACTOR times the longest such."""
        if seconds > 0:
            self.floor_s = min(self.limit_s, max(self.floor_s, INFERENCE_FACTOR * seconds))
            self.rto = max(self.rto, self.base)

    def backoff(self) -> None:
        self.rto = min(2 * self.rto, self.cap)

    def relax(self) -> None:
        self.rto = max(self.base, self.rto / 2)


@dataclass
class _Echo:
    """A reply accepted after ``silences`` retries, all on silence: each further copy of it (the device
    answering a repeated request) shows one of those retries was not needed."""
    type: int
    seq: int
    payload: bytes
    silences: int
    rtt: float           # first send to first reply: the true round trip if no retry was needed
    timer: "_RetryTimer"
    seen: int = 0

    def matches(self, frame: Frame) -> bool:
        return (frame.type, frame.seq, frame.payload) == (self.type, self.seq, self.payload)


def _open_log(log) -> tuple[IO | None, bool, Path | None]:
    if log is None:
        return None, False, None
    if isinstance(log, (str, os.PathLike)):
        path = Path(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "wb"), True, path
    name = getattr(log, "name", None)
    return log, False, Path(name) if isinstance(name, str) else None


def _nack_for(frame: Frame, seq: int | None) -> NackReason | int | str | None:
    """The reason of a NACK that concerns the request with ``seq``, else None.

    A NACK for a damaged frame (CRC, frame too long, unreadable) concerns the current request
    whatever its seq says: the device read that seq from the damaged header, or could not read it
    (0xFFFF). Any other reason (length, type, not available) comes from a frame whose CRC matched,
    so its seq is exact and must be the request's."""
    if frame.type != MsgType.NACK or seq is None:
        return None
    try:
        reason = parse_nack(frame.payload)
    except ProtocolError:
        return "unreadable" if frame.seq in (seq, SEQ_UNKNOWN) else None
    damaged = reason in (NackReason.CRC_MISMATCH, NackReason.FRAME_TOO_LONG)
    return reason if damaged or frame.seq in (seq, SEQ_UNKNOWN) else None


def _nack_name(reason) -> str:
    return getattr(reason, "name", str(reason)).lower().replace("_", " ")


class _Session:
    """The request/retry machinery shared by every stage of run_session."""

    def __init__(self, link: Link, rx: _Receiver, result: SessionResult, timeout_s: float,
                 max_retries: int):
        self.link, self.rx, self.result = link, rx, result
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.timer = _RetryTimer(min(timeout_s, RETRY_MAX_S))   # HELLO requests, END, EXIT
        self.compute = _RetryTimer(min(timeout_s, RETRY_MAX_S), limit_s=timeout_s)   # INPUT: + the inference
        self.echo: _Echo | None = None
        self.hello_seen = False
        self.idempotent = True  # False for a version 1 device: no retry on mere silence

    def fail(self, cls, message: str) -> SessionError:
        self.rx.sync_stats()
        return cls(f"{message}; {self.rx.received()}", self.result)

    def send(self, frame: bytes) -> None:
        self.link.write(frame)
        self.result.n_frames_sent += 1

    def ask(self, stage: str, request: bytes | None, accept: Callable[[Frame], bool],
            again: Callable[[str, object], bytes | None], *, seq: int | None = None,
            fatal_nacks: tuple = (), eot_mark: int | None = None,
            timeout_s: float | None = None, timer: _RetryTimer | None = None) -> Frame | None:
        """Send ``request`` (None: only listen) and return the first frame ``accept`` takes, or
        None once an EOT beyond ``eot_mark`` arrives. ``again(cause, last_nack)`` is the frame to
        send when asking again (None: nothing to ask yet, keep listening). NACKs with ``seq`` (or
        0xFFFF) answer this request; a reason in ``fatal_nacks`` ends the session. ``timer``: the
        retransmission timer (default the link's; INPUTs use the one that includes the inference)."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        timer = self.timer if timer is None else timer
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        causes: Counter[str] = Counter()
        last_nack = None
        if request is not None:
            self.send(request)
        first_sent = sent_at = time.monotonic()
        mark = self.rx.parser.n_rejected
        while True:
            event, frame = self.rx.wait(deadline, timer.rto, sent_at, mark, eot_mark)
            if event == "eot":
                return None
            if event == "frame":
                assert frame is not None
                if accept(frame):
                    now = time.monotonic()
                    if request is not None and not causes:
                        timer.sample(now - sent_at)
                    elif not causes["silence"]:
                        timer.relax()
                    silent_only = bool(causes) and set(causes) == {"silence"}
                    self.echo = _Echo(frame.type, frame.seq, frame.payload, causes["silence"], now - first_sent,
                                      timer) if silent_only else None
                    return frame
                if self.echo is not None and self.echo.matches(frame):
                    self._spurious()
                    continue
                if frame.type == MsgType.HELLO and frame.seq == 0 and self.hello_seen:
                    # only a boot says HELLO with seq 0 (answers to HELLO requests carry theirs)
                    raise self.fail(DeviceReset, f"device reset while waiting for {stage} (it sent "
                                                 f"HELLO again; {len(self.result.outputs)} sample(s) were done)")
                reason = _nack_for(frame, seq)
                if reason is None:
                    self.result.n_ignored_frames += 1
                    continue
                self.result.n_nacks += 1
                last_nack = reason
                if last_nack in fatal_nacks:
                    raise self.fail(DeviceError, f"device refused the request for {stage} "
                                                 f"(NACK: {_nack_name(last_nack)})")
                cause = "nack"
            elif event == "damage":
                cause = "damaged"
            elif event == "quiet":
                if not self.idempotent:  # a version 1 device would run a repeated INPUT again:
                    sent_at = time.monotonic()  # only evidence (a NACK, a damaged frame) counts
                    continue
                cause = "silence"
            else:
                raise self.fail(DeviceTimeout, f"no {stage} within {timeout_s:g} s{_asked(causes)}")
            data = again(cause, last_nack)
            if data is None:  # nothing to ask (yet): keep listening
                sent_at, mark = time.monotonic(), self.rx.parser.n_rejected
                continue
            if sum(causes.values()) >= self.max_retries:
                last = f" (last NACK: {_nack_name(last_nack)})" if last_nack is not None else ""
                raise self.fail(LinkError, f"gave up on {stage} after {self.max_retries} retries in "
                                           f"{time.monotonic() - t0:.1f} s{_asked(causes)}{last}: the "
                                           f"link loses or damages too many frames (check the cable, "
                                           f"baud rate and ground; max_retries allows more)")
            causes[cause] += 1
            self.result.n_retries += 1
            self.result.retries[cause] = self.result.retries.get(cause, 0) + 1
            if cause == "silence":
                timer.backoff()
            else:
                time.sleep(min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (sum(causes.values()) - 1)))
            self.send(data)
            sent_at, mark = time.monotonic(), self.rx.parser.n_rejected


    def _spurious(self) -> None:
        """Another copy of the last reply that came after silences only: one of those retries was
        the device computing, not the link losing a frame (module docstring)."""
        echo, r = self.echo, self.result
        echo.seen += 1
        r.n_ignored_frames += 1
        if echo.seen > echo.silences:
            return
        r.n_retries -= 1
        r.retries["silence"] -= 1
        if not r.retries["silence"]:
            del r.retries["silence"]
        r.n_spurious_retries += 1
        if echo.seen == echo.silences:  # none was needed: the first reply answered the first send
            echo.timer.sample(echo.rtt)


def _asked(causes: Counter) -> str:
    """' (asked again 3 times: 1 NACK, 2 silences)', or '' without retries."""
    if not causes:
        return ""
    names = {"nack": ("NACK", "NACKs"), "damaged": ("damaged frame", "damaged frames"),
             "silence": ("silence", "silences")}
    parts = ", ".join(f"{n} {names[c][n != 1]}" for c, n in sorted(causes.items()) if n)
    n = sum(causes.values())
    return f" (asked again {'once' if n == 1 else f'{n} times'}: {parts})"


def run_session(link: Link, inputs: list[bytes], *, timeout_s: float,
                expect_input_bytes: list[int] | None = None,
                log: str | os.PathLike | IO | None = None,
                hello_timeout_s: float | None = None,
                max_retries: int = MAX_RETRIES) -> SessionResult:
    """Run every sample in ``inputs`` (one bytes per sample, all model inputs concatenated, in the
    device layout) and return what the device answered.

    ``timeout_s`` bounds each request (HELLO, each OUTPUT, STATUS) from its first send, retries
    included; ``hello_timeout_s`` overrides it for the boot. ``max_retries`` bounds how often one
    request is asked again (module docstring). ``expect_input_bytes`` is what the host thinks each
    model input takes; it must equal HELLO's sizes. ``log`` receives the raw bytes the device sent.

    Raises DeviceTimeout (no reply by the deadline), LinkError (``max_retries`` exhausted),
    DeviceReset, DeviceError (bad HELLO/OUTPUT/STATUS, refused request, non-zero exit, link
    closed) and InputSizeMismatch; each carries the results so far in ``partial``.
    """
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    result = SessionResult()
    fh, owned, result.transcript_path = _open_log(log)
    rx = _Receiver(link, fh, result)
    s = _Session(link, rx, result, timeout_s, max_retries)
    stage = "HELLO"
    try:
        hello = _hello(s, timeout_s if hello_timeout_s is None else hello_timeout_s)
        _check_sizes(hello, inputs, expect_input_bytes, result)
        v2 = s.idempotent = hello.version >= 2

        for i, sample in enumerate(inputs):
            seq = i & 0xFFFF
            stage = f"OUTPUT for sample {i} (seq {seq})"
            try:
                request = encode_frame(MsgType.INPUT, seq, sample)
            except ProtocolError as e:
                raise s.fail(InputSizeMismatch, f"cannot send INPUT seq {seq}: {e}") from e
            resend = encode_frame(MsgType.RESEND, seq) if v2 else request

            def again(cause, last_nack, request=request, resend=resend):
                # After a NACK (even a damaged one) the device lacks the INPUT; otherwise it may
                # hold the OUTPUT already and a RESEND is the cheaper question.
                if cause == "nack" or (cause == "damaged" and rx.parser.last_rejected_type == MsgType.NACK):
                    return request
                return resend

            frame = s.ask(stage, request, lambda f, seq=seq: f.type == MsgType.OUTPUT and f.seq == seq,
                          again, seq=seq, fatal_nacks=(NackReason.LENGTH_MISMATCH,), timer=s.compute)
            try:
                out = parse_output(frame.payload, hello.output_sizes, hello.profile)
            except ProtocolError as e:
                raise s.fail(DeviceError, f"bad {stage}: {e}") from e
            if hello.tick_hz:  # the device says how long it computed: the INPUT timer never fires sooner
                s.compute.inference(out.ticks / hello.tick_hz)
            result.outputs.append(out.outputs)
            result.ticks.append(out.ticks)
            if out.op_ticks is not None:
                result.op_ticks.append(out.op_ticks)
            result.model_status.append(out.status)

        seq = len(inputs) & 0xFFFF
        stage = f"STATUS (END seq {seq})"
        eot_before = rx.parser.eot_count
        end = encode_frame(MsgType.END, seq)
        frame = s.ask(stage, end, lambda f: f.type == MsgType.STATUS and f.seq == seq,
                      lambda cause, nack: end, seq=seq)
        try:
            status = parse_status(frame.payload)
        except ProtocolError as e:
            raise s.fail(DeviceError, f"bad STATUS: {e}") from e
        result.exit_code, result.n_inferences = status.exit_code, status.n_inferences
        result.device_rejected, result.device_replayed = status.n_rejected, status.n_replayed

        stage = "EOT"
        result.eot = _finish(s, seq, v2, eot_before)
        rx.sync_stats()

        bad = [(i, st) for i, st in enumerate(result.model_status) if st != 0]
        if status.exit_code != 0 or bad:
            what = f"device exited with status {status.exit_code}"
            if bad:
                what += f"; tabula_model_run failed on {len(bad)} sample(s), first: " \
                        f"sample {bad[0][0]} status {bad[0][1]}"
            raise s.fail(DeviceError, what)
        return result
    except LinkClosed as e:
        raise s.fail(DeviceError, f"link closed while waiting for {stage} ({e})") from e
    except LinkTimeout as e:
        raise s.fail(DeviceTimeout, f"could not send to the device while waiting for {stage} ({e})") from e
    finally:
        rx.sync_stats()
        if owned and fh is not None:
            fh.close()


def _hello(s: _Session, boot_s: float) -> Hello:
    """Wait for HELLO; when one arrives damaged (or bytes came but no HELLO), ask for it again with
    a HELLO request (seq 1, 2, ...; the device answers with that seq)."""
    asked = [0]

    def again(cause, last_nack):
        if cause == "silence" and not s.rx.n_received:
            return None  # nothing heard yet: the device may still be booting
        asked[0] += 1
        return encode_frame(MsgType.HELLO, asked[0])

    frame = s.ask("HELLO from the device", None, lambda f: f.type == MsgType.HELLO, again,
                  timeout_s=boot_s)
    if frame is None:  # pragma: no cover - ask returns None only with an eot_mark
        raise s.fail(DeviceTimeout, f"no HELLO from the device within {boot_s:g} s")
    try:
        hello = s.result.hello = parse_hello(frame.payload)
    except ProtocolError as e:
        raise s.fail(DeviceError, f"bad HELLO: {e}") from e
    s.hello_seen = True
    return hello


def _finish(s: _Session, seq: int, v2: bool, eot_before: int) -> bool:
    """After STATUS: a version 2 device gets EXIT (again on a NACK, a damaged frame or silence)
    until its EOT arrives or the link closes; a version 1 device exits by itself. Returns whether
    the EOT was seen. A device that never exits is the runner's to report."""
    rx = s.rx
    try:
        if rx.parser.eot_count > eot_before:
            return True
        if not v2:
            deadline = time.monotonic() + min(s.timeout_s, EOT_WAIT_S)
            while rx.parser.eot_count == eot_before and time.monotonic() < deadline:
                rx.poll()
            return rx.parser.eot_count > eot_before
        exit_frame = encode_frame(MsgType.EXIT, seq)
        s.ask(f"EOT (EXIT seq {seq})", exit_frame, lambda f: False, lambda cause, nack: exit_frame,
              seq=seq, eot_mark=eot_before, timeout_s=min(s.timeout_s, EXIT_WAIT_S))
        return True
    except (LinkClosed, LinkTimeout):
        pass  # the device exits right after EOT; a closed link here is normal
    except SessionError:
        pass  # no EOT after max_retries or the deadline: the runner sees the device still running
    return rx.parser.eot_count > eot_before


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
