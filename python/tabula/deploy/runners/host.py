"""Run the host build of the firmware (a native executable) with the link on its stdin/stdout."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator

from ..link import Link, PipeLink
from ._process import ProcessRunner, RunnerError, check_elf_for

NAME = "host"


class Runner(ProcessRunner):
    NAME = NAME

    @contextlib.contextmanager
    def start(self, elf_path: str | os.PathLike, board=None) -> Iterator[Link]:
        exe = Path(elf_path).resolve()
        if not exe.is_file() or not os.access(exe, os.X_OK):
            raise RunnerError(f"host runner: {exe} is not an executable file")
        check_elf_for(exe, NAME)
        proc = self._spawn([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        link = PipeLink(proc.stdin, proc.stdout)
        try:
            yield link
        finally:
            link.close()
            self.stop()
