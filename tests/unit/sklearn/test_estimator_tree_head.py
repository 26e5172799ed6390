"""The estimators' tree head and head-first fine-tuning (LP-FT).

The tree head reads the pre-trained encoder (not the fine-tuned one), is half of every
classifier output (or ``tree_weight`` of it; the regressor's held-out molecules choose the
weight), and travels through save/load and pickling without being unpickled; ``head_first``
fits the head on the frozen states before the encoder moves.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from scipy.special import expit, logit
from sklearn.base import clone

from exlm_chem.errors import CheckpointError
from exlm_chem.model.molecule_model import EMBED, PREDICT
from exlm_chem.model.tree_head import FOREST_SETTINGS
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor
from exlm_chem.sklearn.held_out import TREE_WEIGHTS, held_out_split, held_out_tree_weight


@pytest.fixture(scope="module")
def data(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:40],
                                   np.flatnonzero(label == 1)[:40]]))
    return [ds.smiles[i] for i in rows], label[rows].astype(int)


@pytest.fixture(scope="module")
def fitted(params, data):
    X, y = data  # the boosted trees alone: the forest has its fixture below
    return ExLMMoleculeClassifier(**params, tree_forest=False).fit(X, y)


def _net_and_trees(est, X):
    inputs = est._prepared(X, "raise")
    net = est.model_.run(inputs.smiles, PREDICT, 32, inputs.features)  # [n, T] logits
    return net, est.tree_head_.decision(inputs.smiles, 32)


def test_the_tree_head_is_half_of_each_probability(fitted, data):
    X, _ = data
    net, trees = _net_and_trees(fitted, X[:20])
    expected = (expit(net) + expit(trees)) / 2
    np.testing.assert_allclose(fitted.predict_proba(X[:20])[:, 1], expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(fitted.decision_function(X[:20]), logit(expected[:, 0]),
                               atol=1e-5)
    # the trees learned something of their own: not a constant column
    assert np.ptp(trees) > 0.1


def test_the_tree_head_reads_the_pretrained_encoder_not_the_finetuned_one(fitted, data,
                                                                          tiny_checkpoint):
    from exlm_chem.model.molecule_model import MoleculeModel

    X, _ = data
    pretrained = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    frozen = fitted.tree_head_.model
    np.testing.assert_allclose(frozen.run(X[:10], EMBED), pretrained.run(X[:10], EMBED),
                               atol=1e-6)
    assert not np.allclose(fitted.model_.run(X[:10], EMBED), pretrained.run(X[:10], EMBED),
                           atol=1e-4)  # fine-tuning moved the network's own encoder


def test_without_tree_head_the_network_alone_answers(params, data):
    X, y = data
    est = ExLMMoleculeClassifier(**params, tree_head=False).fit(X, y)
    assert est.tree_head_ is None
    inputs = est._prepared(X[:10], "raise")
    np.testing.assert_allclose(est.decision_function(X[:10]),
                               est.model_.run(inputs.smiles, PREDICT, 32)[:, 0], atol=1e-6)


def test_the_tree_head_is_saved_as_arrays_and_pickled(fitted, data, tmp_path):
    X, _ = data
    rows = [*X[:15], "not a smiles"]
    expected = fitted.predict_proba(rows)
    fitted.save(tmp_path / "m")
    assert (tmp_path / "m" / "tree_head.safetensors").is_file()
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.predict_proba(rows), expected,
                               atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(fitted)).predict_proba(rows),
                               expected, atol=1e-6)
    fitted.save(tmp_path / "m")  # a save over its own earlier save: every file is ours
    (tmp_path / "m" / "tree_head.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"tree_head\.safetensors is missing"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_a_corrupt_tree_head_file_is_a_checkpoint_error(fitted, tmp_path):
    fitted.save(tmp_path / "m")
    (tmp_path / "m" / "tree_head.safetensors").write_bytes(b"\x08" + b"\x00" * 7 + b"{}")
    with pytest.raises(CheckpointError, match="tree head"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_the_regressor_weighs_values_as_its_held_out_molecules_chose_and_its_intervals_see_it(
        params, data, tmp_path, monkeypatch):
    import exlm_chem.sklearn.base as base

    X, y = data
    # positive and skewed, fitted on its log: network and trees output log values; the
    # weight is chosen on that scale and applied on y's
    values = np.exp(np.log1p(np.arange(len(X), dtype=float)) + y)
    chosen_on = []
    monkeypatch.setattr(base, "held_out_tree_weight",
                        lambda *args: chosen_on.append(args) or held_out_tree_weight(*args))
    est = ExLMMoleculeRegressor(**params, target_transform="log").fit(X, values)
    assert est.target_log_.tolist() == [True]
    # the choice, redone from the held-out rows fit used
    held_out = np.flatnonzero(est.held_out_mask_)
    assert len(held_out) == round(params["validation_fraction"] * len(X))
    net_h, trees_h = _net_and_trees(est, [X[i] for i in held_out])
    (network, trees, labels), = chosen_on  # the held-out rows in their drawn order
    np.testing.assert_allclose(np.sort(labels, axis=0),
                               np.sort(np.log(values[held_out, None]), axis=0))  # log y's
    np.testing.assert_allclose(np.sort(network, axis=0), np.sort(net_h, axis=0), rtol=1e-5)
    np.testing.assert_allclose(np.sort(trees, axis=0), np.sort(trees_h, axis=0), rtol=1e-5)
    assert est.tree_weight_ == held_out_tree_weight(network, trees, labels)
    w = est.tree_weight_
    net, trees = _net_and_trees(est, X[:12])
    expected = (1 - w) * np.exp(net[:, 0]) + w * np.exp(trees[:, 0])
    np.testing.assert_allclose(est.predict(X[:12]), expected, atol=1e-5)
    interval = est.predict_interval(X[:12], alpha=0.5)
    np.testing.assert_allclose((interval.lower + interval.upper) / 2, est.predict(X[:12]),
                               atol=1e-5)
    est.save(tmp_path / "r")
    loaded = ExLMMoleculeRegressor.load(tmp_path / "r")
    assert loaded.tree_weight_ == w
    np.testing.assert_array_equal(loaded.held_out_mask_, est.held_out_mask_)
    np.testing.assert_allclose(loaded.predict(X[:12]), expected, atol=1e-5)


def test_a_given_tree_weight_is_the_trees_share_of_each_probability(params, data, tmp_path):
    X, y = data
    est = ExLMMoleculeClassifier(**params, tree_weight=0.75).fit(X, y)
    assert est.tree_weight_ == 0.75
    net, trees = _net_and_trees(est, X[:10])
    expected = 0.25 * expit(net[:, 0]) + 0.75 * expit(trees[:, 0])
    np.testing.assert_allclose(est.predict_proba(X[:10])[:, 1], expected, atol=1e-6)
    est.save(tmp_path / "c")
    np.testing.assert_allclose(ExLMMoleculeClassifier.load(tmp_path / "c").predict_proba(
        X[:10])[:, 1], expected, atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(est)).predict_proba(X[:10])[:, 1],
                               expected, atol=1e-6)


def test_the_held_out_weight_is_the_one_with_the_least_squared_error():
    labels = np.array([[1.0, np.nan], [2.0, 0.0], [3.0, 1.0]])
    network = np.array([[0.0, 5.0], [0.0, 0.0], [0.0, 1.0]])
    trees = labels.copy()
    trees[0, 1] = -100.0  # a missing label's row does not count
    assert held_out_tree_weight(network, trees, labels) == 1.0
    assert held_out_tree_weight(trees, network, labels) == 0.0
    # halfway between the two is best when they err on opposite sides
    assert held_out_tree_weight(labels - 1, labels + 1, labels) == 0.5
    # equal errors: the first weight (the network alone) of equals
    assert held_out_tree_weight(labels, labels, labels) == TREE_WEIGHTS[0]


@pytest.mark.parametrize("bad", [1.5, -0.1, "half", True])
def test_the_tree_weight_is_a_share(params, data, bad):
    X, y = data
    with pytest.raises(ValueError, match="tree_weight must be None or in"):
        ExLMMoleculeClassifier(**params, tree_weight=bad).fit(X, y)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_the_switches_are_booleans(params, data, bad):
    X, y = data
    for name in ("tree_head", "head_first"):
        with pytest.raises(ValueError, match=f"{name} must be True or False"):
            ExLMMoleculeClassifier(**params, **{name: bad}).fit(X, y)
    if bad is not None:  # None is tree_forest's default: the estimator decides
        with pytest.raises(ValueError, match="tree_forest must be None, True or False"):
            ExLMMoleculeClassifier(**params, tree_forest=bad).fit(X, y)


def test_head_first_trains_the_head_on_frozen_states_before_the_encoder_moves(
        tiny_checkpoint, data):
    from exlm_chem.model.molecule_model import MoleculeModel, build_model
    from exlm_chem.model.pretrained import load_backbone
    from exlm_chem.train.finetune import LabelledSmiles, fit_head, masked_mean_loss

    X, y = data
    backbone = load_backbone(str(tiny_checkpoint), "small", 0.1)
    torch.manual_seed(0)
    net = build_model(backbone.config, backbone.tokenizer, 1, backbone.encoder_state)
    states = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu").run(X, EMBED)
    labels = y[:, None].astype(np.float64)
    targets = torch.as_tensor(labels, dtype=torch.float32)
    encoder_before = {k: v.clone() for k, v in net.encoder.state_dict().items()}

    def loss() -> float:
        net.head.eval()
        with torch.no_grad():
            return float(masked_mean_loss(net.head(torch.as_tensor(states)), targets,
                                          "classification"))

    before = loss()
    train = LabelledSmiles(X, labels, None, states)
    fit_head(net, train, targets, "classification", None, "last_epoch",
             torch.zeros(1), torch.ones(1), seed=0)
    assert loss() < before - 0.02
    for key, value in net.encoder.state_dict().items():
        torch.testing.assert_close(value, encoder_before[key])
    with pytest.raises(ValueError, match="head_first needs the pooled states"):
        fit_head(net, train._replace(states=None), targets, "classification", None,
                 "last_epoch", torch.zeros(1), torch.ones(1), seed=0)


# ---- the random forest beside the boosted trees (tree_forest) -------------------------------

@pytest.fixture(scope="module")
def with_forest(params, data):
    X, y = data
    return ExLMMoleculeClassifier(**params, tree_weight=0.5).fit(X, y)  # the default forest


def _members(est, X):
    """The network's logits, the boosted trees' logits and the forest's probabilities
    [n, T] of X, each computed from its own inputs."""
    inputs = est._prepared(X, "raise")
    head = est.tree_head_
    states = head.model.run(inputs.smiles, EMBED, 32)  # [n, d]: the pre-trained encoder
    scaled = head.features.values(inputs.smiles)  # [n, F]: scaled RDKit 2D
    boosted = head.trees.decision(np.concatenate([states, scaled], axis=1))
    net = est.model_.run(inputs.smiles, PREDICT, 32, inputs.features)
    return net, boosted, head.forest.proba(scaled)


def test_the_forest_is_half_of_the_tree_member(with_forest, data):
    X, _ = data
    net, boosted, forest = _members(with_forest, X[:20])
    expected = (expit(net) + (expit(boosted) + forest) / 2) / 2  # [n, 1]: tree_weight 0.5
    np.testing.assert_allclose(with_forest.predict_proba(X[:20])[:, 1], expected[:, 0],
                               atol=1e-6)
    assert np.ptp(forest) > 0.1 and not np.allclose(forest, expit(boosted), atol=0.05)


def test_the_forest_is_the_runners_forest_on_the_training_molecules(with_forest, data):
    from sklearn.ensemble import RandomForestClassifier

    X, y = data
    # the training molecules in the order fit drew them: the order moves the bootstrap
    train = held_out_split(len(X), with_forest.random_state,
                           with_forest.validation_fraction).train_rows
    np.testing.assert_array_equal(np.sort(train), np.flatnonzero(~with_forest.held_out_mask_))
    head = with_forest.tree_head_
    scaled = head.features.values(with_forest._prepared([X[i] for i in train], "raise").smiles)
    runner = RandomForestClassifier(random_state=with_forest.seed_, **FOREST_SETTINGS)
    runner.fit(scaled, y[train])
    rows = head.features.values(with_forest._prepared(X, "raise").smiles)  # every molecule
    np.testing.assert_allclose(head.forest.proba(rows)[:, 0],
                               runner.predict_proba(rows)[:, 1], rtol=0, atol=1e-12)


def test_the_forest_is_saved_as_arrays_and_pickled(with_forest, data, tmp_path):
    X, _ = data
    rows = [*X[:15], "not a smiles"]
    expected = with_forest.predict_proba(rows)
    with_forest.save(tmp_path / "m")
    with_forest.save(tmp_path / "m")  # again over it: the forest's file is the model's own
    meta = json.loads((tmp_path / "m" / "metadata.json").read_text())
    assert meta["fitted"]["tree_head"]["forest"] is True
    assert meta["params"]["tree_forest"] is None
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    assert loaded.tree_head_.forest is not None
    np.testing.assert_allclose(loaded.predict_proba(rows), expected, atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(with_forest)).predict_proba(rows),
                               expected, atol=1e-6)
    assert clone(with_forest).get_params()["tree_forest"] is None
    (tmp_path / "m" / "tree_forest.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"tree_forest\.safetensors is missing"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_a_save_without_a_forest_loads_as_before_forests(fitted, data, tmp_path):
    X, _ = data
    assert fitted.tree_forest is False and fitted.tree_head_.forest is None
    fitted.save(tmp_path / "m")
    assert not (tmp_path / "m" / "tree_forest.safetensors").exists()
    where = tmp_path / "m" / "metadata.json"
    meta = json.loads(where.read_text())
    assert meta["fitted"]["tree_head"]["forest"] is False
    # a save from before forests: neither the entry nor the parameter
    del meta["fitted"]["tree_head"]["forest"], meta["params"]["tree_forest"]
    where.write_text(json.dumps(meta))
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    assert loaded.tree_head_.forest is None and loaded.tree_forest is False
    np.testing.assert_allclose(loaded.predict_proba(X[:10]), fitted.predict_proba(X[:10]),
                               atol=1e-6)
    meta["fitted"]["tree_head"]["forest"] = "yes"
    where.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="'forest' must be true or false"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_tree_forest_needs_the_classifiers_tree_head(params, data):
    X, y = data
    with pytest.raises(ValueError, match="tree_forest=True needs the tree head"):
        ExLMMoleculeClassifier(**params, tree_head=False, tree_forest=True).fit(X, y)
    with pytest.raises(ValueError, match="tree_forest applies to classifiers only"):
        ExLMMoleculeRegressor(**params, tree_forest=True).fit(X, y.astype(float))
    # the default (None): the classifier's tree head has the forest, the regressor's not,
    # and neither has one without a tree head
    assert ExLMMoleculeClassifier()._uses_forest()
    assert not ExLMMoleculeRegressor()._uses_forest()
    assert not ExLMMoleculeClassifier(tree_head=False)._uses_forest()
    assert not ExLMMoleculeClassifier(tree_forest=False)._uses_forest()


# ---- what the tree head reads (tree_features) ------------------------------------------------

def test_the_tree_head_reads_the_kinds_it_is_given_and_keeps_them(params, data, tmp_path):
    from exlm_chem.data.descriptors import feature_names

    X, y = data
    kinds = ["morgan", "erg"]
    est = ExLMMoleculeRegressor(**params, tree_features=kinds).fit(X, y.astype(float))
    head = est.tree_head_
    assert head.features.kinds == tuple(kinds)
    width = len(feature_names("morgan")) + len(feature_names("erg"))
    assert head.features.n_features == width
    assert head.trees.n_features == head.model.run(X[:1], EMBED).shape[1] + width
    rows = [*X[:10], "not a smiles"]
    expected = est.predict(rows, on_invalid="nan")
    est.save(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "metadata.json").read_text())["params"][
        "tree_features"] == kinds
    loaded = ExLMMoleculeRegressor.load(tmp_path / "m")
    assert loaded.tree_head_.features.kinds == tuple(kinds)
    np.testing.assert_allclose(loaded.predict(rows, on_invalid="nan"), expected, atol=1e-6)
    assert clone(est).get_params()["tree_features"] == kinds


def test_the_default_tree_head_reads_rdkit2d(fitted):
    assert fitted.tree_features == "auto"
    assert fitted.tree_head_.features.kinds == ("rdkit2d",)


@pytest.mark.parametrize("bad", [None, "columns", ["rdkit2d", "columns"], [], "ecfp",
                                 ["morgan", "morgan"]])
def test_the_tree_features_are_computed_kinds(params, data, bad):
    X, y = data
    with pytest.raises(ValueError, match=r"tree_features must be 'auto', one of \("):
        ExLMMoleculeClassifier(**params, tree_features=bad).fit(X, y)
