"""Run firmware on a real dev board: flash it with pyocd, reset it, talk over its serial port.

The port: ``port=`` / ``--port``, else ``$TABULA_PORT``, else ``[runner.board] port``, else the
one USB serial port whose VID:PID is in ``[serial] usb_ids``.

Steps: check that pyocd knows the target (built in, or from a CMSIS device pack in the local
cmsis-pack-manager cache, or ``pack = "file.pack"`` in board.toml), ``pyocd load --no-reset``,
open the serial port (``port=`` / ``--port``, else found by the USB VID:PID in board.toml
``[serial] usb_ids``), drop stale input, ``pyocd reset`` so the fresh boot banner and HELLO
arrive on an open port, then hand the link to the session.

The port may be any pyserial URL (``/dev/ttyACM0``, ``socket://host:port``, ``rfc2217://...``),
which is how the tests drive this runner with a fake device. A board has no process exit code:
the firmware's exit code comes in STATUS (``REPORTS_EXIT_CODE`` is False).

Board settings (``board.runner["board"]``): ``target`` (pyocd target name), ``pack`` (optional
path to a .pack), ``pack_name`` (for the message when it is missing), ``uid`` (probe id, optional),
``timeout_s``; ``[serial]``: ``baud``, ``usb_ids``, ``boot_s``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

from ..link import Link, SerialLink
from ._process import RunnerError, check_elf_for, runner_settings

NAME = "board"
REPORTS_EXIT_CODE = False
PYOCD = "pyocd"
PYOCD_TIMEOUT_S = 180.0
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


class Runner:
    NAME = NAME
    REPORTS_EXIT_CODE = REPORTS_EXIT_CODE

    def __init__(self, log_path=None, port: str | None = None, pyocd: str = PYOCD, **_options):
        self.log_path = Path(log_path) if log_path is not None else None
        self.port = port
        self.pyocd = pyocd
        self.commands: list[list[str]] = []
        self._last_output = ""

    # ---- pyocd ----------------------------------------------------------------------------
    def _run_pyocd(self, args: list[str], what: str) -> str:
        cmd = [self.pyocd, *args]
        self.commands.append(cmd)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=PYOCD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunnerError(f"pyocd {what} did not finish within {PYOCD_TIMEOUT_S:g} s: "
                              f"{' '.join(cmd)}") from None
        out = (r.stdout or "") + (r.stderr or "")
        self._last_output = out
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "a") as f:
                f.write(f"$ {' '.join(cmd)}\n{out}")
        if r.returncode != 0:
            tail = " | ".join(ln.strip() for ln in out.strip().splitlines()[-3:])
            raise RunnerError(f"pyocd {what} failed (exit {r.returncode}): {tail or 'no output'}")
        return r.stdout or ""

    def _target_args(self, settings: dict) -> list[str]:
        if "target" not in settings:
            raise RunnerError("board runner: board.toml has no [runner.board] target "
                              "(the pyocd target name, see `pyocd list --targets`)")
        args = ["--target", settings["target"]]
        pack = settings.get("pack")
        if pack:
            args += ["--pack", str(pack)]
        if settings.get("uid"):
            args += ["--uid", str(settings["uid"])]
        return args

    def check_target(self, settings: dict) -> None:
        """pyocd must know the target: built in, from a cached pack, or from ``pack``."""
        if shutil.which(self.pyocd) is None:
            raise RunnerError(f"pyocd not found; install it with: {INSTALL}")
        target = settings.get("target", "")
        pack = settings.get("pack")
        if pack:
            if not Path(pack).is_file():
                raise RunnerError(f"device pack {pack} (board.toml [runner.board] pack) not found")
            return
        out = self._run_pyocd(["json", "--targets"], "json --targets")
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
    @contextlib.contextmanager
    def start(self, elf_path: str | os.PathLike, board=None) -> Iterator[Link]:
        settings = runner_settings(board, NAME)
        serial_cfg = dict(getattr(board, "serial", {}) or {})
        elf = Path(elf_path).resolve()
        if not elf.is_file():
            raise RunnerError(f"board runner: no firmware at {elf}")
        check_elf_for(elf, NAME)
        self.check_target(settings)
        target = self._target_args(settings)
        port = (self.port or os.environ.get("TABULA_PORT") or settings.get("port")
                or find_port(serial_cfg.get("usb_ids", [])))
        self._run_pyocd(["load", *target, "--no-reset", "--format", "elf", str(elf)], "load")
        link = self._open(port, int(serial_cfg.get("baud", 115200)))
        try:
            self._run_pyocd(["reset", *target], "reset")
            yield link
        finally:
            link.close()

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

    def wait(self, timeout: float) -> None:
        """A board does not exit; the firmware parks after EOT. Nothing to wait for."""
        return None

    def stop(self) -> None:
        return None

    def describe(self) -> str:
        cmds = "; ".join(" ".join(c) for c in self.commands[-3:]) or "no pyocd command run"
        return f"board runner: {cmds}; log {self.log_path}"
