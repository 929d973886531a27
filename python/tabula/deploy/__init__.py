"""Run firmware and talk to it: the wire protocol, links, sessions, runners.

    result = run_on_board("build/corstone300/mnist/firmware.elf", "corstone300", samples)
    result.outputs[i][j]   # bytes of output j for sample i
    result.ticks[i]        # ticks spent in tabula_model_run for sample i
"""

from __future__ import annotations

import os
from pathlib import Path

from .runners import get_runner
from .runners._process import RunnerError, runner_settings
from .session import (
    DeviceError,
    DeviceReset,
    DeviceTimeout,
    InputSizeMismatch,
    SessionError,
    SessionResult,
    run_session,
)

EXIT_WAIT_S = 10.0
DEFAULT_TIMEOUT_S = 120.0

__all__ = ["run_on_board", "run_session", "SessionResult", "SessionError", "DeviceError",
           "DeviceTimeout", "DeviceReset", "InputSizeMismatch", "RunnerError", "get_runner"]


def run_on_board(elf_path: str | os.PathLike, board_name: str, inputs: list[bytes],
                 runner: str | None = None, timeout_s: float | None = None,
                 log_path: str | os.PathLike | None = None,
                 expect_input_bytes: list[int] | None = None,
                 port: str | None = None) -> SessionResult:
    """Start ``elf_path`` with the board's runner, run every sample, return the results.

    ``runner`` defaults to the board's choice (:meth:`tabula.boards.Board.pick_runner`: the
    first installed of ``[runner] prefer``, else ``default``); ``timeout_s`` to the runner's
    ``timeout_s`` (each wait: boot, every sample, the final status). ``port`` is the serial port
    for the ``board`` runner. ``log_path`` receives the raw UART transcript (default
    ``<elf dir>/run.log``); the runner's own output goes beside it as ``<log stem>.<runner>.log``.
    Session errors carry the results received so far (``err.partial``) and get the runner's log
    tail as a note. Where the runner's process exit code is the firmware's (QEMU, host), it must
    equal the exit code in STATUS.
    """
    from tabula.boards import load_board

    board = load_board(board_name)
    pick = getattr(board, "pick_runner", None)
    name = pick(runner) if pick else (runner or (getattr(board, "runner", None) or {}).get("default", "qemu"))
    settings = runner_settings(board, name)
    if timeout_s is None:
        timeout_s = float(settings.get("timeout_s", DEFAULT_TIMEOUT_S))
    boot_s = (getattr(board, "serial", None) or {}).get("boot_s")
    log_path = Path(log_path) if log_path is not None else Path(elf_path).parent / "run.log"
    proc_log = log_path.with_name(f"{log_path.stem}.{name}.log")

    options = {"port": port} if port else {}
    run = get_runner(name)(log_path=proc_log, **options)
    reports_exit = getattr(run, "REPORTS_EXIT_CODE", True)
    try:
        with run.start(elf_path, board) as link:
            try:
                result = run_session(link, inputs, timeout_s=timeout_s,
                                     expect_input_bytes=expect_input_bytes, log=log_path,
                                     hello_timeout_s=float(boot_s) if boot_s else None)
            except SessionError as e:
                if e.partial.exit_code is not None:  # it sent STATUS: let it exit on its own
                    try:
                        e.partial.process_exit_code = run.wait(EXIT_WAIT_S)
                    except RunnerError:
                        pass
                raise
            try:
                result.process_exit_code = run.wait(EXIT_WAIT_S)
            except RunnerError as e:
                raise DeviceTimeout(f"session finished but {e}", result) from e
    except SessionError as e:
        e.add_note(run.describe())
        raise
    if reports_exit and result.process_exit_code != result.exit_code:
        raise DeviceError(f"device reported exit code {result.exit_code} but the {name} "
                          f"process exited with {result.process_exit_code}\n{run.describe()}",
                          result)
    result.runner = name
    return result
