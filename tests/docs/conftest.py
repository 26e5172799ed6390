"""Fixtures of the documentation tests: the molecules every example is fed."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="session")
def bbbp(moleculenet_dir) -> pd.DataFrame:
    """60 valid BBBP rows holding both classes (rows 300-359 of the file)."""
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz")
    return frame.iloc[300:360].reset_index(drop=True)
