"""SCons tool: Arm GNU toolchain (arm-none-eabi-gcc + newlib nano) for the board in
``env['TABULA_BOARD']`` (a :class:`tabula.boards.Board`).

Sets CC/AS/LINK/AR, the common tabula flags, the board's cflags/ldflags and linker script,
``TABULA_BOARD_NAME`` / ``TABULA_BOARD_TICK_HZ`` defines, the board.toml-generated defines
(``TABULA_UART_BASE``, ``TABULA_UART_CLOCK_HZ``, ``TABULA_UART_BAUD``, ``TABULA_N_IRQS``), and
``TABULA_PORTABLE_ONLY=1`` when ``env['TABULA_PORTABLE']`` is set. ``boards/_shared`` is on the
include path and the linker search path (its ``cortex_m_sections.ld`` is INCLUDEd by board
linker scripts). Programs get the suffix ``.elf`` and a ``.map`` beside them.
"""
import shutil
import subprocess

import SCons.Errors

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
        + ["-Wl,-Map=${TARGET.base}.map", "-Wl,--print-memory-usage", "-L" + str(shared_dir())],
    )
    if board.linker_script is not None:
        env.Append(LINKFLAGS=["-T" + str(board.linker_script)])


def _defines(env, board):
    defines = [("TABULA_BOARD_NAME", '\\"%s\\"' % board.name),
               ("TABULA_BOARD_TICK_HZ", "%du" % board.tick_hz)]
    defines += list(board.defines()) if hasattr(board, "defines") else []
    if env.get("TABULA_PORTABLE"):
        defines.append(("TABULA_PORTABLE_ONLY", 1))
    return defines
