"""A noisy link costs a retry, not the run (docs/protocol.md, "Retry").

The fault injector itself (tabula.deploy.faults.FaultyLink: flips, drops, duplicates and delays
bytes at a fixed seed), then the host build of the echo fixture firmware driven through it in both
directions at several seeds and rates: every run ends with every OUTPUT bit-exact, each sample
computed once, or -- on a hopeless link -- with one clear error after a bounded number of retries.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tabula.deploy import LinkError, SessionError, run_on_board
from tabula.deploy.faults import FaultSpec, FaultSpecError, FaultyLink, summarize
from tabula.deploy.protocol import FrameParser, MsgType, encode_frame, encode_output
from tabula.deploy.runners import get_runner
from tabula.deploy.session import run_session
from tabula.report import injected_summary, link_summary
from test_firmware import build, echo_expected, random_inputs

SEED = int(os.environ.get("TABULA_SEED", "20250101"))


class Wire:
    """A Link over two in-memory byte queues (the 'device' end is driven by the test)."""

    poll_s = 0.01

    def __init__(self):
        self.sent = bytearray()       # what reached the device
        self.to_host: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent += data

    def read(self, max_bytes: int) -> bytes:
        return self.to_host.pop(0) if self.to_host else b""

    def close(self) -> None:
        pass


def frames(n: int) -> bytes:
    return b"".join(encode_frame(MsgType.OUTPUT, i, encode_output(i, 0, [bytes(range(i, i + 20))]))
                    for i in range(n))


# ---- the fault injector ---------------------------------------------------------------------

def test_no_faults_is_the_identity_and_counts_frames():
    wire = Wire()
    link = FaultyLink(wire, FaultSpec(rate=0.0, seed=1))
    data = b"boot banner\n" + frames(5)
    link.write(data)
    wire.to_host.append(data)
    assert bytes(wire.sent) == data and link.read(4096) == data
    for direction in ("to_device", "from_device"):
        assert link.stats[direction] == {"bytes": len(data), "flip": 0, "drop": 0, "dup": 0,
                                         "delay": 0, "frames": 5, "frames_damaged": 0, "noise_hits": 0}


def test_faults_do_not_depend_on_chunking():
    """Byte n meets the same fault for the same seed, however the bytes are written."""
    data = frames(40)
    spec = FaultSpec(rate=0.02, seed=7, kinds=("flip", "drop", "dup"))
    outs = []
    for chunk in (len(data), 1, 13):
        wire = Wire()
        link = FaultyLink(wire, spec)
        for i in range(0, len(data), chunk):
            link.write(data[i:i + chunk])
        outs.append((bytes(wire.sent), link.stats["to_device"]))
    assert outs[0] == outs[1] == outs[2]
    damaged, stats = outs[0]
    assert damaged != data and stats["flip"] + stats["drop"] + stats["dup"] > 10
    # the receiver's view: exactly the frames the injector did not damage come through intact
    p = FrameParser()
    assert p.n_frames == 0 and len(p.feed(damaged)) == 40 - stats["frames_damaged"]


@pytest.mark.parametrize("kind", ["flip", "drop", "dup"])
def test_each_kind_does_what_it_says(kind):
    data = bytes(range(48, 58)) * 50   # '0'..'9', no frame
    wire = Wire()
    link = FaultyLink(wire, FaultSpec(rate=0.1, seed=3, kinds=(kind,)))
    link.write(data)
    out, n = bytes(wire.sent), link.stats["to_device"][kind]
    assert n > 20 and link.stats["to_device"]["noise_hits"] == n
    if kind == "flip":
        diff = [a ^ b for a, b in zip(out, data) if a != b]
        assert len(out) == len(data) and len(diff) == n and all(bin(d).count("1") == 1 for d in diff)
    else:
        assert len(out) == len(data) + (n if kind == "dup" else -n)


def test_delay_keeps_every_byte_in_order_and_holds_them_back():
    data = frames(20)
    wire = Wire()
    link = FaultyLink(wire, FaultSpec(rate=0.01, seed=5, kinds=("delay",), max_delay_s=0.05))
    wire.to_host.append(data)
    got, t0, reads = b"", time.monotonic(), 0
    while len(got) < len(data) and time.monotonic() - t0 < 5:
        got += link.read(4096)
        reads += 1
    assert got == data and reads > 1 and link.stats["from_device"]["delay"] >= 1
    assert link.stats["from_device"]["frames_damaged"] == 0   # a delay damages nothing


def test_damage_that_decodes_the_same_is_not_counted():
    """A hex letter's case bit and a doubled '#' or newline leave the frame as the receiver decodes
    it; any other hit inside a frame damages it."""
    frame = encode_frame(MsgType.NACK, 0xABCD, b"\x0e")   # '#06abcd00010e........\n'
    for kind, index, damaged in [("flip", 3, False), ("dup", 0, False), ("dup", len(frame) - 1, False),
                                 ("dup", 5, True), ("drop", 0, True), ("drop", len(frame) - 1, True)]:
        d = FaultyLink(Wire(), FaultSpec(rate=0.5, seed=0, kinds=(kind,)))._dirs["to_device"]

        class OneHit:   # hit exactly byte `index`; for a flip, bit 5 (the case bit of 'a'-'f')
            def random(self, n):
                return np.array([0.0 if i == index else 1.0 for i in range(n)])

        class Bit5:
            def integers(self, n):
                return 5 if n == 8 else 0

            def random(self):
                return 0.0

        d.hit_rng, d.fault_rng = OneHit(), Bit5()
        d.mutate(frame, FaultSpec(rate=0.5, kinds=(kind,)))
        assert d.counts["frames_damaged"] == int(damaged), (kind, index)


def test_fault_spec_text_and_its_errors():
    assert FaultSpec.parse("1e-2:7") == FaultSpec(rate=0.01, seed=7)
    assert FaultSpec.parse("0.001") == FaultSpec(rate=0.001, seed=0)
    assert FaultSpec.parse("0.01:3:flip,drop").kinds == ("flip", "drop")
    assert str(FaultSpec.parse("0.01:3:flip,drop")) == "0.01:3:flip,drop"
    for text, msg in [("lots", r"link faults 'lots': expected rate\[:seed\[:kinds\]\], e.g. 1e-3:7"),
                      ("1.5", r"fault rate 1.5 is not a probability per byte in \[0, 1\)"),
                      ("0.1:1:zap", r"fault kinds \['zap'\]: choose one or more of flip, drop, dup, delay"),
                      ("0.1:x", "expected rate")]:
        with pytest.raises(FaultSpecError, match=msg):
            FaultSpec.parse(text)


# ---- the host firmware through a faulty link -------------------------------------------------

N_SAMPLES = 60


@pytest.fixture(scope="module")
def echo_host(tmp_path_factory):
    return build("host", tmp_path_factory.mktemp("faults"))


def samples(seed: int) -> list[tuple[bytes, bytes]]:
    rng = np.random.default_rng([SEED, seed])
    return [random_inputs(rng) for _ in range(N_SAMPLES)]


def run_through_faults(exe, spec: FaultSpec, inputs, tmp_path, **kwargs):
    """The host runner, a FaultyLink around its pipes, run_session. Returns (result or error,
    the link, the process exit code, wall seconds)."""
    runner = get_runner("host")(log_path=tmp_path / "host.log")
    t0 = time.monotonic()
    with runner.start(exe) as pipes:
        link = FaultyLink(pipes, spec)
        try:
            out = run_session(link, [a + b for a, b in inputs], log=tmp_path / "uart.log", **kwargs)
            code = runner.wait(10)
        except SessionError as e:
            out, code = e, None
    return out, link, code, time.monotonic() - t0


@pytest.mark.host
@pytest.mark.parametrize("rate", [1e-3, 1e-2])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_host_firmware_survives_a_noisy_link(echo_host, tmp_path, rate, seed):
    """Both directions flip, drop, duplicate and delay bytes: every OUTPUT arrives bit-exact, the
    device ran each sample exactly once (a repeated request replays, never recomputes), and the
    counters add up."""
    inputs = samples(seed)
    r, link, code, wall = run_through_faults(echo_host, FaultSpec(rate=rate, seed=seed), inputs,
                                             tmp_path, timeout_s=30)
    injected = summarize(link.stats)
    print(f"rate {rate:g} seed {seed}: {wall:.2f} s; {link_summary(r.link_stats())}; "
          f"{injected_summary({'spec': f'{rate:g}:{seed}', **injected})}")
    assert not isinstance(r, SessionError), str(r)
    assert [o[0] + o[1] for o in r.outputs] == [echo_expected(a, b) for a, b in inputs]
    assert r.model_status == [0] * N_SAMPLES and (r.exit_code, code) == (0, 0)
    assert r.n_inferences == N_SAMPLES                      # never recomputed
    # what the host sent / got, against what really crossed the wire
    assert r.n_frames_sent == link.stats["to_device"]["frames"]
    assert r.n_frames_received + link.stats["from_device"]["frames_damaged"] == \
        link.stats["from_device"]["frames"] >= N_SAMPLES + 2    # HELLO, the OUTPUTs, STATUS
    assert r.device_rejected <= link.stats["to_device"]["frames_damaged"]
    assert r.device_replayed <= r.n_retries
    if injected["frames_damaged"]:
        assert r.n_retries >= 1
    else:
        assert r.n_retries == 0 and r.n_rejected_frames == 0
    if rate == 1e-2:
        assert injected["frames_damaged"] >= 20             # the link really was bad
        assert wall < 60


@pytest.mark.host
def test_hopeless_link_fails_with_one_clear_error_in_bounded_time(echo_host, tmp_path):
    """A third of all bytes hit: the session gives up -- it neither hangs nor accepts a damaged
    OUTPUT -- and says how often it asked and why."""
    inputs = samples(9)
    r, link, code, wall = run_through_faults(echo_host, FaultSpec(rate=0.3, seed=9), inputs,
                                             tmp_path, timeout_s=5, max_retries=6)
    assert isinstance(r, SessionError)
    assert wall < 20
    msg = str(r).splitlines()[0]
    assert ("gave up on" in msg and "after 6 retries" in msg and isinstance(r, LinkError)) or \
        "within 5 s" in msg, msg
    assert "asked again" in msg and "; received " in msg
    done = r.partial.outputs                                # whatever did arrive is right
    assert [o[0] + o[1] for o in done] == [echo_expected(a, b) for a, b in inputs[:len(done)]]


@pytest.mark.host
def test_run_on_board_injects_faults_from_the_environment(echo_host, tmp_path, monkeypatch):
    """TABULA_LINK_FAULTS puts a FaultyLink into any run (scons, tabula validate); what it did is in
    the result (results.json "link": "injected")."""
    monkeypatch.setenv("TABULA_LINK_FAULTS", "1e-2:4")
    inputs = samples(4)
    r = run_on_board(echo_host, "host", [a + b for a, b in inputs], log_path=tmp_path / "run.log")
    assert [o[0] + o[1] for o in r.outputs] == [echo_expected(a, b) for a, b in inputs]
    stats = r.link_stats()
    assert stats["injected"]["spec"] == "0.01:4" and stats["injected"]["frames_damaged"] > 0
    assert stats["injected"]["by_direction"]["to_device"]["frames"] == stats["frames_sent"]
    assert stats["retries"] >= 1 and r.process_exit_code == 0
    monkeypatch.setenv("TABULA_LINK_FAULTS", "often")
    with pytest.raises(FaultSpecError, match="link faults 'often': expected rate"):
        run_on_board(echo_host, "host", [], log_path=tmp_path / "run2.log")
