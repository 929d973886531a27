"""SCons tool: the host C compiler for the ``host`` board (``env['TABULA_BOARD']``).

Same common flags and defines as toolchain/arm_gnu.py; the program is a native executable that
speaks the protocol over stdin/stdout. ``$TABULA_HOST_CC`` overrides the compiler (default gcc).
"""
import os
import shutil

import SCons.Errors
from argv_actions import MAP_FLAG

from tabula.boards import C_STD, COMMON_CFLAGS, COMMON_LINKFLAGS, INSTALL_HINTS


def _compiler():
    return os.environ.get("TABULA_HOST_CC", "gcc")


def exists(env):
    return shutil.which(_compiler()) is not None


def generate(env):
    cc = _compiler()
    if shutil.which(cc) is None:
        raise SCons.Errors.UserError(f"{cc} not found; install it with: {INSTALL_HINTS['gcc']}")
    board = env["TABULA_BOARD"]
    for tool in ("gcc", "gnulink", "ar"):
        env.Tool(tool)
    env.Replace(CC=cc, LINK=cc, PROGSUFFIX="", TABULA_TOOL_BOARD=board.name)
    defines = [("TABULA_BOARD_NAME", '"%s"' % board.name),   # as gcc sees it: argv, no shell quoting
               ("TABULA_BOARD_TICK_HZ", "%du" % board.tick_hz)]
    if env.get("TABULA_PORTABLE"):
        defines.append(("TABULA_PORTABLE_ONLY", 1))
    env.Append(
        CFLAGS=[C_STD],
        CCFLAGS=COMMON_CFLAGS + list(board.cflags),
        CPPDEFINES=defines,
        LINKFLAGS=list(board.ldflags) + COMMON_LINKFLAGS + [MAP_FLAG],
    )
