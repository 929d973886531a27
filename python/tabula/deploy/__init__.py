"""Run firmware and talk to it: the wire protocol, links, sessions, runners.

    result = run_on_board("build/corstone300/mnist/firmware.elf", "corstone300", samples)
    result.outputs[i][j]   # bytes of output j for sample i
    result.ticks[i]        # ticks spent in tabula_model_run for sample i
    result.link_stats()    # frames sent / received / damaged / retried (results.json "link")

``TABULA_LINK_FAULTS=rate[:seed[:kinds]]`` (e.g. ``1e-2:7``) makes every run_on_board damage its
link on purpose (tabula.deploy.faults): a way to see the retry protocol work on a real run.
"""

from __future__ import annotations

import os
from pathlib import Path

from .runners import get_runner
from .runners._process import Runner, RunnerError, runner_settings
from .faults import FaultSpec, FaultyLink, summarize
from .session import (
    MAX_RETRIES,
    DeviceError,
    DeviceReset,
    DeviceTimeout,
    InputSizeMismatch,
    LinkError,
    SessionError,
    SessionResult,
    run_session,
)

EXIT_WAIT_S = 10.0
DEFAULT_TIMEOUT_S = 120.0

FAULTS_ENV = "TABULA_LINK_FAULTS"

__all__ = ["run_on_board", "run_session", "SessionResult", "SessionError", "DeviceError",
           "DeviceTimeout", "DeviceReset", "LinkError", "InputSizeMismatch", "RunnerError",
           "get_runner", "Runner", "FaultSpec", "FaultyLink"]


def run_on_board(elf_path: str | os.PathLike, board_name: str, inputs: list[bytes],
                 runner: str | None = None, timeout_s: float | None = None,
                 log_path: str | os.PathLike | None = None,
                 expect_input_bytes: list[int] | None = None,
                 port: str | None = None, faults: FaultSpec | str | None = None,
                 max_retries: int = MAX_RETRIES, probe: str | None = None) -> SessionResult:
    """Start ``elf_path`` with the board's runner, run every sample, return the results.

    ``runner`` defaults to the board's choice (:meth:`tabula.boards.Board.pick_runner`: the
    first installed of ``[runner] prefer``, else ``default``); ``timeout_s`` to the runner's
    ``timeout_s`` (each wait: boot, every sample, the final status). ``port`` is the serial port
    and ``probe`` the debug probe (pyocd unique id; default ``$TABULA_PROBE``, else the one connected)
    for the ``board`` runner.  Every process a runner starts ends with this one (:mod:`tabula.procs`). ``log_path`` receives the raw UART transcript (default
    ``<elf dir>/run.log``); the runner's own output goes beside it as ``<log stem>.<runner>.log``.
    Session errors carry the results received so far (``err.partial``) and get the runner's log
    tail as a note, and the runner's word on which step stalled (:meth:`Runner.explain`) on their first
    line. Where the runner's process exit code is the firmware's (QEMU, host), it must equal the exit
    code in STATUS.

    ``faults`` (a FaultSpec or its ``rate[:seed[:kinds]]`` text; default ``$TABULA_LINK_FAULTS``)
    puts a FaultyLink between the host and the device; what it injected lands in
    ``result.injected`` (both directions added up). ``max_retries``: per request, see run_session.
    """
    from tabula.boards import load_board

    if faults is None and os.environ.get(FAULTS_ENV):
        faults = os.environ[FAULTS_ENV]
    if isinstance(faults, str):
        faults = FaultSpec.parse(faults)

    board = load_board(board_name)
    pick = getattr(board, "pick_runner", None)
    name = pick(runner) if pick else (runner or (getattr(board, "runner", None) or {}).get("default", "qemu"))
    settings = runner_settings(board, name)
    if timeout_s is None:
        timeout_s = float(settings.get("timeout_s", DEFAULT_TIMEOUT_S))
    boot_s = (getattr(board, "serial", None) or {}).get("boot_s")
    log_path = Path(log_path) if log_path is not None else Path(elf_path).parent / "run.log"
    proc_log = log_path.with_name(f"{log_path.stem}.{name}.log")

    options = {k: v for k, v in (("port", port), ("probe", probe)) if v}
    run = get_runner(name)(log_path=proc_log, **options)
    reports_exit = getattr(run, "REPORTS_EXIT_CODE", True)
    try:
        with run.start(elf_path, board) as link:
            if faults is not None:
                link = FaultyLink(link, faults)
            try:
                result = run_session(link, inputs, timeout_s=timeout_s,
                                     expect_input_bytes=expect_input_bytes, log=log_path,
                                     hello_timeout_s=float(boot_s) if boot_s else None,
                                     max_retries=max_retries)
            except SessionError as e:
                if faults is not None:
                    e.partial.injected = _injected(faults, link)
                if e.partial.exit_code is not None:  # it sent STATUS: let it exit on its own
                    try:
                        e.partial.process_exit_code = run.wait(EXIT_WAIT_S)
                    except RunnerError:
                        pass
                raise
            if faults is not None:
                result.injected = _injected(faults, link)
            try:
                result.process_exit_code = run.wait(EXIT_WAIT_S)
            except RunnerError as e:
                raise DeviceTimeout(f"session finished but {e}", result) from e
    except SessionError as e:
        hint = run.explain(e) if hasattr(run, "explain") else None
        if hint and e.args:
            e.args = (f"{e.args[0]}; {hint}",) + tuple(e.args[1:])
        e.add_note(run.describe())
        raise
    if reports_exit and result.process_exit_code != result.exit_code:
        raise DeviceError(f"device reported exit code {result.exit_code} but the {name} "
                          f"process exited with {result.process_exit_code}\n{run.describe()}",
                          result)
    result.runner = name
    return result


def _injected(spec: FaultSpec, link: FaultyLink) -> dict:
    """What a FaultyLink did: its spec, both directions added up, and each direction."""
    return {"spec": str(spec), **summarize(link.stats), "by_direction": link.stats}
