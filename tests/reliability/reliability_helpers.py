"""Helpers shared by the reliability tests (imported as a plain module)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "exlm_chem.cli"]


def debris(directory: Path) -> list[str]:
    """Hidden temporaries left beside saved files (names starting with '.')."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith("."))


def cli_env() -> dict[str, str]:
    """Environment for ``python -m exlm_chem.cli`` subprocesses running this checkout."""
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
            "TRITON_INTERPRET": "1"}

