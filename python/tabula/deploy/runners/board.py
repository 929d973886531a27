"""Run firmware on a real dev board: find its probe, flash it with pyocd, reset it, talk over its serial port.

Steps, each bounded in time and named in any error (``step 'flash' stalled: ...``):

1. ``probe`` -- ``pyocd json --probes``: the debug probe must be connected. None: one line, in about a
   second, naming the probe the board needs (``[runner.board] probe`` in board.toml, e.g. its on-board
   ST-LINK), the board's pyocd target and how to name a probe (``probe=`` / ``--probe`` /
   ``$TABULA_PROBE``, a unique id from ``pyocd list``). Several and none named: the same, listing them
   (pyocd would otherwise stop and ask). The probe found is named to every later pyocd command (``--uid``).
2. ``target`` -- pyocd must know the target: built in, from a CMSIS device pack in the local
   cmsis-pack-manager cache, or ``pack = "file.pack"`` in board.toml.
3. ``flash`` -- ``pyocd load --no-reset``.
4. ``serial`` -- open the port (``port=`` / ``--port``, else ``$TABULA_PORT``, else ``[runner.board]
   port``, else the one USB serial port whose VID:PID is in ``[serial] usb_ids``), drop stale input.
5. ``reset`` -- ``pyocd reset``, so the fresh boot banner and HELLO arrive on an open port; then the
   session runs. A session that hears nothing says so with the port and the baud (:meth:`Runner.explain`).

The port may be any pyserial URL (``/dev/ttyACM0``, ``socket://host:port``, ``rfc2217://...``), which is
how the tests drive this runner with a fake device, and how the virtual dev board (QEMU behind a
pseudo-terminal, ``tests/fixtures/virtual_board``) runs the real path end to end. A board has no
process exit code: the firmware's exit code comes in STATUS (``REPORTS_EXIT_CODE`` is False).

Board settings (``board.runner["board"]``): ``target`` (pyocd target name), ``probe`` (what the probe
is, for messages), ``uid`` (a probe's unique id, optional), ``pack`` (optional path to a .pack),
``pack_name`` (for the message when it is missing), ``timeout_s``; ``[serial]``: ``baud``, ``usb_ids``, ``boot_s``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..link import Link, SerialLink
from ._process import Runner as _Runner
from ._process import RunnerError, runner_settings

NAME = "board"
REPORTS_EXIT_CODE = False
PYOCD = "pyocd"
PROBE_ENV = "TABULA_PROBE"
PROBE_TIMEOUT_S = 20.0
"""``pyocd json --probes`` (about 1 s; a wedged USB stack can make it hang)."""
TARGETS_TIMEOUT_S = 60.0
FLASH_TIMEOUT_S = 180.0
RESET_TIMEOUT_S = 30.0
PYOCD_TIMEOUT_S = FLASH_TIMEOUT_S  # the name before each step had its own bound
INSTALL = "pip install 'tabula[board]'  (or: pip install pyocd)"


def find_port(usb_ids: list[str], ports=None) -> str:
    """The one serial port whose USB VID:PID matches ``usb_ids`` ("0483:374b" or "0483")."""
    if ports is None:
        from serial.tools import list_ports

        ports = list_ports.comports()
    wanted = [tuple(int(x, 16) for x in u.split(":")) for u in usb_ids]

    def match(p) -> bool:
        vid, pid = getattr(p, "vid", None), getattr(p, "pid", None)
        return vid is not None and any(w[0] == vid and (len(w) == 1 or w[1] == pid) for w in wanted)

    found = [p for p in ports if match(p)]
    seen = ", ".join(f"{p.device} ({p.vid:04x}:{p.pid:04x})" if getattr(p, "vid", None) is not None
                     else p.device for p in ports) or "none"
    if not found:
        raise RunnerError(f"no serial port with USB id {' or '.join(usb_ids)} (ports seen: {seen}); "
                          "plug the board in or give its port with port=/dev/ttyACM0")
    if len(found) > 1:
        raise RunnerError(f"{len(found)} serial ports match USB id {' or '.join(usb_ids)}: "
                          f"{', '.join(p.device for p in found)}; choose one with port=...")
    return found[0].device


def _board_words(board) -> tuple[str, str, str]:
    """(board name, pyocd target, what its probe is) for messages."""
    settings = runner_settings(board, NAME)
    return (getattr(board, "name", "the board"), settings.get("target", "?"),
            settings.get("probe", "its debug probe"))


class Runner(_Runner):
    NAME = NAME
    REPORTS_EXIT_CODE = REPORTS_EXIT_CODE

    def __init__(self, log_path=None, port: str | None = None, pyocd: str = PYOCD, probe: str | None = None,
                 **options):
        super().__init__(log_path, **options)
        self.port = port
        self.probe = probe
        self.pyocd = pyocd
        self.uid: str | None = None        # the probe in use, once found
        self.serial_port: str | None = None
        self.baud: int | None = None

    # ---- pyocd ----------------------------------------------------------------------------
    def _run_pyocd(self, args: list[str], step: str, timeout_s: float, hint: str = "") -> str:
        r = self.run_tool([self.pyocd, *args], step, timeout_s, hint)
        if r.returncode != 0:
            out = (r.stdout or "") + (r.stderr or "")
            tail = " | ".join(ln.strip() for ln in out.strip().splitlines()[-3:])
            raise RunnerError(f"pyocd {args[0]} failed (exit {r.returncode}): {tail or 'no output'}")
        return r.stdout or ""

    def _target_args(self, settings: dict) -> list[str]:
        if "target" not in settings:
            raise RunnerError("board runner: board.toml has no [runner.board] target "
                              "(the pyocd target name, see `pyocd list --targets`)")
        args = ["--target", settings["target"]]
        pack = settings.get("pack")
        if pack:
            args += ["--pack", str(pack)]
        if self.uid:
            args += ["--uid", self.uid]
        return args

    def check_tools(self, board=None) -> None:
        if shutil.which(self.pyocd) is None:
            raise RunnerError(f"pyocd not found; install it with: {INSTALL}")

    def find_probe(self, board) -> dict:
        """The connected probe to use (``pyocd json --probes``): the one named (``probe=``,
        ``$TABULA_PROBE``, board.toml ``uid``) or the only one connected; sets :attr:`uid`.

        Raises:
            RunnerError: none connected, the named one absent, or several and none named: one line
                with the board, its target, the probe it needs and how to name one.
        """
        name, target, what = _board_words(board)
        wanted = self.probe or os.environ.get(PROBE_ENV) or runner_settings(board, NAME).get("uid")
        out = self._run_pyocd(["json", "--probes"], "probe", PROBE_TIMEOUT_S,
                              "the USB stack or a probe is wedged: unplug the probe and plug it in again")
        try:
            info = json.loads(out)
            probes = [p for p in info["boards"] if isinstance(p, dict) and p.get("unique_id")]
        except (ValueError, KeyError, TypeError) as e:
            raise RunnerError(f"cannot read `pyocd json --probes` output ({type(e).__name__}: {e})") from None
        if info.get("status"):
            raise RunnerError(f"pyocd cannot list debug probes: {info.get('error', 'status ' + str(info['status']))}; "
                              "check the USB permissions (udev rules for the probe) and run again")
        listed = ", ".join(f"{p['unique_id']} ({p.get('info', '?')})" for p in probes)
        how = "name one with probe=<unique id> (scons) or --probe (tabula validate); `pyocd list` shows them"
        if wanted:
            match = [p for p in probes if str(wanted).lower() in str(p["unique_id"]).lower()]
            if len(match) != 1:
                seen = f"connected: {listed}" if probes else "no probe is connected"
                raise RunnerError(f"debug probe '{wanted}' for {name} (pyocd target {target}) not found ({seen}); "
                                  f"plug in {what} or {how}")
            probe = match[0]
        elif not probes:
            raise RunnerError(f"no debug probe connected for {name} (pyocd target {target}): plug in {what} by USB "
                              f"(pyocd json --probes lists none), or {how}")
        elif len(probes) > 1:
            raise RunnerError(f"{len(probes)} debug probes connected ({listed}) and none named for {name} "
                              f"(pyocd target {target}); {how}")
        else:
            probe = probes[0]
        self.uid = str(probe["unique_id"])
        self.log(f"probe {self.uid}: {probe.get('info', '')}")
        return probe

    def check_target(self, settings: dict) -> None:
        """pyocd must know the target: built in, from a cached pack, or from ``pack``."""
        target = settings.get("target", "")
        pack = settings.get("pack")
        if pack:
            if not Path(pack).is_file():
                raise RunnerError(f"device pack {pack} (board.toml [runner.board] pack) not found")
            return
        out = self._run_pyocd(["json", "--targets"], "target", TARGETS_TIMEOUT_S)
        try:
            names = {t["name"].lower() for t in json.loads(out)["targets"]}
        except (ValueError, KeyError, TypeError) as e:
            raise RunnerError(f"cannot read `pyocd json --targets` output: {e}") from e
        if target.lower() not in names:
            pack_name = settings.get("pack_name", "its CMSIS device family pack")
            raise RunnerError(
                f"pyocd target '{target}' needs {pack_name}, which is not in the local "
                f"cmsis-pack-manager cache; with network run: pyocd pack install {target} "
                f"(or download the .pack and set pack = \"path\" in board.toml [runner.board])")

    # ---- the runner interface -----------------------------------------------------------------
    def open(self, elf: Path, board=None) -> Link:
        settings = runner_settings(board, NAME)
        serial_cfg = dict(getattr(board, "serial", {}) or {})
        name, target, what = _board_words(board)
        self.step = "probe"
        self.find_probe(board)
        self.step = "target"
        self.check_target(settings)
        args = self._target_args(settings)
        port = (self.port or os.environ.get("TABULA_PORT") or settings.get("port")
                or find_port(serial_cfg.get("usb_ids", [])))
        self._run_pyocd(["load", *args, "--no-reset", "--format", "elf", str(elf)], "flash", FLASH_TIMEOUT_S,
                        f"flashing {elf.name} into {target} through probe {self.uid} stopped: unplug the board, plug "
                        "it in again and retry (a target held in reset or a locked flash needs `pyocd erase`)")
        self.step = "serial"
        self.serial_port, self.baud = port, int(serial_cfg.get("baud", 115200))
        link = self._open(port, self.baud)
        try:
            self._run_pyocd(["reset", *args], "reset", RESET_TIMEOUT_S,
                            f"resetting {target} through probe {self.uid} stopped: unplug the board and retry")
        except BaseException:
            link.close()
            raise
        self.step = "session"
        return link

    def _open(self, port: str, baud: int) -> SerialLink:
        import serial

        try:
            ser = serial.serial_for_url(port, baudrate=baud, timeout=0)
        except (serial.SerialException, ValueError, OSError) as e:
            raise RunnerError(f"cannot open serial port {port}: {e}") from e
        try:
            ser.reset_input_buffer()   # bytes from before the reset are not this run's
        except (serial.SerialException, OSError, AttributeError):
            pass
        return SerialLink(ser)

    def explain(self, error: BaseException) -> str | None:
        """Which step stalled, for a session error: after flashing and reset, the serial link."""
        if self.step != "session" or self.serial_port is None:
            return None
        text = str(error)
        where = f"serial port {self.serial_port} at {self.baud} baud, after flashing and resetting through probe {self.uid}"
        if "no HELLO" in text and "received nothing" in text:
            return (f"step 'serial' stalled: nothing arrived on {where}; is it the board's own serial port "
                    "(port=...), and does the baud match board.toml [serial]?")
        if "no HELLO" in text:
            return (f"step 'serial' stalled: bytes but no HELLO arrived on {where}; a baud mismatch or "
                    "another program on the port?")
        if "within" in text:
            return f"step 'session' stalled on {where}: the board stopped answering (a crash or a reset?)"
        return None

    def wait(self, timeout: float) -> None:
        """A board does not exit; the firmware parks after EOT. Nothing to wait for."""
        return None

    def describe(self) -> str:
        cmds = "; ".join(" ".join(c) for c in self.commands[-3:]) or "no pyocd command run"
        return f"board runner: {cmds}; last step {self.step}; log {self.log_path}"


def check_probe(board, probe: str | None = None, pyocd: str = PYOCD) -> str:
    """Before anything is built (``tabula validate``, ``scons ... runner=board``): pyocd is installed and
    the board's debug probe is connected (:meth:`Runner.find_probe`, about a second); returns the
    probe's unique id.

    Raises:
        RunnerError: one line naming what is missing, the board's target and how to name a probe.
    """
    r = Runner(os.devnull, probe=probe, pyocd=pyocd)
    try:
        r.check_tools(board)
        r.find_probe(board)
    finally:
        r.stop()
    return str(r.uid)
