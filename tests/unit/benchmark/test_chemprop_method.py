"""chemprop as a benchmark row, on a tiny BBBP/ESOL subset (seconds, not minutes).

Skipped only where chemprop is not installed (it is in the baselines and dev extras,
so CI runs it)."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import TaskData

chemprop = pytest.importorskip("chemprop", reason="chemprop v2 is not installed "
                               "(pip install 'exlm_chem[baselines]')")

from exlm_chem.benchmark.chemprop_method import chemprop_method  # noqa: E402
from exlm_chem.benchmark.methods import build_methods  # noqa: E402


def _subset(name: str, n: int, task_type: str, tasks: int = 1) -> TaskData:
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet(name)
    labels = np.asarray(data.labels[:n, :tasks], dtype=np.float64)
    rows = np.arange(n)
    return TaskData(name, data.smiles[:n], labels, rows[: n - 17], rows[n - 17 : n - 8],
                    rows[n - 8 :], data.sha256, task_type)


def test_multitask_classification_with_missing_labels_is_reproducible() -> None:
    data = _subset("tox21", 81, "classification", tasks=3)
    assert np.isnan(data.labels[data.train]).any()  # chemprop masks these itself
    out = chemprop_method(data, seed=0, budget=Budget(max_epochs=2))
    assert out.test_scores.shape == (8, 3)  # a last batch of one is still predicted
    assert ((out.test_scores > 0) & (out.test_scores < 1)).all()
    assert out.epochs == 2 and out.best_epoch in (1, 2) and not out.stopped_early
    assert out.settings["chemprop_version"] == chemprop.__version__
    assert out.settings["depth"] == 3 and out.settings["epochs"] == 50
    again = chemprop_method(data, seed=0, budget=Budget(max_epochs=2))
    np.testing.assert_allclose(again.test_scores, out.test_scores, rtol=1e-6)
    other = chemprop_method(data, seed=1, budget=Budget(max_epochs=2))
    assert not np.allclose(other.test_scores, out.test_scores)


def test_regression_predicts_in_label_units() -> None:
    data = _subset("esol", 65, "regression")
    out = chemprop_method(data, seed=0, budget=Budget(max_epochs=3))
    assert out.test_scores.shape == (8, 1) and np.isfinite(out.test_scores).all()
    mean, spread = data.labels[data.train].mean(), data.labels[data.train].std()
    # unscaled: near the training labels' mean (a standardised output would sit near 0)
    assert abs(out.test_scores.mean() - mean) < 1.5 * spread
    assert abs(mean) > 1.5  # ESOL's log-solubilities: the check above can fail
    # the kept epoch's validation predictions, also unscaled, for conformal calibration
    assert out.valid_scores.shape == (9, 1) and np.isfinite(out.valid_scores).all()
    assert abs(out.valid_scores.mean() - mean) < 1.5 * spread


def test_row_label_and_protocol_carry_the_version() -> None:
    (spec,) = build_methods(["chemprop"], None, None, "finetune",
                            budget=Budget(max_epochs=20))
    assert spec.label == f"chemprop {chemprop.__version__} [<=20 ep]"
    assert spec.uses_budget and spec.mode == "supervised"
    _, settings = spec.protocol("bace", Budget(max_epochs=20))
    assert settings["chemprop_version"] == chemprop.__version__
