"""TENSOR requests (docs/protocol.md, "Intermediate tensors") against a fake debug device over pipes: an op's
output larger than one frame comes in chunks, a damaged answer is asked again and gives the same bytes, the
walk stops where the visitor says, a device whose HELLO lacks the debug flag is refused before any INPUT,
and the codecs round-trip and refuse a chunk past the output's end."""
from __future__ import annotations

import os
import struct
import threading

import pytest

from tabula.deploy.link import PipeLink
from tabula.deploy.protocol import (
    HELLO_DEBUG,
    FrameParser,
    MsgType,
    NackReason,
    ProtocolError,
    encode_frame,
    encode_hello,
    encode_nack,
    encode_output,
    encode_status,
    encode_tensor,
    encode_tensor_request,
    parse_hello,
    parse_tensor,
)
from tabula.deploy.session import DebugUnavailable, run_tensor_session

SIZES = [5, 100_000, 7]   # the outputs of the fake model's three ops: the second needs two frames
CHUNK = 65535 - 14


def op_output(op: int, sample: bytes) -> bytes:
    return bytes((sample[0] + op + i) & 0xFF for i in range(SIZES[op]))


class DebugDevice(threading.Thread):
    """main.c's debug loop in Python: INPUT -> OUTPUT (and keep the input), TENSOR (op, offset) -> the op's
    output from offset, END -> STATUS, EXIT -> EOT.  ``flags``: HELLO's; ``damage_first_tensor``: the
    first TENSOR answer arrives with a flipped digit."""

    def __init__(self, flags=HELLO_DEBUG, damage_first_tensor=False):
        super().__init__(daemon=True)
        self.h2d_r, self.h2d_w = os.pipe()
        self.d2h_r, self.d2h_w = os.pipe()
        self.flags, self.damage = flags, damage_first_tensor
        self.asked: list[tuple[int, int]] = []

    def send(self, data: bytes) -> None:
        os.write(self.d2h_w, data)

    def run(self):
        try:
            self._run()
        except OSError:
            pass
        finally:
            for fd in (self.h2d_r, self.d2h_w):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _run(self):
        self.send(encode_frame(MsgType.HELLO, 0, encode_hello([4], [3], 1000, "fake", flags=self.flags)))
        parser, sample = FrameParser(), None
        while True:
            data = os.read(self.h2d_r, 65536)
            if not data:
                return
            for f in parser.feed(data):
                if f.type == MsgType.INPUT:
                    sample = f.payload
                    self.send(encode_frame(MsgType.OUTPUT, f.seq, encode_output(10, 0, [sample[:3]])))
                elif f.type == MsgType.TENSOR and self.flags & HELLO_DEBUG:
                    op, offset = struct.unpack("<HI", f.payload)
                    self.asked.append((op, offset))
                    if op >= len(SIZES):
                        self.send(encode_frame(MsgType.NACK, f.seq, encode_nack(NackReason.OUT_OF_RANGE)))
                        continue
                    out = op_output(op, sample)
                    frame = encode_frame(MsgType.TENSOR, f.seq, encode_tensor(op, offset, len(out), 0,
                                                                               out[offset:offset + CHUNK]))
                    if self.damage:
                        self.damage = False
                        bad = bytearray(frame)
                        bad[40] ^= 0x01
                        frame = bytes(bad)
                    self.send(frame)
                elif f.type == MsgType.END:
                    self.send(encode_frame(MsgType.STATUS, f.seq, encode_status(0, 1, 0, 0)))
                elif f.type == MsgType.EXIT:
                    self.send(b"\x04")
                    return
                else:
                    self.send(encode_frame(MsgType.NACK, f.seq, encode_nack(NackReason.UNKNOWN_TYPE)))


def _session(dev, visit, n_ops=len(SIZES)):
    dev.start()
    link = PipeLink(dev.h2d_w, dev.d2h_r)
    try:
        return run_tensor_session(link, b"\x07abc", n_ops, visit, timeout_s=20)
    finally:
        link.close()
        dev.join(5)


def test_tensors_come_in_chunks_and_a_damaged_answer_is_asked_again():
    dev = DebugDevice(damage_first_tensor=True)
    seen = {}
    r = _session(dev, lambda op, data, status: seen.setdefault(op, (data, status)) is not None)
    assert {op: d for op, (d, _) in seen.items()} == {op: op_output(op, b"\x07abc") for op in range(3)}
    assert dev.asked == [(0, 0), (0, 0), (1, 0), (1, CHUNK), (2, 0)]   # op 0 asked twice: its answer was damaged
    assert r.outputs == [[b"\x07ab"]] and r.exit_code == 0 and r.eot
    assert r.retries == {"damaged": 1}


def test_the_walk_stops_where_the_visitor_says():
    dev = DebugDevice()
    r = _session(dev, lambda op, data, status: op < 1)
    assert [a[0] for a in dev.asked] == [0, 1, 1] and r.exit_code == 0


def test_a_device_without_debug_is_refused_before_any_input():
    dev = DebugDevice(flags=0)
    with pytest.raises(DebugUnavailable, match="debug=1"):
        _session(dev, lambda *a: True)
    assert dev.asked == []


def test_tensor_codecs():
    assert struct.unpack("<HI", encode_tensor_request(3, 70000)) == (3, 70000)
    t = parse_tensor(encode_tensor(3, 10, 12, -1, b"ab"))
    assert (t.op, t.offset, t.total, t.status, t.data) == (3, 10, 12, -1, b"ab")
    with pytest.raises(ProtocolError, match="run past"):
        parse_tensor(encode_tensor(3, 11, 12, 0, b"ab"))
    with pytest.raises(ProtocolError):
        encode_tensor_request(70000)
    assert parse_hello(encode_hello([1], [1], 0, "b", flags=HELLO_DEBUG)).debug
    assert not parse_hello(encode_hello([1], [1], 0, "b", flags=1)).debug
