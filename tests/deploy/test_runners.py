"""The FVP and board runners without an FVP or a board: a fake FVP on PATH (tests/fixtures/fvp),
a fake pyocd on PATH, a fake device on a pty or a socket:// port; and the transcript parser on a
stdout in the FVP's format. Each misbehaviour must end in one clear error, never a hang."""
from __future__ import annotations

import json
import os
import pty
import re
import socket
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from tabula.boards import load_board, missing_tools
from tabula.deploy import run_on_board
from tabula.deploy.protocol import (FrameParser, MsgType, encode_frame, encode_hello,
                                    encode_output, encode_status)
from tabula.deploy.runners import get_runner
from tabula.deploy.runners._process import RunnerError
from tabula.deploy.runners.board import find_port
from tabula.deploy.runners.fvp import fvp_command, parse_transcript
from tabula.deploy.session import DeviceReset, DeviceTimeout, run_session

ROOT = Path(__file__).resolve().parents[2]
FVP_DIR = ROOT / "tests" / "fixtures" / "fvp"
FVP = "FVP_Corstone_SSE-300_Ethos-U55"
SAMPLES = [b"abcd", b"efgh", b"ijkl", b"mnop"]
REVERSED = [[s[::-1]] for s in SAMPLES]


def board_ns(**runner) -> types.SimpleNamespace:
    return types.SimpleNamespace(name="corstone300", runner=runner, serial={}, tick_hz=32_000_000)


# ---- FVP ------------------------------------------------------------------------------------

@pytest.fixture
def fake_fvp(tmp_path, monkeypatch):
    """Puts the fake FVP on PATH; returns (elf path, file the fake writes its argv to)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / FVP
    exe.write_text(f"#!{sys.executable}\n" + (FVP_DIR / "fake_fvp.py").read_text())
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "python"))
    monkeypatch.setenv("FAKE_FVP_ARGS", str(tmp_path / "argv.json"))
    elf = tmp_path / "firmware.elf"
    elf.write_bytes(b"\x7fELF")
    return elf, tmp_path / "argv.json"


def test_fvp_command_line_has_the_flags_ci_needs():
    board = load_board("corstone300")
    cmd = fvp_command("fw.elf", board.runner_config("fvp"))
    assert cmd[0] == FVP
    flags = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-C"]
    for flag in ["mps3_board.visualisation.disable-visualisation=1",
                 "mps3_board.telnetterminal0.start_telnet=0",
                 "mps3_board.telnetterminal0.mode=raw",
                 "mps3_board.uart0.out_file=-",
                 "mps3_board.uart0.shutdown_on_eot=1",
                 "mps3_board.telnetterminal0.start_port=5000"]:
        assert flag in flags, flag
    assert cmd[cmd.index("-a") + 1] == "fw.elf"
    assert cmd[cmd.index("--timelimit") + 1] == "900" and "--stat" in cmd


def test_fvp_transcript_parsing():
    t = parse_transcript((FVP_DIR / "transcript.txt").read_bytes())
    assert t.ports == {"telnetterminal0": 5000, "telnetterminal1": 5001,
                       "telnetterminal2": 5002, "telnetterminal5": 5003}
    assert [(f.type, f.seq) for f in t.frames] == [(MsgType.HELLO, 0), (MsgType.OUTPUT, 0),
                                                  (MsgType.OUTPUT, 1), (MsgType.STATUS, 2)]
    assert t.frames[1].payload[8:] == bytes(range(10))
    assert t.eot and not t.timed_out
    assert t.instructions == {"FVP_MPS3_Corstone_SSE_300.cpu0": 901225}
    assert t.times_s["Simulated time"] == pytest.approx(0.026421)
    assert t.stop_lines == ["Info: /OSCI/SystemC: Simulation stopped by user."]
    # garbage never raises; a truncated transcript still yields what it holds
    assert parse_transcript(bytes(range(256)) * 10).frames == []
    cut = parse_transcript((FVP_DIR / "transcript.txt").read_bytes()[:600])
    assert cut.ports["telnetterminal0"] == 5000 and not cut.eot


def test_fvp_preferred_when_installed_and_named_when_missing(fake_fvp, monkeypatch):
    board = load_board("corstone300")
    assert board.pick_runner() == "fvp" and board.pick_runner("qemu") == "qemu"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert board.pick_runner() == "qemu"
    assert missing_tools(board, runner="fvp")[-1].startswith(f"{FVP} not found; install it with: download")
    with pytest.raises(RunnerError, match=f"^{FVP} not found: download the Corstone-300 FVP"):
        with get_runner("fvp")().start(fake_fvp[0], board):
            pass


def test_fvp_runner_session_ends_on_eot(fake_fvp, tmp_path):
    elf, argv_file = fake_fvp
    runner = get_runner("fvp")(log_path=tmp_path / "fvp.log")
    with runner.start(elf, board_ns(fvp={"timelimit_s": 30})) as link:
        r = run_session(link, SAMPLES, timeout_s=10)
        runner.wait(10)
    assert r.outputs == REVERSED and r.ticks == [100, 200, 300, 400]
    assert (r.board_name, r.exit_code, r.n_inferences, r.eot) == ("corstone300", 0, 4, True)
    argv = json.loads(argv_file.read_text())
    assert "mps3_board.uart0.shutdown_on_eot=1" in argv and argv[argv.index("-a") + 1] == str(elf)
    t = runner.transcript()  # the same frames, read back from the FVP's stdout
    assert [f.type for f in t.frames].count(MsgType.OUTPUT) == 4 and t.eot
    assert t.instructions["FVP_MPS3_Corstone_SSE_300.cpu0"] == 68452


def test_fvp_run_on_board_does_not_compare_process_exit_code(fake_fvp, tmp_path):
    r = run_on_board(fake_fvp[0], "corstone300", SAMPLES[:2], runner="fvp",
                     log_path=tmp_path / "run.log")
    assert r.outputs == REVERSED[:2] and r.runner == "fvp" and r.exit_code == 0
    assert (tmp_path / "run.fvp.log").read_bytes().count(b"#03") == 2


@pytest.mark.parametrize("mode", ["garbage", "silent", "reset"])
def test_fvp_misbehaving(fake_fvp, tmp_path, monkeypatch, mode):
    monkeypatch.setenv("FAKE_FVP_MODE", mode)
    runner = get_runner("fvp")(log_path=tmp_path / "fvp.log")
    t0 = time.monotonic()
    with runner.start(fake_fvp[0], board_ns()) as link:
        if mode == "garbage":
            r = run_session(link, SAMPLES, timeout_s=10)
            assert r.outputs == REVERSED and r.n_rejected_frames >= 2 * 6
        elif mode == "silent":
            with pytest.raises(DeviceTimeout, match=r"no HELLO from the device within 0.5 s; "
                                                    r"received 19 bytes: 'tabula corstone300\n'"):
                run_session(link, SAMPLES, timeout_s=0.5)
        else:
            with pytest.raises(DeviceReset, match=r"device reset while waiting for OUTPUT for "
                                                  r"sample 2 \(seq 2\).*2 sample\(s\) were done") as e:
                run_session(link, SAMPLES, timeout_s=10)
            assert e.value.partial.outputs == REVERSED[:2]
    assert time.monotonic() - t0 < 15
    assert runner.proc.poll() is not None  # the FVP was stopped, not left behind


def test_fvp_that_fails_to_start_is_one_clear_error(fake_fvp, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FVP_MODE", "badargs")
    with pytest.raises(RunnerError, match=r"(?s)^the FVP exited before it announced its UART0 "
                                          r"port.*exited with 1.*cannot load application"):
        with get_runner("fvp")(log_path=tmp_path / "fvp.log").start(fake_fvp[0], board_ns()):
            pass


def test_every_runner_shares_the_one_base_class():
    """start/wait/stop/describe, the log and the lifetime of child processes live once, in
    runners/_process.Runner; every runner module's Runner derives from it and adds only open()."""
    from tabula.deploy.runners import available_runners
    from tabula.deploy.runners._process import Runner as Base

    names = available_runners()
    assert names == ["board", "fvp", "host", "qemu"]
    for name in names:
        cls = get_runner(name)
        assert issubclass(cls, Base) and cls.open is not Base.open, name
        assert all(getattr(cls, m) is getattr(Base, m) for m in ("start", "spawn", "run_tool", "stop")), name


# ---- process lifetime: nothing a runner started outlives the tabula process -----------------------

_PARENT = """
import sys, time
from tabula.deploy.runners import get_runner
runner = get_runner(sys.argv[1])(log_path=sys.argv[3])
with runner.start(sys.argv[2], None) as link:
    print(runner.proc.pid, flush=True)
    time.sleep(120)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie nobody reaped yet is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("name", ["host", "fvp"])
def test_a_killed_tabula_process_takes_its_emulator_with_it(name, fake_fvp, tmp_path, monkeypatch):
    """``kill -9`` of the process running a session: the FVP (here the fake in the real FVP's
    ``linger`` manner: it keeps simulating when its UART client goes) and a host firmware that is stuck
    (it no longer reads its pipe) end with it -- before, both ran on in their own session."""
    if name == "host":
        fw = tmp_path / "stuck_firmware"
        fw.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(120)\n")
        fw.chmod(0o755)
    else:
        monkeypatch.setenv("FAKE_FVP_MODE", "linger")
        fw = fake_fvp[0]
    import subprocess

    parent = subprocess.Popen([sys.executable, "-c", _PARENT, name, str(fw), str(tmp_path / f"{name}.log")],
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _running(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _running(child):
        os.kill(child, 9)
        pytest.fail(f"the {name} child {child} outlived its killed parent")


# ---- board (pyocd + serial) ------------------------------------------------------------------

FAKE_PYOCD = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if args and args[0] == os.environ.get("FAKE_PYOCD_HANG"):
    import time
    time.sleep(60)
if args[:2] == ["json", "--probes"]:
    probes = [{{"unique_id": "066DFF485153", "info": "ST NUCLEO-H743ZI", "target": "stm32h743xx"}},
              {{"unique_id": "0670FF3031", "info": "ST NUCLEO-H743ZI2", "target": "stm32h743xx"}}]
    print(json.dumps({{"status": 0, "boards": probes[:int(os.environ.get("FAKE_PYOCD_PROBES", "1"))]}}))
elif args[:2] == ["json", "--targets"]:
    print(json.dumps({{"status": 0, "targets": [{{"name": "stm32h743xx", "source": "builtin"}},
                                                {{"name": "m467hjhae", "source": "builtin"}}]}}))
elif args[0] == "load" and os.environ.get("FAKE_PYOCD_FAIL"):
    print("0000123 C No connected debug probes [__main__]", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def fake_pyocd(tmp_path, monkeypatch):
    bindir = tmp_path / "pyocd-bin"
    bindir.mkdir()
    log = tmp_path / "pyocd.calls"
    exe = bindir / "pyocd"
    exe.write_text(FAKE_PYOCD.format(python=sys.executable, log=str(log)))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    elf = tmp_path / "firmware.elf"
    elf.write_bytes(b"\x7fELF")
    return elf, log


class PtyDevice(threading.Thread):
    """A board on the other side of a pty, speaking protocol version 1: boots (banner + HELLO)
    whenever the fake pyocd logs a ``reset``, answers INPUT with the reversed payload. ``reset_after``: reboot by itself after
    that many outputs; ``silent``: never answer INPUT."""

    def __init__(self, calls: Path, reset_after=None, silent=False, mute=False):
        super().__init__(daemon=True)
        self.mute = mute   # never a byte: a board on another port, or at another baud
        self.master, slave = pty.openpty()
        self.port = os.ttyname(slave)
        self._slave = slave
        self.calls, self.reset_after, self.silent = calls, reset_after, silent
        self.stop = threading.Event()

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def boot(self):
        self.send(b"\r\nNucleo boot\r\n" + encode_frame(
            MsgType.HELLO, 0, encode_hello([4], [4], 64_000_000, "nucleo_h743zi", version=1)))

    def run(self):
        import select
        import termios
        import tty

        tty.setraw(self._slave)
        attrs = termios.tcgetattr(self._slave)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(self._slave, termios.TCSANOW, attrs)
        resets_seen, parser, n = 0, FrameParser(), 0
        while not self.stop.is_set():
            text = self.calls.read_text() if self.calls.exists() else ""
            n_resets = sum(ln.startswith("reset ") for ln in text.splitlines())
            if n_resets > resets_seen:
                resets_seen = n_resets
                if not self.mute:
                    self.boot()
            if not select.select([self.master], [], [], 0.02)[0]:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            for f in parser.feed(data):
                if f.type == MsgType.INPUT and not self.silent:
                    n += 1
                    if self.reset_after is not None and n == self.reset_after + 1:
                        self.boot()
                        continue
                    self.send(encode_frame(MsgType.OUTPUT, f.seq, encode_output(7 * n, 0, [f.payload[::-1]])))
                elif f.type == MsgType.END:
                    self.send(encode_frame(MsgType.STATUS, f.seq, encode_status(0, n)) + b"\x04")

    def close(self):
        self.stop.set()
        self.join(2)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def pty_device(fake_pyocd):
    made = []

    def make(**kw):
        dev = PtyDevice(fake_pyocd[1], **kw)
        dev.start()
        made.append(dev)
        return dev

    yield make
    for dev in made:
        dev.close()


def test_board_runner_flashes_resets_and_runs_over_a_pty(fake_pyocd, pty_device, tmp_path):
    elf, calls = fake_pyocd
    dev = pty_device()
    board = load_board("nucleo_h743zi")
    runner = get_runner("board")(log_path=tmp_path / "board.log", port=dev.port)
    with runner.start(elf, board) as link:
        r = run_session(link, SAMPLES, timeout_s=5)
        assert runner.wait(1) is None
    assert r.outputs == REVERSED and r.ticks == [7, 14, 21, 28] and r.eot
    assert (r.board_name, r.tick_hz) == ("nucleo_h743zi", 64_000_000)
    assert calls.read_text().splitlines() == [
        "json --probes",
        "json --targets",
        f"load --target stm32h743xx --uid 066DFF485153 --no-reset --format elf {elf}",
        "reset --target stm32h743xx --uid 066DFF485153"]


def test_board_run_on_board_with_port_and_device_reset(fake_pyocd, pty_device, tmp_path):
    dev = pty_device(reset_after=2)
    with pytest.raises(DeviceReset, match=r"device reset while waiting for OUTPUT for sample 2") as e:
        run_on_board(fake_pyocd[0], "nucleo_h743zi", SAMPLES, port=dev.port, timeout_s=5,
                     log_path=tmp_path / "run.log")
    assert e.value.partial.outputs == REVERSED[:2]
    assert any("board runner: pyocd" in n for n in e.value.__notes__)
    assert (tmp_path / "run.log").read_bytes().count(b"Nucleo boot") == 2


def test_board_silent_device_times_out_and_says_what_arrived(fake_pyocd, pty_device):
    dev = pty_device(silent=True)
    t0 = time.monotonic()
    with pytest.raises(DeviceTimeout, match=r"no OUTPUT for sample 0 \(seq 0\) within 0.5 s; "
                                            r"received \d+ bytes: '\\x0d\nNucleo boot"):
        run_on_board(fake_pyocd[0], "nucleo_h743zi", SAMPLES, port=dev.port, timeout_s=0.5)
    assert time.monotonic() - t0 < 5


def test_board_runner_over_socket_url(fake_pyocd, monkeypatch):
    """``port`` may be any pyserial URL: a device served on TCP (e.g. ser2net, a remote desk).
    Like a board, it boots (banner + HELLO) when pyocd resets it."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    monkeypatch.setenv("TABULA_PORT", f"socket://127.0.0.1:{port}")
    calls = fake_pyocd[1]

    def device():
        conn, _ = server.accept()
        deadline = time.monotonic() + 10
        while not (calls.exists() and "reset " in calls.read_text().splitlines()[-1] + " "
                   and calls.read_text().splitlines()[-1].startswith("reset")):
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        with conn:
            conn.sendall(b"boot\n" + encode_frame(MsgType.HELLO, 0, encode_hello([4], [4], 0, "remote", version=1)))
            parser, n = FrameParser(), 0
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                for f in parser.feed(data):
                    if f.type == MsgType.INPUT:
                        n += 1
                        conn.sendall(encode_frame(MsgType.OUTPUT, f.seq, encode_output(n, 0, [f.payload[::-1]])))
                    elif f.type == MsgType.END:
                        conn.sendall(encode_frame(MsgType.STATUS, f.seq, encode_status(0, n)) + b"\x04")

    t = threading.Thread(target=device, daemon=True)
    t.start()
    r = run_on_board(fake_pyocd[0], "nucleo_h743zi", SAMPLES, timeout_s=5)
    t.join(5)
    server.close()
    assert r.outputs == REVERSED and r.board_name == "remote" and r.runner == "board"


def test_board_runner_errors_are_one_line(fake_pyocd, tmp_path, monkeypatch):
    elf, calls = fake_pyocd
    m55 = load_board("numaker_m55m1")
    with pytest.raises(RunnerError) as e:   # a pack target that is not cached
        with get_runner("board")(port="loop://").start(elf, m55):
            pass
    assert str(e.value) == (
        "pyocd target 'm55m1h2ljae' needs Nuvoton's NuMicroM55_DFP device pack, which is not in "
        "the local cmsis-pack-manager cache; with network run: pyocd pack install m55m1h2ljae "
        "(or download the .pack and set pack = \"path\" in board.toml [runner.board])")

    monkeypatch.setenv("FAKE_PYOCD_FAIL", "1")
    with pytest.raises(RunnerError, match=r"^pyocd load failed \(exit 1\): 0000123 C No connected "
                                          r"debug probes \[__main__\]$"):
        with get_runner("board")(port="loop://").start(elf, load_board("nucleo_h743zi")):
            pass

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RunnerError, match=r"^pyocd not found; install it with: pip install 'tabula\[board\]'"):
        with get_runner("board")(port="loop://").start(elf, load_board("nucleo_h743zi")):
            pass


def test_board_runner_says_in_seconds_which_probe_is_missing(fake_pyocd, monkeypatch):
    """The probe is checked first (pyocd json --probes): none, several and none named, or the named
    one absent -- each one line with the board, its target, the probe it needs and probe=; nothing is
    flashed. A named probe is used for every later command."""
    elf, calls = fake_pyocd
    nucleo = load_board("nucleo_h743zi")

    def start(probe=None):
        t0 = time.monotonic()
        with pytest.raises(RunnerError) as e:
            with get_runner("board")(port="loop://", probe=probe).start(elf, nucleo):
                pass
        assert time.monotonic() - t0 < 10
        return str(e.value)

    monkeypatch.setenv("FAKE_PYOCD_PROBES", "0")
    assert start() == (
        "no debug probe connected for nucleo_h743zi (pyocd target stm32h743xx): plug in the on-board ST-LINK (the "
        "Nucleo's USB connector CN1) by USB (pyocd json --probes lists none), or name one with probe=<unique id> "
        "(scons) or --probe (tabula validate); `pyocd list` shows them")
    monkeypatch.setenv("FAKE_PYOCD_PROBES", "2")
    assert start().startswith("2 debug probes connected (066DFF485153 (ST NUCLEO-H743ZI), 0670FF3031 (ST "
                              "NUCLEO-H743ZI2)) and none named for nucleo_h743zi (pyocd target stm32h743xx); name one "
                              "with probe=<unique id>")
    assert start(probe="ABCD").startswith("debug probe 'ABCD' for nucleo_h743zi (pyocd target stm32h743xx) not found "
                                          "(connected: 066DFF485153 (ST NUCLEO-H743ZI), 0670FF3031")
    assert set(calls.read_text().splitlines()) == {"json --probes"}      # nothing was flashed
    monkeypatch.setenv("TABULA_PROBE", "0670ff")                        # named (a part of the id, any case)
    with get_runner("board")(port="loop://").start(elf, nucleo):
        pass
    assert calls.read_text().splitlines()[-2:] == [
        f"load --target stm32h743xx --uid 0670FF3031 --no-reset --format elf {elf}", "reset --target stm32h743xx --uid 0670FF3031"]


def test_board_runner_names_the_step_that_stalled(fake_pyocd, pty_device, monkeypatch):
    """A flash that hangs is killed after its bound and named (step 'flash', the target, the probe);
    a board that says nothing after reset is named too (step 'serial', the port and the baud)."""
    import dataclasses

    import tabula.boards
    import tabula.deploy.runners.board as board_runner

    elf, calls = fake_pyocd
    monkeypatch.setattr(board_runner, "FLASH_TIMEOUT_S", 0.5)
    monkeypatch.setenv("FAKE_PYOCD_HANG", "load")
    t0 = time.monotonic()
    with pytest.raises(RunnerError) as e:
        with get_runner("board")(port="loop://").start(elf, load_board("nucleo_h743zi")):
            pass
    assert time.monotonic() - t0 < 5
    assert re.match(r"board runner: step 'flash' stalled: \S*pyocd load --target stm32h743xx --uid 066DFF485153 "
                    r".* did not finish within 0\.5 s; flashing firmware\.elf into stm32h743xx through probe "
                    r"066DFF485153 stopped", str(e.value)), str(e.value)
    monkeypatch.delenv("FAKE_PYOCD_HANG")
    dev = pty_device(mute=True)
    quick = dataclasses.replace(load_board("nucleo_h743zi"), serial={"baud": 115200, "boot_s": 0.5})
    monkeypatch.setattr(tabula.boards, "load_board", lambda name: quick)
    with pytest.raises(DeviceTimeout) as e:
        run_on_board(elf, "nucleo_h743zi", SAMPLES, port=dev.port, timeout_s=5)
    first = str(e.value).splitlines()[0]
    assert first == (f"no HELLO from the device within 0.5 s; received nothing from the device; step 'serial' stalled: "
                     f"nothing arrived on serial port {dev.port} at 115200 baud, after flashing and resetting through "
                     "probe 066DFF485153; is it the board's own serial port (port=...), and does the baud match "
                     "board.toml [serial]?")


def test_find_port_by_usb_id():
    P = types.SimpleNamespace
    ports = [P(device="/dev/ttyS0", vid=None, pid=None), P(device="/dev/ttyACM0", vid=0x0483, pid=0x374B),
             P(device="/dev/ttyACM1", vid=0x0416, pid=0x5021)]
    assert find_port(["0483:374e", "0483:374b"], ports) == "/dev/ttyACM0"
    assert find_port(["0416"], ports) == "/dev/ttyACM1"
    with pytest.raises(RunnerError, match=r"no serial port with USB id 1366:1015 \(ports seen: /dev/ttyS0, "
                                          r"/dev/ttyACM0 \(0483:374b\), /dev/ttyACM1 \(0416:5021\)\)"):
        find_port(["1366:1015"], ports)
    with pytest.raises(RunnerError, match="2 serial ports match USB id 0483: /dev/ttyACM0, /dev/ttyACM2; choose one with port="):
        find_port(["0483"], ports + [P(device="/dev/ttyACM2", vid=0x0483, pid=0x3752)])
