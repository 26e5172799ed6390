"""benchmarks/moleculenet/tree_weight.py: the classifier's outputs per tree weight, and the
weight its held-out molecules would choose, read from one fit."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from repo_scripts import REPO, load_script
from scipy.special import expit

from exlm_chem.model.molecule_model import PREDICT
from exlm_chem.sklearn.ensemble import TREE_WEIGHTS, mix
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier


@pytest.fixture(scope="module")
def study() -> ModuleType:
    return load_script("benchmarks/moleculenet/tree_weight.py")


@pytest.fixture(scope="module")
def fitted(study, params, moleculenet_dir):
    """The classifier with the study's tree head (0.4.0's: histogram boosting on the
    pooled state and RDKit 2D, no forest); CatBoost's test settings do not apply to it."""
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:30],
                                   np.flatnonzero(label == 1)[:30]]))
    smiles = [ds.smiles[i] for i in rows]
    y = label[rows].astype(int)
    settings = {k: v for k, v in params.items() if k != "tree_params"}
    est = ExLMMoleculeClassifier(**settings, **study.head_params()).fit(smiles, y)
    return est, smiles, y


def test_each_weight_averages_the_network_and_the_trees(study, fitted):
    est, smiles, _ = fitted
    inputs = est._prepared(smiles[:12], "raise")
    net = expit(est.model_.run(inputs.smiles, PREDICT, 32, None))  # [n, 1]
    trees = expit(est.tree_head_.decision(inputs.smiles, 32))
    out = study._weighted(est, inputs.smiles)
    assert list(out) == list(TREE_WEIGHTS)
    for w, proba in out.items():
        np.testing.assert_allclose(proba, mix(net, trees, w, "classification"), atol=1e-6)
    # the weight the estimator chose is its own prediction, and it is left as fitted
    fitted_weight = est.tree_weight_
    assert fitted_weight in TREE_WEIGHTS
    np.testing.assert_allclose(out[fitted_weight][:, 0], est.predict_proba(smiles[:12])[:, 1],
                               atol=1e-6)
    assert est.tree_weight_ == fitted_weight


def test_the_held_out_choice_and_the_report(study):
    def record(task, seed, test, auc, brier):
        keys = [str(w) for w in TREE_WEIGHTS]
        return {"task": task, "seed": seed, "test_roc_auc": dict(zip(keys, test, strict=True)),
                "held_out_roc_auc": dict(zip(keys, auc, strict=True)),
                "held_out_brier": dict(zip(keys, brier, strict=True))}

    a = record("bbbp", 0, [70, 72, 74, 73, 71], [80, 85, 85, 84, 82],
               [0.2, 0.18, 0.17, 0.16, 0.19])
    b = record("bbbp", 1, [60, 62, 64, 66, 68], [70, 71, 72, 73, 90],
               [0.3, 0.2, 0.2, 0.25, 0.3])
    assert study.chosen(a, "roc_auc") == "0.25"  # the first of equals
    assert study.chosen(a, "brier") == "0.75"
    assert study.chosen(b, "roc_auc") == "1.0"
    assert study.chosen(b, "brier") == "0.25"
    table = study.report([a, b])
    # bbbp: w=0.5 is (74 + 64) / 2; held-out ROC-AUC picks 72 and 68, Brier 73 and 62
    assert "| bbbp | 0 1 | 65.0 | 67.0 | 69.0 | 69.5 | 69.5 | 70.0 | 67.5 |" in table
    assert "bbbp/0: 0.25, bbbp/1: 1.0" in table


def test_a_tree_kinds_variant_refits_only_the_trees(study, fitted):
    from exlm_chem.data.descriptors import feature_names

    est, smiles, y = fitted
    canonical = est._prepared(smiles, "raise").smiles
    labels = y[:, None].astype(float)  # [n, 1], the labels the estimator was fitted on
    same, _, _ = study._refit_trees(est, canonical, labels, ("rdkit2d",))
    wider, features_cpu, trees_cpu = study._refit_trees(est, canonical, labels,
                                                        ("rdkit2d", "morgan"))
    d = est.config_.d_model
    assert same.trees.trees[0].n_features == d + len(feature_names("rdkit2d"))
    assert wider.trees.trees[0].n_features == (d + len(feature_names("rdkit2d"))
                                               + len(feature_names("morgan")))
    assert wider.features.kinds == ("rdkit2d", "morgan") and wider.model is est.tree_head_.model
    assert features_cpu >= 0 and trees_cpu > 0
    # the default kinds on the same rows, states and seed give the fitted head back
    np.testing.assert_allclose(same.decision(canonical[:12], 8),
                               est.tree_head_.decision(canonical[:12], 8), atol=1e-9)
    # the refitted head reads its own features: its outputs are finite for new molecules
    assert np.isfinite(wider.decision(canonical[:8], 8)).all()


def test_the_held_out_rule_is_the_estimators(study, fitted):
    est, smiles, _ = fitted
    canonical = est._prepared(smiles, "raise").smiles  # what fit splits by scaffold
    mask = study.held_out_mask(canonical, est.random_state, est.validation_fraction)
    assert 0 < mask.sum() < len(mask)
    np.testing.assert_array_equal(mask, est.held_out_mask_)
    assert not study.held_out_mask(canonical[:3], 0).any()  # 0.1 of 3 rounds to none


def test_the_random_rule_is_the_one_the_committed_outputs_were_made_with(study):
    assert (study.random_held_out_mask(10, 0).sum() == 1
            and not study.random_held_out_mask(3, 0).any())
    # kept outputs that stored the mask (0.4.0's estimator) give it back; those from before
    # the mask was stored (tree_kinds/outputs) were made with the same rule
    kept = np.load(REPO / "benchmarks/results/tree_weight_cpu/valid_part/outputs/bace_0.npz")
    np.testing.assert_array_equal(study.random_held_out_mask(len(kept["fit_rows"]), 0),
                                  kept["held_out_mask"])


def test_each_mix_averages_the_network_with_its_members(study):
    from scipy.special import logit

    network = logit(np.array([[0.2, 0.9], [0.6, 0.1]]))  # [n, T] logits
    logits = np.array([[0.0, np.log(3.0)], [-np.log(3.0), 0.0]])  # probabilities .5 .75 .25 .5
    forest = np.array([[0.1, 0.3], [0.7, 0.5]])
    out = study.mixes(network, logits, forest)
    assert list(out) == list(study.MIXES)
    np.testing.assert_allclose(out["trees"], [[0.35, 0.825], [0.425, 0.3]])
    np.testing.assert_allclose(out["forest"], [[0.15, 0.6], [0.65, 0.3]])
    np.testing.assert_allclose(out["trees+forest"], [[0.25, 0.7125], [0.5375, 0.3]])


def test_the_valid_part_is_scored_in_the_test_parts_place(study, moleculenet_dir):
    from exlm_chem.benchmark.tasks import load_task

    split = load_task("bace", "scaffold", 0)
    scored = study.scored_split("bace", 0, "valid")
    np.testing.assert_array_equal(scored.test, split.valid)  # scored: the validation part
    np.testing.assert_array_equal(scored.train, split.train)  # fitted: train alone
    assert scored.valid.size == 0
    np.testing.assert_array_equal(study.scored_split("bace", 0).test, split.test)
    with pytest.raises(ValueError, match="part must be one of"):
        study.scored_split("bace", 0, "train")
