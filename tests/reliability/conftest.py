"""Fixtures of the reliability suite: a small fitted model and helpers to look for debris."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def bbbp_rows(moleculenet_dir):
    """32 BBBP molecules (16 per class) and their 0/1 labels."""
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:16],
                                   np.flatnonzero(label == 1)[:16]]))
    return [ds.smiles[i] for i in rows], label[rows].astype(int)


@pytest.fixture(scope="session")
def fitted_classifier(tiny_checkpoint, bbbp_rows):
    """A classifier fine-tuned for one epoch from the tiny checkpoint."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    X, y = bbbp_rows
    return ExLMMoleculeClassifier(str(tiny_checkpoint), epochs=1, batch_size=16,
                                  validation_fraction=0, random_state=0, device="cpu").fit(X, y)


@pytest.fixture(scope="session")
def saved_classifier(fitted_classifier, tmp_path_factory) -> Path:
    return fitted_classifier.save(tmp_path_factory.mktemp("saved") / "clf")


@pytest.fixture
def model_copy(tmp_path):
    """Copy a saved model directory into this test's folder (so it can be damaged)."""

    def copy(source: Path, name: str = "model") -> Path:
        return Path(shutil.copytree(source, tmp_path / name))

    return copy
