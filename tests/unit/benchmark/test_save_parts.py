"""The members' outputs a benchmark cell keeps (``encoders.save_parts``): what another
weighting of network and trees is scored on without fitting again, for a cell scored on a
held-out valid part and for one fitted on all of ``train_val`` (its test part alone)."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.benchmark.encoders import save_parts
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.sklearn.ensemble import held_out_tree_weight, mix
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier


@pytest.fixture(scope="module")
def cell(tiny_checkpoint, moleculenet_dir):
    """A BBBP task of 60 fit, 12 valid and 12 test molecules, and a classifier fitted on
    the fit rows choosing its weight from (0.75, 1) on its own held-out molecules."""
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:42],
                                   np.flatnonzero(label == 1)[:42]]))
    order = np.random.default_rng(0).permutation(len(rows))
    data = TaskData("bbbp", [ds.smiles[i] for i in rows], label[rows][:, None],
                    train=order[:60], valid=order[60:72], test=order[72:])
    est = ExLMMoleculeClassifier(pretrained=str(tiny_checkpoint), epochs=2, batch_size=16,
                                 validation_fraction=0.25, random_state=0,
                                 tree_weight=(0.75, 1.0), tree_params={"iterations": 30})
    est.fit([data.smiles[i] for i in data.train], data.labels[data.train])
    return data, est


def _kept(path):
    with np.load(path) as stored:
        return {k: stored[k] for k in stored.files}


@pytest.mark.parametrize("held_out_valid", [True, False])
def test_the_kept_members_remake_the_estimators_predictions(cell, tmp_path, held_out_valid):
    data, est = cell
    data = data._replace(held_out_valid=held_out_valid)
    valid, test = save_parts(est, data, tmp_path / "parts" / "bbbp_seed1.npz")
    arrays = _kept(tmp_path / "parts" / "bbbp_seed1.npz")

    expected = est.predict_proba([data.smiles[i] for i in data.test])  # [n, 1]
    np.testing.assert_allclose(test, expected, rtol=1e-6, atol=1e-9)
    w = float(arrays["chosen_weight"])
    assert w == est.tree_weight_
    np.testing.assert_allclose(mix(arrays["test_network"], arrays["test_trees"], w,
                                   "classification"), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(arrays["test_labels"], data.labels[data.test])
    # what chose the weight is kept: the choice is made again from it alone
    assert held_out_tree_weight(arrays["held_out_network"], arrays["held_out_trees"],
                                arrays["held_out_labels"], "classification",
                                (0.75, 1.0)) == w
    if held_out_valid:
        np.testing.assert_allclose(
            valid, est.predict_proba([data.smiles[i] for i in data.valid]), rtol=1e-6,
            atol=1e-9)
        assert arrays["valid_network"].shape == (len(data.valid), 1)
    else:  # fitted on all of train_val: no valid part to keep
        assert valid is None
        assert not any(k.startswith("valid_") for k in arrays)
