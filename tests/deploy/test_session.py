"""run_session against a fake device: a Python thread speaking docs/protocol.md over a TCP socket
(host side: pyserial ``socket://``) or a pair of pipes (host side: PipeLink)."""

import os
import socket
import subprocess
import sys
import threading
import time
import types

import pytest

from tabula.deploy import run_on_board
from tabula.deploy.link import PipeLink, SerialLink
from tabula.deploy.protocol import (
    SEQ_UNKNOWN,
    FrameParser,
    MsgType,
    NackReason,
    encode_frame,
    encode_hello,
    encode_nack,
    encode_output,
    encode_status,
)
from tabula.deploy.runners import available_runners, get_runner
from tabula.deploy.runners._process import RunnerError
from tabula.deploy.runners.qemu import qemu_command
from tabula.deploy.faults import FaultSpec, FaultyLink, summarize
from tabula.deploy.session import (
    RETRY_FIRST_S,
    RETRY_MIN_S,
    DeviceError,
    DeviceTimeout,
    InputSizeMismatch,
    LinkError,
    _RetryTimer,
    run_session,
)

IN_SIZES, OUT_SIZES = [6, 2], [3, 1]  # two inputs, two outputs
SAMPLES = [bytes([i] * 8) for i in range(5)]


def model(sample: bytes) -> list[bytes]:
    """The fake model: output 0 = first three bytes + 1, output 1 = byte sum mod 256."""
    return [bytes((b + 1) & 0xFF for b in sample[:3]), bytes([sum(sample) & 0xFF])]


def expected(samples):
    return [model(s) for s in samples]


class FakeDevice(threading.Thread):
    """The device side of the protocol, with knobs for misbehaviour.

    ``version`` 2 (default) behaves like firmware_templates/runtime/main.c: a repeated INPUT (same
    seq and payload) or a RESEND replays the stored OUTPUT, a HELLO request repeats HELLO with its
    seq, END answers STATUS with the link counters, EXIT writes EOT and ends. ``version`` 1 answers
    END with STATUS + EOT and ends, and ignores what it does not know.

    Link trouble, each applied the first time only: ``damage_output``/``lose_output``: seqs whose
    OUTPUT arrives with one flipped digit / never; ``lose_input``: seqs whose INPUT is not seen;
    ``damage_hello``, ``damage_status``: the first HELLO / STATUS arrives damaged; ``lose_eot``:
    every EOT is lost and the device parks (a board: the link stays open).

Speed: ``slow`` (seq -> seconds) and ``slow_all`` make an inference take that long, during which the
device reads nothing (like the firmware: requests wait in the UART's buffer)."""

    def __init__(self, read, write, close, *, noise=False, nack_first=0, silent_after=None,
                 close_after=None, exit_code=0, model_status=0, duplicate=False, hello=True,
                 input_sizes=IN_SIZES, version=2, damage_output=(), lose_output=(), lose_input=(),
                 damage_hello=False, damage_status=False, nack_reason=NackReason.CRC_MISMATCH,
                 lose_eot=False, slow=None, slow_all=0.0):
        super().__init__(daemon=True)
        self._read, self._write, self._close = read, write, close
        self.noise, self.nack_first, self.duplicate, self.hello = noise, nack_first, duplicate, hello
        self.silent_after, self.close_after = silent_after, close_after
        self.exit_code, self.model_status, self.input_sizes = exit_code, model_status, input_sizes
        self.version, self.nack_reason = version, nack_reason
        self.damage_output, self.lose_output = set(damage_output), set(lose_output)
        self.lose_input, self.damage_hello, self.damage_status = set(lose_input), damage_hello, damage_status
        self.lose_eot = lose_eot
        self.slow, self.slow_all = dict(slow or {}), slow_all   # seconds an inference takes (not reading)
        self.received: list[tuple[int, int]] = []  # (type, seq) of every frame the device got
        self.n_inferences = self.n_replayed = 0
        self.stop = threading.Event()

    def send(self, data: bytes) -> None:
        if self.noise:
            data = b"\r\nprintf noise # x=1\x00\xff##" + data + b"#0300"  # + a truncated frame
        self._write(data)

    def run(self):
        try:
            self._run()
        except OSError:
            pass  # the host closed its end
        finally:
            self._close()

    def hello_frame(self, seq: int) -> bytes:
        return encode_frame(MsgType.HELLO, seq, encode_hello(self.input_sizes, OUT_SIZES, 1000,
                                                             "fake-m55", version=self.version))

    @staticmethod
    def damaged(frame: bytes) -> bytes:
        bad = bytearray(frame)
        bad[13] ^= 0x01   # a digit of the payload: the CRC no longer matches
        return bytes(bad)

    def _run(self):
        self._write(b"\x1b[0mCorstone-300 boot banner\r\nheap ok\n")
        if self.hello:
            hello = self.hello_frame(0)
            self.send(self.damaged(hello) if self.damage_hello else hello)
        parser, nacks, last = FrameParser(), 0, None   # last: (seq, payload, OUTPUT frame)
        while not self.stop.is_set():
            data = self._read()
            if not data:
                return
            rejected = parser.n_rejected
            frames = parser.feed(data)
            for _ in range(parser.n_rejected - rejected):   # like the firmware: NACK damage
                self.send(encode_frame(MsgType.NACK, SEQ_UNKNOWN, encode_nack(NackReason.CRC_MISMATCH)))
            for f in frames:
                self.received.append((f.type, f.seq))
                if f.type == MsgType.INPUT:
                    if f.seq in self.lose_input:
                        self.lose_input.discard(f.seq)
                        continue
                    if nacks < self.nack_first:
                        nacks += 1
                        self.send(encode_frame(MsgType.NACK, f.seq, encode_nack(self.nack_reason)))
                        continue
                    if self.version >= 2 and last is not None and last[:2] == (f.seq, f.payload):
                        self.n_replayed += 1
                        self.send(last[2])
                        continue
                    if self.silent_after is not None and self.n_inferences >= self.silent_after:
                        continue
                    if self.close_after is not None and self.n_inferences >= self.close_after:
                        return
                    out = encode_frame(MsgType.OUTPUT, f.seq, encode_output(
                        100 + f.seq, self.model_status, model(f.payload)))
                    last = (f.seq, f.payload, out)
                    self.n_inferences += 1
                    time.sleep(self.slow.get(f.seq, self.slow_all))
                    if f.seq in self.lose_output:
                        self.lose_output.discard(f.seq)
                    elif f.seq in self.damage_output:
                        self.damage_output.discard(f.seq)
                        self.send(self.damaged(out))
                    elif self.duplicate and f.seq > 0:
                        stale = encode_frame(MsgType.OUTPUT, f.seq - 1, encode_output(0, 0, [b"zzz", b"z"]))
                        self.send(stale + out + out)
                    else:
                        self.send(out)
                elif self.version < 2:
                    if f.type == MsgType.END:
                        self.send(encode_frame(MsgType.STATUS, f.seq,
                                               encode_status(self.exit_code, self.n_inferences)))
                        self._write(b"\x04")
                        return
                elif f.type == MsgType.RESEND:
                    if last is not None and last[0] == f.seq:
                        self.n_replayed += 1
                        self.send(last[2])
                    else:
                        self.send(encode_frame(MsgType.NACK, f.seq, encode_nack(NackReason.NOT_AVAILABLE)))
                elif f.type == MsgType.HELLO:
                    self.send(self.hello_frame(f.seq))
                elif f.type == MsgType.END:
                    status = encode_frame(MsgType.STATUS, f.seq, encode_status(
                        self.exit_code, self.n_inferences, parser.n_rejected, self.n_replayed))
                    self.send(self.damaged(status) if self.damage_status else status)
                    self.damage_status = False
                elif f.type == MsgType.EXIT:
                    if self.lose_eot:
                        continue
                    self._write(b"\x04")
                    return


@pytest.fixture(params=["socket", "pipe"])
def transport(request):
    """Yields make(**device_knobs) -> (host Link, FakeDevice); cleans both up."""
    made = []

    def make(**knobs):
        if request.param == "socket":
            server = socket.create_server(("127.0.0.1", 0))
            port = server.getsockname()[1]
            link = SerialLink.open(f"socket://127.0.0.1:{port}")
            conn, _ = server.accept()
            server.close()
            conn.settimeout(0.05)

            def read():
                while True:
                    try:
                        return conn.recv(4096)
                    except socket.timeout:
                        if dev.stop.is_set():
                            return b""

            def close():
                conn.close()

            dev = FakeDevice(read, conn.sendall, close, **knobs)
        else:
            h2d_r, h2d_w = os.pipe()
            d2h_r, d2h_w = os.pipe()
            link = PipeLink(h2d_w, d2h_r)

            def write(data):
                os.write(d2h_w, data)

            def close():
                for fd in (h2d_r, d2h_w):
                    try:
                        os.close(fd)
                    except OSError:
                        pass

            dev = FakeDevice(lambda: os.read(h2d_r, 4096), write, close, **knobs)
        dev.start()
        made.append((link, dev))
        return link, dev

    yield make
    for link, dev in made:
        dev.stop.set()
        link.close()
        dev.join(2)
        assert not dev.is_alive()


def test_good_device(transport, tmp_path):
    link, dev = transport()
    log = tmp_path / "uart.log"
    r = run_session(link, SAMPLES, timeout_s=2, expect_input_bytes=IN_SIZES, log=log)
    assert (r.board_name, r.tick_hz, r.hello.input_sizes, r.hello.output_sizes) == (
        "fake-m55", 1000, (6, 2), (3, 1))
    assert r.outputs == expected(SAMPLES)
    assert r.outputs[2] == [b"\x03\x03\x03", b"\x10"]
    assert r.ticks == [100, 101, 102, 103, 104]
    assert r.model_status == [0] * 5
    assert (r.exit_code, r.n_inferences, r.eot) == (0, 5, True)
    assert (r.n_rejected_frames, r.n_retries, r.n_ignored_frames) == (0, 0, 0)
    assert r.transcript_path == log
    assert log.read_bytes().startswith(b"\x1b[0mCorstone-300 boot banner\r\nheap ok\n#01")
    assert log.read_bytes().endswith(b"\n\x04")
    assert dev.received == [(MsgType.INPUT, i) for i in range(5)] + [(MsgType.END, 5), (MsgType.EXIT, 5)]
    assert r.link_stats() == {
        "protocol_version": 2, "frames_sent": 7, "frames_received": 7,   # HELLO, 5 OUTPUT, STATUS
        "damaged_detected_by_host": 0, "damaged_detected_by_device": 0, "nacks_received": 0,
        "retries": 0, "retries_by_cause": {}, "spurious_retries": 0, "outputs_replayed": 0, "ignored_frames": 0}


def test_garbage_banners_duplicates_and_stale_frames_are_ignored(transport):
    link, _ = transport(noise=True, duplicate=True)
    r = run_session(link, SAMPLES, timeout_s=2)
    assert r.outputs == expected(SAMPLES)
    assert r.ticks == [100, 101, 102, 103, 104]
    assert r.exit_code == 0 and r.eot
    # samples 1..4: one stale + one duplicate each; a noise '#' read apart from the frame after it
    # may make the host ask again (RESEND): its replay is one more ignored duplicate
    assert r.n_ignored_frames == 4 * 2 + r.device_replayed
    assert r.n_retries == r.retries.get("damaged", 0) == r.device_replayed
    # 7 noisy sends (HELLO, 5 OUTPUTs, STATUS), each: '# x=1' non-hex, '##' two abandoned, the
    # trailing '#0300' non-hex (cut by the next send's '\r' or by the EOT)
    assert r.rejected == {"abandoned": 14, "non-hex": 14}
    assert r.n_rejected_frames == 28


def test_nack_resends_then_succeeds(transport):
    link, dev = transport(nack_first=2)
    r = run_session(link, SAMPLES[:2], timeout_s=2)
    assert r.outputs == expected(SAMPLES[:2]) and r.n_retries == r.n_resends == 2
    assert r.retries == {"nack": 2} and r.n_nacks == 2
    assert dev.received[:3] == [(MsgType.INPUT, 0)] * 3


def test_nack_forever_gives_up_after_max_retries(transport):
    link, dev = transport(nack_first=100)
    with pytest.raises(LinkError, match=r"^gave up on OUTPUT for sample 0 \(seq 0\) after 3 retries in "
                                        r"[\d.]+ s \(asked again 3 times: 3 NACKs\) \(last NACK: crc "
                                        r"mismatch\): the link loses or damages too many frames") as e:
        run_session(link, SAMPLES, timeout_s=2, max_retries=3)
    assert e.value.partial.n_retries == 3 and e.value.partial.outputs == []
    assert dev.received == [(MsgType.INPUT, 0)] * 4
    assert isinstance(e.value, DeviceError) and e.value.exit_code == 1


def test_length_nack_ends_the_session_at_once(transport):
    """A LENGTH NACK comes from a frame whose CRC matched: asking again cannot help."""
    link, dev = transport(nack_first=100, nack_reason=NackReason.LENGTH_MISMATCH)
    with pytest.raises(DeviceError, match=r"^device refused the request for OUTPUT for sample 0 "
                                          r"\(seq 0\) \(NACK: length mismatch\); received"):
        run_session(link, SAMPLES, timeout_s=2)
    assert dev.received == [(MsgType.INPUT, 0)]


# ---- the retry protocol: a lost or damaged frame costs a retry, not the run -----------------

def test_damaged_output_is_asked_again_at_once(transport):
    """The issue's case: one corrupted byte in an OUTPUT. The host RESENDs at once (no timeout),
    the device replays the stored OUTPUT (no recompute), the run completes bit-exact."""
    link, dev = transport(damage_output={2})
    t0 = time.monotonic()
    r = run_session(link, SAMPLES, timeout_s=30)
    assert time.monotonic() - t0 < 2                       # not the 30 s timeout
    assert r.outputs == expected(SAMPLES) and r.ticks == [100, 101, 102, 103, 104]
    assert dev.received[2:5] == [(MsgType.INPUT, 2), (MsgType.RESEND, 2), (MsgType.INPUT, 3)]
    assert (r.n_retries, r.retries, r.n_rejected_frames, r.rejected) == (1, {"damaged": 1}, 1, {"crc": 1})
    assert (r.n_inferences, r.device_replayed) == (5, 1)   # the device ran each sample once


def test_lost_output_is_asked_again_after_one_retransmission_timeout(transport):
    link, dev = transport(lose_output={0})
    t0 = time.monotonic()
    r = run_session(link, SAMPLES[:2], timeout_s=30)
    assert RETRY_FIRST_S - 0.1 < time.monotonic() - t0 < RETRY_FIRST_S + 2   # not 30 s
    assert r.outputs == expected(SAMPLES[:2]) and r.retries == {"silence": 1}
    assert dev.received[:2] == [(MsgType.INPUT, 0), (MsgType.RESEND, 0)]
    assert (r.n_inferences, r.device_replayed) == (2, 1)
    assert r.n_spurious_retries == 0          # the link really lost that OUTPUT: the retry stays counted


@pytest.mark.parametrize("transport", ["pipe"], indirect=True)   # timing, not transport: one is enough
def test_a_slow_inference_is_not_a_retry(transport):
    """Sample 3 takes 1.6 s (a loaded emulator, a stall) while the others take milliseconds: the host
    asks again after its 1 s timeout, the device answers that RESEND too once it has computed, and the
    second copy shows the retry was not needed: no retry counted, one spurious, outputs exact."""
    link, dev = transport(slow={3: 1.6})
    r = run_session(link, SAMPLES, timeout_s=30)
    assert r.outputs == expected(SAMPLES) and r.exit_code == 0
    assert dev.received[3:5] == [(MsgType.INPUT, 3), (MsgType.RESEND, 3)]   # it did ask again
    assert (r.n_retries, r.retries, r.n_spurious_retries) == (0, {}, 1)
    assert (r.n_inferences, r.device_replayed) == (5, 1)
    assert r.link_stats()["spurious_retries"] == 1 and r.link_stats()["retries"] == 0


@pytest.mark.parametrize("transport", ["pipe"], indirect=True)
def test_the_input_timer_learns_a_long_inference(transport, monkeypatch):
    """Every inference takes 0.6 s, three times the first timeout and twice the cap (scaled down from
    3 s / 4 s): the first sample's silences turn out spurious and teach the INPUT timer the true round
    trip, so the later samples are never asked again; before, every sample cost a retry."""
    import tabula.deploy.session as session

    monkeypatch.setattr(session, "RETRY_FIRST_S", 0.2)
    monkeypatch.setattr(session, "RETRY_MIN_S", 0.1)
    monkeypatch.setattr(session, "RETRY_MAX_S", 0.3)
    link, dev = transport(slow_all=0.6)
    r = run_session(link, SAMPLES[:4], timeout_s=30)
    assert r.outputs == expected(SAMPLES[:4])
    resent = [seq for t, seq in dev.received if t == MsgType.RESEND]
    assert resent and set(resent) == {0}                 # only the first sample, before anything was measured
    assert r.n_retries == 0 and r.n_spurious_retries == len(resent)
    assert r.n_inferences == 4


def test_lost_input_is_sent_again_after_the_device_says_it_has_no_output(transport):
    link, dev = transport(lose_input={1})
    r = run_session(link, SAMPLES[:3], timeout_s=30)
    assert r.outputs == expected(SAMPLES[:3])
    assert dev.received[1:4] == [(MsgType.INPUT, 1), (MsgType.RESEND, 1), (MsgType.INPUT, 1)]
    assert r.retries == {"silence": 1, "nack": 1} and r.n_nacks == 1
    assert (r.n_inferences, r.device_replayed) == (3, 0)


def test_damaged_hello_and_status_are_asked_again(transport):
    """HELLO is asked for again with a HELLO request (its answer carries the request's seq, so it
    is never taken for a reset); END is simply sent again."""
    link, dev = transport(damage_hello=True, damage_status=True)
    r = run_session(link, SAMPLES[:2], timeout_s=30)
    assert r.outputs == expected(SAMPLES[:2]) and (r.exit_code, r.eot) == (0, True)
    assert dev.received == [(MsgType.HELLO, 1), (MsgType.INPUT, 0), (MsgType.INPUT, 1),
                            (MsgType.END, 2), (MsgType.END, 2), (MsgType.EXIT, 2)]
    assert r.retries == {"damaged": 2} and r.n_rejected_frames == 2


def test_lost_eot_ends_the_session_in_bounded_time(transport):
    """A parked board whose EOT never arrives: EXIT is sent again on silence, then the session
    ends with what it has (the runner reports a device that did not exit)."""
    link, dev = transport(lose_eot=True)
    t0 = time.monotonic()
    r = run_session(link, SAMPLES[:2], timeout_s=2.5)
    assert time.monotonic() - t0 < 5
    assert r.outputs == expected(SAMPLES[:2]) and (r.exit_code, r.eot) == (0, False)
    assert dev.received.count((MsgType.EXIT, 2)) >= 2 and r.retries == {"silence": r.n_retries}


def test_version_1_device_gets_input_again_and_exits_by_itself(transport):
    """A version 1 device knows neither RESEND nor EXIT: the host asks with INPUT (the device
    recomputes, same answer) and waits for the EOT it writes after STATUS."""
    link, dev = transport(version=1, damage_output={1})
    r = run_session(link, SAMPLES[:3], timeout_s=30)
    assert r.hello.version == 1 and r.outputs == expected(SAMPLES[:3]) and r.eot
    assert dev.received == [(MsgType.INPUT, 0), (MsgType.INPUT, 1), (MsgType.INPUT, 1),
                            (MsgType.INPUT, 2), (MsgType.END, 3)]
    assert (r.n_inferences, r.device_rejected, r.device_replayed) == (4, None, None)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fake_device_through_a_faulty_link(seed):
    """Flipped, dropped, duplicated and delayed bytes both ways at 1 % per byte: every OUTPUT is
    the model's, and the damaged frames were detected by one side (or lost and asked for again)."""
    h2d_r, h2d_w = os.pipe()
    d2h_r, d2h_w = os.pipe()
    dev = FakeDevice(lambda: os.read(h2d_r, 4096), lambda d: os.write(d2h_w, d),
                     lambda: [os.close(fd) for fd in (h2d_r, d2h_w)])
    dev.start()
    link = FaultyLink(PipeLink(h2d_w, d2h_r), FaultSpec(rate=0.01, seed=seed))
    samples = [bytes([i, 255 - i]) * 4 for i in range(40)]
    try:
        r = run_session(link, samples, timeout_s=30)
    finally:
        link.close()
        dev.stop.set()
        dev.join(5)
    assert r.outputs == expected(samples) and r.exit_code == 0
    assert r.n_inferences == dev.n_inferences == 40        # replays, never recomputes
    injected = summarize(link.stats)
    assert injected["frames_damaged"] > 5                  # the link really was bad
    assert r.n_retries >= injected["frames_damaged"] // 2
    assert r.n_rejected_frames + r.device_rejected + r.retries.get("silence", 0) >= injected["frames_damaged"] // 2


def test_input_timer_floor_and_cap_follow_the_inference():
    t = _RetryTimer(cap_s=4.0, limit_s=60.0)
    t.inference(3.0)                                       # the device says it computed for 3 s
    assert t.floor_s == 6.0 and t.rto == 6.0               # never asked again sooner than twice that
    t.sample(10.0)                                         # a 10 s round trip
    assert t.cap == 20.0 and t.rto == 20.0                 # srtt + 4 rttvar = 30, within twice the longest
    for _ in range(5):
        t.backoff()
    assert t.rto == 20.0
    link = _RetryTimer(cap_s=4.0)                          # the link timer keeps its 4 s cap
    link.sample(10.0)
    assert link.rto == 4.0


def test_retry_timer_follows_rfc_6298_with_karn_and_backoff():
    t = _RetryTimer(cap_s=4.0)
    assert t.rto == RETRY_FIRST_S                          # nothing measured yet
    t.backoff()
    t.backoff()
    assert t.rto == 4.0                                    # doubled, capped
    t.sample(0.010)                                        # a clean round trip: back to the base
    assert t.rto == RETRY_MIN_S and (t.srtt, t.rttvar) == (0.010, 0.005)
    t.sample(0.900)
    assert t.srtt == pytest.approx(0.875 * 0.010 + 0.125 * 0.900)
    assert t.rttvar == pytest.approx(0.75 * 0.005 + 0.25 * 0.890)
    assert t.rto == pytest.approx(t.srtt + 4 * t.rttvar)   # above the floor now
    base = t.rto
    t.backoff()
    t.relax()                                              # answered without a silence: halve back
    assert t.rto == pytest.approx(base)
    t.relax()
    assert t.rto == pytest.approx(base)                    # never below the base


def test_silent_device_times_out_with_partial_results(transport):
    link, _ = transport(silent_after=2)
    t0 = time.monotonic()
    with pytest.raises(DeviceTimeout, match=r"no OUTPUT for sample 2 \(seq 2\) within 0.3 s; "
                                            r"received 210 bytes, last 200: 'ne-300 boot banner(?s:.*)#030001") as e:
        run_session(link, SAMPLES, timeout_s=0.3)
    assert time.monotonic() - t0 < 2
    p = e.value.partial
    assert p.outputs == expected(SAMPLES[:2]) and p.ticks == [100, 101] and p.exit_code is None


def test_no_hello_times_out_and_shows_what_arrived(transport):
    link, _ = transport(hello=False)
    with pytest.raises(DeviceTimeout, match=r"no HELLO from the device within 0.2 s; received 38 "
                                            r"bytes: '\\x1b\[0mCorstone-300 boot banner\\x0d\n"):
        run_session(link, SAMPLES, timeout_s=5, hello_timeout_s=0.2)


def test_device_closes_link_mid_run(transport):
    link, _ = transport(close_after=3)
    with pytest.raises(DeviceError, match=r"link closed while waiting for OUTPUT for sample 3") as e:
        run_session(link, SAMPLES, timeout_s=2)
    assert e.value.partial.outputs == expected(SAMPLES[:3])


def test_bad_exit_status(transport):
    link, _ = transport(exit_code=3)
    with pytest.raises(DeviceError, match=r"device exited with status 3; received") as e:
        run_session(link, SAMPLES[:2], timeout_s=2)
    assert e.value.partial.exit_code == 3 and e.value.partial.outputs == expected(SAMPLES[:2])


def test_model_failure_reported_per_sample(transport):
    link, _ = transport(model_status=-4)
    with pytest.raises(DeviceError, match=r"status 0; tabula_model_run failed on 2 sample\(s\), "
                                          r"first: sample 0 status -4") as e:
        run_session(link, SAMPLES[:2], timeout_s=2)
    assert e.value.partial.model_status == [-4, -4]


def test_size_checks_name_both_sizes(transport):
    link, _ = transport()
    with pytest.raises(InputSizeMismatch, match=r"host model's inputs take \[8\] bytes but the "
                                                r"firmware \(fake-m55\) reports \[6, 2\] bytes"):
        run_session(link, SAMPLES, timeout_s=2, expect_input_bytes=[8])
    link, _ = transport()
    with pytest.raises(InputSizeMismatch, match="sample 1 is 7 bytes but the firmware expects 8 bytes"):
        run_session(link, [bytes(8), bytes(7)], timeout_s=2)


# ---- runners: the host runner with a Python "firmware", discovery, QEMU command line -------

DEVICE_SCRIPT = """#!{python}
import os, sys
from tabula.deploy.protocol import *
out = sys.stdout.buffer
def send(t, seq, payload):
    out.write(encode_frame(t, seq, payload)); out.flush()
out.write(b"host build starting\\n")
send(MsgType.HELLO, 0, encode_hello([4], [4], 0, "host", version=1))
parser, n = FrameParser(), 0
while True:
    data = os.read(0, 4096)
    if not data:
        sys.exit(9)
    for f in parser.feed(data):
        if f.type == MsgType.INPUT:
            n += 1
            send(MsgType.OUTPUT, f.seq, encode_output(n, 0, [f.payload[::-1]]))
        elif f.type == MsgType.END:
            send(MsgType.STATUS, f.seq, encode_status({code}, n))
            out.write(b"\\x04"); out.flush()
            sys.exit({code})
"""


def fake_firmware(tmp_path, code=0):
    exe = tmp_path / "firmware"
    exe.write_text(DEVICE_SCRIPT.format(python=sys.executable, code=code))
    exe.chmod(0o755)
    return exe


def test_runner_discovery_by_folder():
    assert {"host", "qemu"} <= set(available_runners())
    assert get_runner("host").__module__ == "tabula.deploy.runners.host"
    with pytest.raises(ValueError, match="unknown runner 'nope'; available: .*host.*qemu"):
        get_runner("nope")


def test_host_runner_end_to_end(tmp_path):
    runner = get_runner("host")(log_path=tmp_path / "host.log")
    with runner.start(fake_firmware(tmp_path), None) as link:
        r = run_session(link, [b"abcd", b"wxyz"], timeout_s=10, log=tmp_path / "uart.log")
        assert runner.wait(10) == 0
    assert r.outputs == [[b"dcba"], [b"zyxw"]] and r.ticks == [1, 2]
    assert (r.board_name, r.exit_code, r.n_inferences, r.eot) == ("host", 0, 2, True)
    assert (tmp_path / "uart.log").read_bytes().startswith(b"host build starting\n#01")


def test_run_on_board_with_host_runner(tmp_path, monkeypatch):
    board = types.SimpleNamespace(name="host", dir=tmp_path, tick_hz=0,
                                  runner={"default": "host", "host": {"timeout_s": 10}})
    boards = types.ModuleType("tabula.boards")
    boards.load_board = lambda name: board
    monkeypatch.setitem(sys.modules, "tabula.boards", boards)
    exe = fake_firmware(tmp_path)
    r = run_on_board(exe, "host", [b"1234"])
    assert r.outputs == [[b"4321"]] and r.process_exit_code == 0
    assert (tmp_path / "run.log").exists() and (tmp_path / "run.host.log").exists()

    (tmp_path / "bad").mkdir()
    failing = fake_firmware(tmp_path / "bad", code=5)
    with pytest.raises(DeviceError, match="device exited with status 5") as e:
        run_on_board(failing, "host", [b"1234"], log_path=tmp_path / "bad.log")
    assert e.value.partial.outputs == [[b"4321"]] and e.value.partial.process_exit_code == 5
    assert any("host exited with 5" in note for note in e.value.__notes__)


def test_qemu_runner_command_and_missing_binary(tmp_path, monkeypatch):
    cmd = qemu_command("fw.elf", {"serial_index": 2, "icount_shift": None}, 4321)
    assert cmd[cmd.index("-chardev") + 1] == \
        "socket,id=uart,host=127.0.0.1,port=4321,server=on,wait=on,nodelay=on"
    assert cmd[cmd.index("-serial"):-2] == ["-serial", "null", "-serial", "null",
                                            "-serial", "chardev:uart"]
    assert "-icount" not in cmd and "-nographic" not in cmd and cmd[-2:] == ["-kernel", "fw.elf"]
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RunnerError, match="^qemu-system-arm not found: apt-get install "
                                          "--no-install-recommends qemu-system-arm$"):
        with get_runner("qemu")().start(tmp_path / "fw.elf", None):
            pass


# A minimal Corstone-300 "firmware" (CMSDK UART0, semihosting exit) that answers INPUT with the
# reversed payload, so the QEMU runner is tested without the real runtime. It trusts the CRC.
TINY_FW_C = r"""
#include <stdint.h>
#define UART ((volatile uint32_t *)0x49303000u)
extern uint32_t _estack;
void reset(void);
__attribute__((section(".vectors"), used)) const void *vectors[16] = {&_estack, (void *)reset};
static void put(uint8_t c) { while (UART[1] & 1u) {} UART[0] = c; }
static int get(void) { while (!(UART[1] & 2u)) {} return UART[0] & 0xFF; }
static uint32_t crc32(uint32_t crc, const uint8_t *p, int n) {
  crc = ~crc;
  while (n--) { crc ^= *p++; for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1u)); }
  return ~crc; }
static void hex(uint32_t v, int d) { while (d--) put("0123456789abcdef"[(v >> (4 * d)) & 15]); }
static uint32_t rhex(int d) { uint32_t v = 0; while (d--) { int c = get(); v = v << 4 | (c <= '9' ? c - '0' : (c | 32) - 'a' + 10); } return v; }
static void frame(uint8_t t, uint16_t seq, const uint8_t *p, uint16_t n) {
  uint8_t h[5] = {t, seq >> 8, seq, n >> 8, n};
  put('#'); hex(t, 2); hex(seq, 4); hex(n, 4);
  for (int i = 0; i < n; i++) hex(p[i], 2);
  hex(crc32(crc32(0, h, 5), p, n), 8); put('\n'); }
static void sh_exit(int code) {
  uint32_t block[2] = {0x20026, (uint32_t)code};
  register uint32_t r0 __asm__("r0") = 0x20; register uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory"); for (;;) {} }
void reset(void) {
  UART[4] = 16; UART[2] = 3;
  for (const char *s = "tiny fw up\r\n"; *s; s++) put(*s);
  static const uint8_t hello[] = {1,1,1,0, 4,0,0,0, 4,0,0,0, 0,0,0,0, 't','i','n','y'};
  frame(1, 0, hello, sizeof hello);
  uint8_t buf[64]; uint32_t n = 0;
  for (;;) {
    while (get() != '#') {}
    uint8_t t = rhex(2); uint16_t seq = rhex(4), len = rhex(4);
    for (int i = 0; i < len && i < 56; i++) buf[8 + len - 1 - i] = rhex(2);
    rhex(8); get();
    if (t == 2) { n++; for (int i = 0; i < 8; i++) buf[i] = i < 4 ? n >> (8 * i) : 0; frame(3, seq, buf, 8 + len); }
    if (t == 4) { uint8_t s[8] = {EXIT_CODE, 0, 0, 0, n}; frame(5, seq, s, 8); put(4); sh_exit(EXIT_CODE); }
  }
}
"""
TINY_FW_LD = """MEMORY { ITCM (rx) : ORIGIN = 0, LENGTH = 512K  DTCM (rw) : ORIGIN = 0x20000000, LENGTH = 512K }
SECTIONS { .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > ITCM
           .data : { *(.data*) *(.bss*) *(COMMON) } > DTCM
           _estack = ORIGIN(DTCM) + LENGTH(DTCM); }
"""


@pytest.mark.qemu
@pytest.mark.parametrize("exit_code", [0, 3])
def test_qemu_runner_with_tiny_firmware(tmp_path, exit_code):
    (tmp_path / "fw.c").write_text(TINY_FW_C)
    (tmp_path / "fw.ld").write_text(TINY_FW_LD)
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-O1", "-nostdlib",
                    "-ffreestanding", f"-DEXIT_CODE={exit_code}", "-T", "fw.ld", "fw.c", "-o",
                    "fw.elf"], cwd=tmp_path, check=True)
    runner = get_runner("qemu")(log_path=tmp_path / "qemu.log")
    board = types.SimpleNamespace(runner={"qemu": {"machine": "mps3-an547", "timeout_s": 30}})
    with runner.start(tmp_path / "fw.elf", board) as link:
        if exit_code == 0:
            r = run_session(link, [b"abcd", b"wxyz"], timeout_s=30)
        else:
            with pytest.raises(DeviceError, match="^device exited with status 3; received") as e:
                run_session(link, [b"abcd", b"wxyz"], timeout_s=30)
            r = e.value.partial
        assert runner.wait(30) == exit_code
    assert r.outputs == [[b"dcba"], [b"zyxw"]] and r.ticks == [1, 2]
    assert (r.board_name, r.exit_code, r.n_inferences, r.eot) == ("tiny", exit_code, 2, True)


def test_serial_link_keeps_the_last_byte_when_the_device_closes_right_after_it():
    """pyserial's socket:// read raises once the peer has closed; a byte read just before (the EOT)
    must still be returned, and the close reported by the next read.  (This race made the noisy
    socket session above miss the EOT under load.)"""
    import serial

    from tabula.deploy.link import LinkClosed

    class ClosingPort:
        timeout, write_timeout = 0.01, 1.0

        def __init__(self):
            self.chunks = [b"\x04"]

        def read(self, n):
            if self.chunks:
                return self.chunks.pop(0)
            raise serial.SerialException("socket disconnected")

    link = SerialLink(ClosingPort(), poll_s=0.01)
    assert link.read(4096) == b"\x04"
    with pytest.raises(LinkClosed, match="socket disconnected"):
        link.read(4096)
    with pytest.raises(LinkClosed):
        link.read(4096)
