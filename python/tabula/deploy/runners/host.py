"""Run the host build of the firmware (a native executable) with the link on its stdin/stdout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..link import Link, PipeLink
from ._process import Runner as _Runner
from ._process import RunnerError, check_elf_for

NAME = "host"


class Runner(_Runner):
    NAME = NAME

    def firmware(self, elf_path) -> Path:
        exe = Path(elf_path).resolve()
        if not exe.is_file() or not os.access(exe, os.X_OK):
            raise RunnerError(f"host runner: {exe} is not an executable file")
        check_elf_for(exe, NAME)
        return exe

    def open(self, exe: Path, board=None) -> Link:
        proc = self.spawn([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return PipeLink(proc.stdin, proc.stdout)
