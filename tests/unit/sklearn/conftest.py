"""What the estimator tests share: small, fast settings on the tiny test checkpoint."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def params(tiny_checkpoint):
    return dict(pretrained=str(tiny_checkpoint), epochs=2, batch_size=16, lr=1e-3,
                validation_fraction=0.25, random_state=0,
                tree_params={"iterations": 30})  # CatBoost: as many trees as a test needs
