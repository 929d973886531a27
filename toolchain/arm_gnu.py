"""SCons tool: Arm GNU toolchain (arm-none-eabi-gcc + newlib nano) for the board in
``env['TABULA_BOARD']`` (a :class:`tabula.boards.Board`).

Sets CC/AS/LINK/AR, the common tabula flags, the board's cflags/ldflags and linker script,
``TABULA_BOARD_NAME`` / ``TABULA_BOARD_TICK_HZ`` defines, the board.toml-generated defines
(``TABULA_UART_BASE``, ``TABULA_UART_CLOCK_HZ``, ``TABULA_UART_BAUD``, ``TABULA_N_IRQS``), and
``TABULA_PORTABLE_ONLY=1`` when ``env['TABULA_PORTABLE']`` is set. ``boards/_shared`` is on the
include path and the linker search path (its ``cortex_m_sections.ld`` is INCLUDEd by board
linker scripts). Programs get the suffix ``.elf`` and a ``.map`` beside them.

A link that overflows a region (the code outgrew codegen's ``code_bytes`` estimate: codegen itself
refuses a model whose constants or arena do not fit, before anything is compiled) ends in one
``tabula: error:`` line naming the board.toml region, the bytes needed and the budget
(:func:`tabula.memory.linker_overflow_line`) instead of the linker's raw messages.
"""
import shutil
import subprocess

import SCons.Errors
from argv_actions import MAP_FLAG

from tabula.boards import C_STD, COMMON_CFLAGS, COMMON_LINKFLAGS, INSTALL_HINTS, shared_dir

PREFIX = "arm-none-eabi-"
GCC = PREFIX + "gcc"


def _problem():
    """None when the toolchain is usable, else one line: what is missing and how to install it."""
    if shutil.which(GCC) is None:
        return f"{GCC} not found; install it with: {INSTALL_HINTS[GCC]}"
    specs = subprocess.run([GCC, "-print-file-name=nano.specs"], capture_output=True, text=True)
    if specs.returncode != 0 or specs.stdout.strip() == "nano.specs":
        return f"newlib for {GCC} not found (no nano.specs); install it with: {INSTALL_HINTS[GCC]}"
    return None


def exists(env):
    return _problem() is None


def generate(env):
    problem = _problem()
    if problem:
        raise SCons.Errors.UserError(problem)
    board = env["TABULA_BOARD"]
    for tool in ("gcc", "gnulink", "gas", "ar"):
        env.Tool(tool)
    env.Replace(
        CC=GCC, AS=GCC, LINK=GCC, AR=PREFIX + "ar", RANLIB=PREFIX + "ranlib",
        OBJCOPY=PREFIX + "objcopy", SIZE=PREFIX + "size",
        PROGSUFFIX=".elf", TABULA_TOOL_BOARD=board.name,
    )
    env.Append(
        CFLAGS=[C_STD],
        CCFLAGS=COMMON_CFLAGS + list(board.cflags),
        ASFLAGS=list(board.cflags),
        CPPDEFINES=_defines(env, board),
        CPPPATH=[str(shared_dir())],
        LINKFLAGS=list(board.ldflags) + COMMON_LINKFLAGS
        + [MAP_FLAG, "-L" + str(shared_dir())],  # no --print-memory-usage: the stack at the top of RAM shows
        # RAM 100 % used there; the results name each region's real use (memory itcm / dtcm ...)
    )
    if board.linker_script is not None:
        env.Append(LINKFLAGS=["-T" + str(board.linker_script)])
    # the link (toolchain/argv_actions.py) captures ld's output and names an overflowing region in one line
    env["TABULA_MEMORY_MAP"] = board.memory


def _defines(env, board):
    """The defines every object gets, as (name, value) with the value as the compiler must see it
    (arguments go to gcc as a list: no shell quoting)."""
    defines = [("TABULA_BOARD_NAME", '"%s"' % board.name),
               ("TABULA_BOARD_TICK_HZ", "%du" % board.tick_hz)]
    defines += list(board.defines()) if hasattr(board, "defines") else []
    if env.get("TABULA_PORTABLE"):
        defines.append(("TABULA_PORTABLE_ONLY", 1))
    return defines
