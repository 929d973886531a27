"""The tabula result protocol, host side: frames, a streaming parser, payload codecs.

The source of truth is ``docs/protocol.md``; this is a summary.

A frame is ASCII only::

    '#'  TT  SSSS  LLLL  <2*L hex digits of payload>  CCCCCCCC  '\\n'

type (1 byte), sequence number (2 bytes), payload length (2 bytes, at most ``MAX_PAYLOAD``),
payload, CRC32 — all as hex, most significant digit first; senders write lowercase, receivers
accept either case. The CRC is ``zlib.crc32`` over the *binary* bytes
``type | seq (big-endian) | len (big-endian) | payload``. Anything between frames is noise.
A receiver resynchronises on ``#``: a ``#`` inside a frame abandons it and starts a new one;
a non-hex character, an oversize length, a missing ``\\n`` or a CRC mismatch rejects the frame.
After its last frame the device writes one EOT byte (0x04).

Messages (payload integers are little-endian): HELLO (device→host, sizes, tick rate, board
name; host→device, empty: "say HELLO again"), INPUT (host→device, one sample), OUTPUT
(device→host, ticks, model status, outputs), END (host→device), STATUS (device→host, exit code,
inferences run; version 2 adds the device's link counters), NACK (device→host, reason), and in
version 2 RESEND (host→device: "send OUTPUT <seq> again") and EXIT (host→device: "write EOT and
exit"). Version 2 makes every host request idempotent so the host can ask again after a lost or
damaged frame (docs/protocol.md, "Retry").
"""

from __future__ import annotations

import binascii
import re
import struct
import zlib
from collections import Counter
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Sequence

MAX_PAYLOAD = 65535  # the 16-bit length field's limit
"""Largest payload, in bytes, a frame may carry."""
PROTOCOL_VERSION = 2
"""The version this host speaks; HELLO carries the device's."""
SUPPORTED_VERSIONS = (1, 2)
"""Device versions the host can drive. A version 1 device has no RESEND and no EXIT: the host
re-sends INPUT instead (the device recomputes) and the device exits right after STATUS."""
EOT = 0x04
SEQ_UNKNOWN = 0xFFFF
"""The seq a NACK carries when the device could not read the bad frame's seq."""

_HEADER_CHARS = 10  # TT SSSS LLLL
_CRC_CHARS = 8
_NOT_HEX = re.compile(rb"[^0-9a-fA-F]")


class MsgType(IntEnum):
    HELLO = 0x01
    INPUT = 0x02
    OUTPUT = 0x03
    END = 0x04
    STATUS = 0x05
    NACK = 0x06
    RESEND = 0x07  # version 2
    EXIT = 0x08  # version 2
    TENSOR = 0x09  # a debug firmware (HELLO flags bit 1): host asks for one op's output, device answers


class NackReason(IntEnum):
    CRC_MISMATCH = 1
    LENGTH_MISMATCH = 2
    UNKNOWN_TYPE = 3
    FRAME_TOO_LONG = 4
    NOT_AVAILABLE = 5  # RESEND for an OUTPUT the device does not hold (version 2); TENSOR before any INPUT
    OUT_OF_RANGE = 6  # TENSOR for an op the model does not have, or an offset past its output


class ProtocolError(ValueError):
    """A frame or payload that does not follow docs/protocol.md."""


class Frame(NamedTuple):
    type: int  # a MsgType when known, else the raw int
    seq: int
    payload: bytes


def _crc(type_: int, seq: int, payload: bytes) -> int:
    return zlib.crc32(struct.pack(">BHH", type_, seq, len(payload)) + payload)


def encode_frame(type_: int, seq: int, payload: bytes = b"") -> bytes:
    """One frame, ready to write on the link."""
    if not 0 <= type_ <= 0xFF:
        raise ProtocolError(f"frame type {type_} does not fit one byte")
    if not 0 <= seq <= 0xFFFF:
        raise ProtocolError(f"seq {seq} does not fit two bytes")
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"payload of {len(payload)} bytes exceeds the maximum {MAX_PAYLOAD}")
    crc = _crc(type_, seq, payload)
    return b"#%02x%04x%04x%s%08x\n" % (type_, seq, len(payload), binascii.hexlify(payload), crc)


class FrameParser:
    """Streaming frame decoder: ``feed`` it bytes in any chunking, it returns the good frames.

    Never raises on input. Memory is bounded: a frame announcing more than ``max_payload`` bytes is
    dropped as soon as its header is read. Rejections are counted in ``rejected`` by reason:
    ``abandoned`` (a ``#`` arrived mid-frame), ``non-hex``, ``too-long``, ``no-newline``, ``crc``.
    A stray ``#`` in noise counts as a rejected candidate frame too. ``eot_count`` counts EOT bytes
    seen outside frames. ``last_rejected_type`` is the type field of the last rejected frame when
    its two digits were readable (a hint only: the CRC did not vouch for it), else None.
    """

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self.rejected: Counter[str] = Counter()
        self.eot_count = 0
        self.n_frames = 0
        self.last_rejected_type: int | None = None
        self._body: bytearray | None = None  # chars after '#', None while hunting for '#'
        self._need = 0  # chars still missing from the frame (header first, then the rest)
        self._len = -1  # payload length once the header is read

    @property
    def n_rejected(self) -> int:
        return sum(self.rejected.values())

    @property
    def in_frame(self) -> bool:
        return self._body is not None

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        pos, n = 0, len(data)
        while pos < n:
            if self._body is None:
                hash_at = data.find(b"#", pos)
                stop = n if hash_at < 0 else hash_at
                self.eot_count += data.count(EOT, pos, stop)
                if hash_at < 0:
                    return frames
                self._start()
                pos = hash_at + 1
                continue
            pos = self._take(data, pos, frames)
        return frames

    def _start(self) -> None:
        self._body = bytearray()
        self._need = _HEADER_CHARS
        self._len = -1

    def _reject(self, reason: str) -> None:
        self.rejected[reason] += 1
        body = self._body
        self.last_rejected_type = int(body[:2], 16) if body is not None and len(body) >= 2 else None
        self._body = None

    def _take(self, data: bytes, pos: int, frames: list[Frame]) -> int:
        """Consume frame chars from data[pos:]; return the new position."""
        assert self._body is not None
        if self._len >= 0 and self._need == 1:  # only the newline is missing
            if data[pos] == 0x0A:
                self._finish(frames)
                return pos + 1
            self._reject("abandoned" if data[pos] == 0x23 else "no-newline")
            return pos  # re-scan this byte while hunting ('#' starts the next frame)
        want = self._need - (1 if self._len >= 0 else 0)  # hex chars still missing
        chunk = data[pos : pos + want]
        bad = _NOT_HEX.search(chunk)
        if bad is not None:
            self._reject("abandoned" if chunk[bad.start()] == 0x23 else "non-hex")
            return pos + bad.start()
        self._body += chunk
        self._need -= len(chunk)
        pos += len(chunk)
        if self._len < 0 and self._need == 0:
            self._len = int(self._body[6:10], 16)
            if self._len > self.max_payload:
                self._reject("too-long")
                return pos
            self._need = 2 * self._len + _CRC_CHARS + 1
        return pos

    def _finish(self, frames: list[Frame]) -> None:
        body = bytes(self._body or b"")
        self._body = None
        type_, seq = int(body[0:2], 16), int(body[2:6], 16)
        payload = binascii.unhexlify(body[_HEADER_CHARS:-_CRC_CHARS])
        if int(body[-_CRC_CHARS:], 16) != _crc(type_, seq, payload):
            self.rejected["crc"] += 1
            self.last_rejected_type = type_
            return
        self.n_frames += 1
        try:
            type_ = MsgType(type_)
        except ValueError:
            pass
        frames.append(Frame(type_, seq, payload))


# ---- payload codecs -----------------------------------------------------------------------


@dataclass(frozen=True)
class Hello:
    version: int
    input_sizes: tuple[int, ...]
    output_sizes: tuple[int, ...]
    tick_hz: int
    board_name: str
    flags: int = 0  # bit 0 (HELLO_PROFILE): every OUTPUT carries per-op ticks; bit 1 (HELLO_DEBUG): TENSOR

    @property
    def profile(self) -> bool:
        return bool(self.flags & HELLO_PROFILE)

    @property
    def debug(self) -> bool:
        """The firmware answers TENSOR requests (a ``debug=1`` build)."""
        return bool(self.flags & HELLO_DEBUG)


@dataclass(frozen=True)
class Output:
    ticks: int
    status: int
    outputs: list[bytes]
    op_ticks: tuple[int, ...] | None = None  # profiling firmware: ticks of each op of that run


@dataclass(frozen=True)
class Status:
    exit_code: int
    n_inferences: int
    n_rejected: int | None = None  # version 2: frames the device rejected as damaged (NACKed)
    n_replayed: int | None = None  # version 2: OUTPUTs replayed for a repeated INPUT or RESEND


def _need(payload: bytes, size: int, what: str, exact: bool = True) -> None:
    if len(payload) < size or (exact and len(payload) != size):
        rel = "exactly" if exact else "at least"
        raise ProtocolError(f"{what} payload must be {rel} {size} bytes, got {len(payload)}")


#: HELLO flags bit 0: the firmware profiles (codegen ``profile``): OUTPUT ends with u32 n_ops and n_ops u32 ticks.
HELLO_PROFILE = 0x01
#: HELLO flags bit 1: the firmware answers TENSOR requests (codegen ``debug``): each op's output on demand.
HELLO_DEBUG = 0x02
#: Bytes of a TENSOR answer before the data: u16 op, u32 offset, u32 total bytes, i32 status.
TENSOR_HEAD = 14


def encode_hello(input_sizes: Sequence[int], output_sizes: Sequence[int], tick_hz: int,
                 board_name: str, version: int = PROTOCOL_VERSION, flags: int = 0) -> bytes:
    head = struct.pack("<BBBB", version, len(input_sizes), len(output_sizes), flags)
    sizes = struct.pack(f"<{len(input_sizes) + len(output_sizes)}I", *input_sizes, *output_sizes)
    return head + sizes + struct.pack("<I", tick_hz) + board_name.encode("ascii")


def parse_hello(payload: bytes) -> Hello:
    _need(payload, 4, "HELLO", exact=False)
    version, n_in, n_out, flags = struct.unpack_from("<BBBB", payload)
    if version not in SUPPORTED_VERSIONS:
        raise ProtocolError(f"device speaks protocol version {version}, host speaks "
                            f"{', '.join(map(str, SUPPORTED_VERSIONS))}: rebuild the firmware "
                            f"from this checkout")
    fixed = 4 + 4 * (n_in + n_out) + 4
    _need(payload, fixed, f"HELLO ({n_in} inputs, {n_out} outputs)", exact=False)
    sizes = struct.unpack_from(f"<{n_in + n_out}I", payload, 4)
    (tick_hz,) = struct.unpack_from("<I", payload, fixed - 4)
    name = payload[fixed:].decode("ascii", errors="backslashreplace")
    return Hello(version, tuple(sizes[:n_in]), tuple(sizes[n_in:]), tick_hz, name, flags)


def encode_input(tensors: Sequence[bytes], sizes: Sequence[int] | None = None) -> bytes:
    """One INPUT payload: every model input's bytes, in input order."""
    if sizes is not None:
        if len(tensors) != len(sizes):
            raise ProtocolError(f"model has {len(sizes)} inputs, got {len(tensors)} tensors")
        for i, (t, s) in enumerate(zip(tensors, sizes)):
            if len(t) != s:
                raise ProtocolError(f"input {i} is {len(t)} bytes, the device expects {s}")
    payload = b"".join(tensors)
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"INPUT of {len(payload)} bytes exceeds the frame maximum {MAX_PAYLOAD}")
    return payload


def encode_output(ticks: int, status: int, outputs: Sequence[bytes], op_ticks: Sequence[int] | None = None) -> bytes:
    """OUTPUT payload; ``op_ticks`` (a profiling firmware's) appends u32 n_ops and the n_ops ticks."""
    tail = b"" if op_ticks is None else struct.pack(f"<I{len(op_ticks)}I", len(op_ticks), *op_ticks)
    return struct.pack("<Ii", ticks, status) + b"".join(outputs) + tail


def parse_output(payload: bytes, output_sizes: Sequence[int], profile: bool = False) -> Output:
    """An OUTPUT payload of a model with outputs of ``output_sizes`` bytes; ``profile`` (the HELLO
    flag): then u32 n_ops and n_ops u32 per-op ticks follow.  Raises ProtocolError on any other size."""
    fixed = 8 + sum(output_sizes)
    if not profile:
        _need(payload, fixed, f"OUTPUT (outputs of {list(output_sizes)} bytes)")
    else:
        _need(payload, fixed + 4, f"profiled OUTPUT (outputs of {list(output_sizes)} bytes, n_ops)", exact=False)
        (n_ops,) = struct.unpack_from("<I", payload, fixed)
        _need(payload, fixed + 4 + 4 * n_ops, f"profiled OUTPUT (outputs of {list(output_sizes)} bytes, {n_ops} ops)")
    ticks, status = struct.unpack_from("<Ii", payload)
    outputs, at = [], 8
    for size in output_sizes:
        outputs.append(bytes(payload[at : at + size]))
        at += size
    op_ticks = tuple(struct.unpack_from(f"<{n_ops}I", payload, fixed + 4)) if profile else None
    return Output(ticks, status, outputs, op_ticks)


def encode_status(exit_code: int, n_inferences: int, n_rejected: int | None = None,
                  n_replayed: int | None = None) -> bytes:
    """STATUS payload: version 1 (8 bytes) without the counters, version 2 (16 bytes) with them."""
    if n_rejected is None and n_replayed is None:
        return struct.pack("<iI", exit_code, n_inferences)
    return struct.pack("<iIII", exit_code, n_inferences, n_rejected or 0, n_replayed or 0)


def parse_status(payload: bytes) -> Status:
    """A STATUS payload of either version: 8 bytes (version 1) or 16 bytes (version 2)."""
    if len(payload) == 16:
        return Status(*struct.unpack("<iIII", payload))
    if len(payload) != 8:
        raise ProtocolError(f"STATUS payload must be 8 bytes (version 1) or 16 bytes (version 2), "
                            f"got {len(payload)}")
    return Status(*struct.unpack("<iI", payload))


def encode_nack(reason: int) -> bytes:
    return struct.pack("<B", reason)


def parse_nack(payload: bytes) -> NackReason | int:
    _need(payload, 1, "NACK")
    try:
        return NackReason(payload[0])
    except ValueError:
        return payload[0]


@dataclass(frozen=True)
class Tensor:
    """A TENSOR answer: ``data`` is the op's output bytes from ``offset`` (a chunk of ``total``)."""
    op: int
    offset: int
    total: int
    status: int
    data: bytes


def encode_tensor_request(op: int, offset: int = 0) -> bytes:
    """TENSOR request payload: u16 op index (tabula_model_run's order), u32 byte offset into its output."""
    if not 0 <= op <= 0xFFFF or not 0 <= offset <= 0xFFFFFFFF:
        raise ProtocolError(f"TENSOR request for op {op} at offset {offset} does not fit u16 / u32")
    return struct.pack("<HI", op, offset)


def encode_tensor(op: int, offset: int, total: int, status: int, data: bytes) -> bytes:
    """TENSOR answer payload (what a debug firmware sends)."""
    return struct.pack("<HIIi", op, offset, total, status) + bytes(data)


def parse_tensor(payload: bytes) -> Tensor:
    """A TENSOR answer.  Raises ProtocolError when it is shorter than its head or its data runs past
    the output's total size."""
    _need(payload, TENSOR_HEAD, "TENSOR", exact=False)
    op, offset, total, status = struct.unpack_from("<HIIi", payload)
    data = bytes(payload[TENSOR_HEAD:])
    if offset + len(data) > total:
        raise ProtocolError(f"TENSOR for op {op}: {len(data)} bytes at offset {offset} run past its {total} bytes")
    return Tensor(op, offset, total, status, data)
