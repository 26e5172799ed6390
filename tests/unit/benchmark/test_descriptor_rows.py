"""The benchmark's descriptor rows on a small BBBP/ESOL subset: RF on RDKit 2D, an encoder
with descriptors beside it (probe, fine-tune, estimator defaults), chemprop + descriptors."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem import __version__
from exlm_chem.benchmark import features as bench_features
from exlm_chem.benchmark.methods import METHODS, build_methods
from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.data.descriptors import rdkit2d_names

pytestmark = pytest.mark.usefixtures("few_catboost_trees")


def _subset(name: str, n: int, task_type: str) -> TaskData:
    """n molecules; classification: both classes alternating, so every part has both."""
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet(name)
    picked = np.arange(n)
    if task_type == "classification":
        label = data.labels[:, 0]
        picked = np.stack([np.flatnonzero(label == 0)[: n // 2],
                           np.flatnonzero(label == 1)[: n // 2]], axis=1).ravel()
    rows = np.arange(n)
    labels = np.asarray(data.labels[picked, :1], dtype=np.float64)
    return TaskData(name, [data.smiles[i] for i in picked], labels, rows[: n - 24],
                    rows[n - 24 : n - 12], rows[n - 12 :], data.sha256, task_type)


@pytest.fixture(scope="module")
def bbbp() -> TaskData:
    data = _subset("bbbp", 96, "classification")
    assert np.unique(data.labels[data.test]).size == 2
    return data


def _spec(name: str, checkpoint, mode: str = "finetune"):
    (spec,) = build_methods([name], checkpoint, None, mode, budget=Budget(max_epochs=1))
    return spec


def test_new_rows_are_opt_in():
    assert METHODS[:4] == ("exlm", "twin", "rf", "attentivefp")  # the default rows
    with pytest.raises(ValueError, match="'exlm_defaults' needs --model"):
        build_methods(["exlm_defaults"], None, None, "finetune")


def test_task_features_are_computed_once_per_task(bbbp, monkeypatch):
    from exlm_chem.data import descriptors

    calls = []
    real = descriptors._compute
    monkeypatch.setattr(descriptors, "_compute",
                        lambda kind, smiles: calls.append(kind) or real(kind, smiles))
    monkeypatch.setattr(descriptors, "MEMO", descriptors.RowMemo(0))  # counts the task caches
    bench_features._cache.clear()
    first = bench_features.scaled_task_features(bbbp, ["rdkit2d"])
    again = bench_features.scaled_task_features(bbbp._replace(train=bbbp.train[:10]),
                                                ["rdkit2d"])
    assert calls == ["rdkit2d"] and first.shape == (96, len(rdkit2d_names()))
    assert not np.allclose(first, again)  # scaled per cell, on that cell's training rows
    assert np.isfinite(first).all() and np.abs(first).max() <= 5.0


def test_task_features_are_kept_on_disk_between_runs(bbbp, tmp_path, monkeypatch):
    from exlm_chem.data import descriptors

    calls = []
    real = descriptors._compute
    monkeypatch.setattr(descriptors, "_compute",
                        lambda kind, smiles: calls.append(len(smiles)) or real(kind, smiles))
    monkeypatch.setattr(descriptors, "MEMO", descriptors.RowMemo(0))  # counts the task caches
    bench_features._cache.clear()
    first = bench_features.task_features(bbbp, "rdkit2d", cache_dir=tmp_path)
    (stored,) = tmp_path.glob("bbbp_rdkit2d_*.npz")
    with np.load(stored, allow_pickle=False) as arrays:  # no pickle needed to read it
        np.testing.assert_array_equal(arrays["values"], first)
    bench_features._cache.clear()  # a new run: only the disk remembers
    spec = build_methods(["rf_rdkit2d"], None, None, "finetune", feature_cache=tmp_path)[0]
    assert np.isfinite(spec.run(bbbp, 0, Budget(), False).test_scores).all()
    again = bench_features.task_features(bbbp, "rdkit2d", cache_dir=tmp_path)
    assert calls == [96]
    np.testing.assert_array_equal(again, first)

    changed = bbbp._replace(smiles=["CCO", *bbbp.smiles[1:]])  # another molecule
    bench_features.task_features(changed, "rdkit2d", cache_dir=tmp_path)
    bench_features.task_features(bbbp._replace(data_sha256="0" * 64), "rdkit2d",
                                 cache_dir=tmp_path)  # another data file
    monkeypatch.setattr(descriptors, "rdkit_version", lambda: "1999.09.1")  # another RDKit
    bench_features.task_features(bbbp, "rdkit2d", cache_dir=tmp_path)
    assert calls == [96] * 4 and len(list(tmp_path.glob("*.npz"))) == 4


def test_rf_on_rdkit2d(bbbp):
    spec = _spec("rf_rdkit2d", None)
    assert (spec.method, spec.label, spec.uses_budget) == ("rf_rdkit2d", "RF on RDKit 2D", False)
    out = spec.run(bbbp, 0, Budget(), False)
    assert out.test_scores.shape == (12, 1) and np.isfinite(out.test_scores).all()
    _, settings = spec.protocol("bbbp", Budget())
    assert settings["features"] == ["rdkit2d"] and "n_bits" not in settings
    assert out.settings["rdkit_version"] == settings["rdkit_version"]
    _, ecfp = _spec("rf", None).protocol("bbbp", Budget())
    assert "features" not in ecfp and ecfp["n_bits"] == 2048  # old cells keep their key


def test_gradient_boosting_on_morgan_counts_and_rdkit2d(bbbp, tmp_path):
    from exlm_chem.data.descriptors import MORGAN_BITS

    spec = build_methods(["gbt"], None, None, "finetune", feature_cache=tmp_path)[0]
    assert (spec.method, spec.uses_budget) == ("gbt", False)
    out = spec.run(bbbp, 0, Budget(), False)
    assert out.test_scores.shape == (12, 1)
    assert ((out.test_scores >= 0) & (out.test_scores <= 1)).all()
    _, settings = spec.protocol("bbbp", Budget())
    assert settings == out.settings and settings["features"] == ["morgan", "rdkit2d"]
    assert settings["estimator"] == "HistGradientBoostingClassifier"
    # both feature sets of the task stay in memory together, and on disk
    assert {k[0] for k in bench_features._cache} == {"morgan", "rdkit2d"}
    assert len(list(tmp_path.glob("bbbp_morgan_*.npz"))) == 1
    x = bench_features.scaled_task_features(bbbp, ["morgan", "rdkit2d"], tmp_path)
    assert x.shape[1] == MORGAN_BITS + len(rdkit2d_names())


@pytest.mark.parametrize("mode", ["probe", "finetune"])
def test_encoder_with_rdkit2d_beside_its_state(bbbp, tiny_checkpoint, mode):
    spec = _spec("exlm_rdkit2d", tiny_checkpoint, mode)
    assert spec.label.endswith(f"({mode}) + RDKit 2D" + (" [<=1 ep]" if mode != "probe"
                                                          else ""))
    out = spec.run(bbbp, 0, Budget(max_epochs=1), False)
    assert out.test_scores.shape == (12, 1) and np.isfinite(out.test_scores).all()
    assert out.settings["features"] == ["rdkit2d"]
    plain = _spec("exlm", tiny_checkpoint, mode)
    assert "features" not in plain.protocol("bbbp", Budget(max_epochs=1))[1]
    assert spec.protocol("bbbp", Budget(max_epochs=1))[1]["features"] == ["rdkit2d"]
    without = plain.run(bbbp, 0, Budget(max_epochs=1), False)
    assert not np.allclose(without.test_scores, out.test_scores)


@pytest.mark.parametrize("name", ["exlm_defaults", "exlm_defaults_rdkit2d"])
def test_estimator_defaults_rows(bbbp, tiny_checkpoint, name):
    spec = _spec(name, tiny_checkpoint)
    assert f"(estimator {__version__} defaults)" in spec.label and spec.uses_budget
    out = spec.run(bbbp, 0, Budget(max_epochs=1), False)
    assert out.test_scores.shape == (12, 1)
    assert ((out.test_scores > 0) & (out.test_scores < 1)).all()
    assert out.epochs == 1 and out.settings["epochs"] == 1 and out.settings["patience"] == 5
    assert (out.settings.get("features") == ["rdkit2d"]) == name.endswith("rdkit2d")


def test_estimator_defaults_on_a_regression_set(tiny_checkpoint):
    data = _subset("esol", 80, "regression")
    spec = _spec("exlm_defaults", tiny_checkpoint)
    assert "RDKit 2D" not in spec.label  # the regressor's own default, not the row's choice
    # the cell's key names the descriptors the regressor reads by default
    assert spec.protocol("esol", Budget(max_epochs=1))[1]["features"] == ["rdkit2d"]
    out = spec.run(data, 0, Budget(max_epochs=1), False)
    assert out.test_scores.shape == (12, 1) and np.isfinite(out.test_scores).all()
    assert out.settings["estimator"] == "ExLMMoleculeRegressor"
    assert out.settings["features"] == ["rdkit2d"]
    with_rdkit = _spec("exlm_defaults_rdkit2d", tiny_checkpoint).run(
        data, 0, Budget(max_epochs=1), False)
    np.testing.assert_allclose(with_rdkit.test_scores, out.test_scores, rtol=1e-5)


def test_chemprop_with_its_descriptor_featurizer(bbbp):
    pytest.importorskip("chemprop")
    from exlm_chem.benchmark.chemprop_features import descriptor_featurizer

    spec = _spec("chemprop_rdkit2d", None)
    assert spec.method == "chemprop_rdkit2d" and "+ RDKit 2D" in spec.label
    out = spec.run(bbbp, 0, Budget(max_epochs=1), False)
    assert out.test_scores.shape == (12, 1) and np.isfinite(out.test_scores).all()
    assert out.settings["descriptors"] == descriptor_featurizer()[0]
    assert spec.protocol("bbbp", Budget())[1]["descriptors"] == descriptor_featurizer()[0]


def test_chemprop_descriptors_on_regression_keep_label_units():
    pytest.importorskip("chemprop")
    from exlm_chem.benchmark.chemprop_method import chemprop_method

    data = _subset("esol", 80, "regression")
    out = chemprop_method(data, 0, Budget(max_epochs=2), features="rdkit2d")
    mean, spread = data.labels[data.train].mean(), data.labels[data.train].std()
    for scores in (out.test_scores, out.valid_scores):  # valid: read unscaled, as test
        assert np.isfinite(scores).all() and abs(scores.mean() - mean) < 1.5 * spread


def test_chemprop_descriptors_are_computed_once_per_feature_cache(bbbp, tmp_path, monkeypatch):
    pytest.importorskip("chemprop")
    import importlib

    cells = importlib.import_module("exlm_chem.benchmark.chemprop_features")
    (spec,) = build_methods(["chemprop_rdkit2d"], None, None, "finetune",
                            budget=Budget(max_epochs=1), feature_cache=tmp_path)
    bench_features._cache.clear()  # whatever ran before in this process: computed here
    first = spec.run(bbbp, 0, Budget(max_epochs=1), False)
    (stored,) = tmp_path.glob("bbbp_chemprop_*.npz")
    bench_features._cache.clear()  # a later run: another process with the same OUT folder

    def refuse(smiles):
        raise AssertionError("computed again although the cache holds them")

    monkeypatch.setattr(cells, "_descriptors", refuse)
    again = spec.run(bbbp, 0, Budget(max_epochs=1), False)
    np.testing.assert_allclose(again.test_scores, first.test_scores, rtol=1e-6)
    other = bbbp._replace(smiles=bbbp.smiles[::-1], labels=bbbp.labels[::-1])
    with pytest.raises(AssertionError, match="computed again"):
        spec.run(other, 0, Budget(max_epochs=1), False)  # other molecules: another key
    assert stored.is_file()
