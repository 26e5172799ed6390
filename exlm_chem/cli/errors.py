"""How the command line reports failures.

A problem with the user's files or inputs (any :class:`~exlm_chem.errors.ExlmChemError`,
and the ``ValueError``, ``TypeError`` and ``OSError`` that name what is wrong) is printed
as one line, ``exlm-chem: error: ...``, with exit code 2, the code argparse uses for bad
arguments. Anything else is a bug and keeps its traceback. ``exlm-chem --debug ...``
shows the traceback of every error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from exlm_chem.errors import ExlmChemError

USER_ERRORS = (ExlmChemError, ValueError, TypeError, OSError)
DEBUG_FLAG = "--debug"
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C


def one_line(error: BaseException) -> str:
    """The error's message on one line (a multi-line message joined with "; ")."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


def run_console(main: Callable[[Sequence[str] | None], int],
                argv: Sequence[str] | None = None) -> int:
    """Run ``main(argv)`` and turn user errors into one line and exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    try:
        return main(argv)
    except KeyboardInterrupt:
        if debug:
            raise
        print("exlm-chem: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except USER_ERRORS as error:
        if debug:
            raise
        print(f"exlm-chem: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
