"""Import a script of the repository (benchmarks/, scripts/) that is not part of the package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The module in ``REPO / relative`` (e.g. ``"benchmarks/tdc/tdc_where.py"``), executed.

    Its folder is on ``sys.path`` while it executes, as when it runs as ``python
    benchmarks/GROUP/NAME.py`` (a benchmark imports its folder's helpers and siblings from
    there, e.g. ``_side_by_side`` or ``tdc_weights``).
    """
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module
