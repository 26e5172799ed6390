"""The checkpoints shipped in models/: complete, small, and the estimators' offline default."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from exlm_chem import ExLMMoleculeClassifier, load_moleculenet
from exlm_chem.model.checkpoint import load_checkpoint

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize("name, objective", [("exlm-small", "exlm"), ("mlm-small", "mlm")])
def test_shipped_checkpoint_is_complete_and_under_20_mb(name, objective):
    directory = MODELS / name
    weights = directory / "model.safetensors"
    assert weights.stat().st_size <= 20 * 1024 * 1024
    _, config, meta = load_checkpoint(directory)
    assert config.objective == meta["objective"] == objective
    assert (config.n_layers, config.d_model, config.k_states) == (9, 256, 2)
    assert meta["dtype"] == "float16" and meta["steps"] > 0 and meta["tokens_seen"] > 0
    assert meta["last_validation"]["valid_invalid_paths"] == 0
    assert meta["hygiene"]["removed"] > 0
    assert meta["recipe"]["objective"] == objective and meta["cpu_seconds"] > 0
    card = (directory / "MODEL_CARD.md").read_text()
    assert "CPU-trained" in card and str(meta["steps"]) in card
    assert f"{meta['tokens_seen']:,}" in card and "CPU-hours" in card
    # the study probe beside its control and both baselines, every column measured
    for column in ("random-init control", "RF on ECFP4", "LR on RDKit 2D descriptors"):
        assert column in card
    assert "n/a" not in card


def test_classifier_without_arguments_starts_from_the_shipped_exlm_checkpoint(
    moleculenet_dir, monkeypatch
):
    monkeypatch.delenv("EXLM_CHEM_MODEL", raising=False)
    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))

    def no_network(*args, **kwargs):
        raise OSError("network access attempted")

    data = load_moleculenet("bbbp")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    clf = ExLMMoleculeClassifier()
    assert clf.get_params()["pretrained"] == "default"
    clf.set_params(epochs=1, batch_size=32, validation_fraction=0.0, random_state=0)
    rows = np.r_[0:48, 1990:2039]  # both classes
    clf.fit([data.smiles[i] for i in rows], data.labels[rows, 0])
    assert Path(clf.pretrained_source_) == MODELS / "exlm-small"
    proba = clf.predict_proba(["CCO", "not a smiles"])
    assert proba.shape == (2, 2) and np.isnan(proba[1]).all()
    meta = json.loads((MODELS / "exlm-small" / "metadata.json").read_text())
    assert clf.config_.d_model == 256 and meta["objective"] == "exlm"
