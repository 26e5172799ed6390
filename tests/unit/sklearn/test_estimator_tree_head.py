"""The estimators' tree head and head-first fine-tuning (LP-FT).

The tree head is CatBoost on MapLight's features (up to four tasks; beyond, 0.4.0's
histogram boosting on the pre-trained encoder's states and RDKit 2D, with the classifier's
forest). It reads the pre-trained encoder (not the fine-tuned one) where it reads states,
weighs in every output at ``tree_weight`` (0.75) or, with None or a list of weights, as its
held-out molecules (whole scaffolds) chose, learns those molecules too (CatBoost), and travels
through save/load and pickling as arrays, without being unpickled or CatBoost being
needed; ``head_first`` fits the head on the frozen states before the encoder moves.
"""

from __future__ import annotations

import json
import pickle
import sys

import numpy as np
import pytest
import torch
from scipy.special import expit, logit
from sklearn.base import clone

import exlm_chem.sklearn.ensemble as ensemble
from exlm_chem.data.feature_spec import raw_features
from exlm_chem.data.splits import held_out_split
from exlm_chem.errors import CheckpointError
from exlm_chem.model.frozen_trees import (
    CATBOOST_MAX_TASKS,
    HIST_TREE_KINDS,
    TREE_KINDS,
    FrozenTrees,
    tree_booster,
)
from exlm_chem.model.molecule_model import EMBED, PREDICT
from exlm_chem.model.tree_head import FOREST_SETTINGS
from exlm_chem.sklearn.ensemble import TREE_WEIGHTS, held_out_tree_weight
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor
from exlm_chem.threads import resolve_threads


@pytest.fixture(scope="module")
def data(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:40],
                                   np.flatnonzero(label == 1)[:40]]))
    return [ds.smiles[i] for i in rows], label[rows].astype(int)


def _spied_weight(chosen_on):
    """held_out_tree_weight, recording the arguments fit chose the weight with."""
    return lambda *args: chosen_on.append(args) or held_out_tree_weight(*args)


@pytest.fixture(scope="module")
def choice(params, data):
    """The default classifier (CatBoost on MapLight's features, no forest beside it)
    choosing its weight on the held-out molecules (``tree_weight=None``), and the
    arguments of the one held_out_tree_weight call its fit made."""
    X, y = data
    chosen_on = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ensemble, "held_out_tree_weight", _spied_weight(chosen_on))
        est = ExLMMoleculeClassifier(**params, tree_weight=None).fit(X, y)
    return est, chosen_on


@pytest.fixture(scope="module")
def fitted(choice):
    return choice[0]


@pytest.fixture(scope="module")
def reads_states(params, data):
    """CatBoost on the pre-trained encoder's pooled states beside RDKit 2D."""
    X, y = data
    return ExLMMoleculeClassifier(**params, tree_features=["exlm", "rdkit2d"]).fit(X, y)


def _net_and_trees(est, X):
    inputs = est._prepared(X, "raise")
    net = est.model_.run(inputs.smiles, PREDICT, 32, inputs.features)  # [n, T] logits
    return net, est.tree_head_.decision(inputs.smiles, 32)


def _catboost_fits(est, X, labels):
    """The two CatBoost heads fit draws for ``est`` fitted on X (no states read): the
    first on the training molecules alone, whose outputs on the held-out ones choose the
    weight, then the one it keeps, on every molecule; and the raw features [n, F] both
    read. ``labels`` [n, T] as fit learns them (log values for a logged task)."""
    smiles = est._prepared(X, "raise").smiles
    kinds = est.tree_head_.features.kinds
    raw = raw_features(kinds, smiles, None)  # [n, F] unscaled: what CatBoost reads

    def fit(rows):
        return FrozenTrees.fit(None, None, raw, labels, rows, est._task, est.seed_,
                               kinds=kinds, booster="catboost", threads=resolve_threads(),
                               booster_params=est.tree_params)

    return fit(np.flatnonzero(~est.held_out_mask_)), fit(np.arange(len(X))), raw


def test_the_tree_head_is_its_chosen_weight_of_each_probability(fitted, data):
    X, _ = data
    w = fitted.tree_weight_
    assert w in TREE_WEIGHTS
    net, trees = _net_and_trees(fitted, X[:20])
    expected = expit((1 - w) * net + w * trees)  # [n, 1]: log-odds mixed
    np.testing.assert_allclose(fitted.predict_proba(X[:20])[:, 1], expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(fitted.decision_function(X[:20]), logit(expected[:, 0]),
                               atol=1e-5)
    # the trees learned something of their own: not a constant column
    assert np.ptp(trees) > 0.1


def test_the_classifiers_weight_scores_its_held_out_molecules_best(choice, data):
    X, y = data
    est, chosen_on = choice
    (network, trees, labels, task, weights), = chosen_on  # one choice, by log loss
    assert task == "classification" and weights == TREE_WEIGHTS  # tree_weight=None
    held_out = np.flatnonzero(est.held_out_mask_)  # in order, as fit hands them over
    np.testing.assert_array_equal(labels, y[held_out, None])
    net_h, _ = _net_and_trees(est, [X[i] for i in held_out])
    np.testing.assert_allclose(network, expit(net_h), rtol=1e-6)  # probabilities, averaged
    # the trees' probabilities from their first fit, which never saw these molecules
    first, _, raw = _catboost_fits(est, X, y[:, None].astype(np.float64))
    np.testing.assert_allclose(trees, expit(first.decision_of(None, raw[held_out])),
                               rtol=1e-12)
    assert est.tree_weight_ == held_out_tree_weight(network, trees, labels, task)


def test_catboosts_trees_learn_every_molecule_once_the_weight_is_chosen(fitted, data):
    X, y = data
    first, refit, raw = _catboost_fits(fitted, X, y[:, None].astype(np.float64))
    head, held = fitted.tree_head_, fitted.held_out_mask_
    smiles = fitted._prepared(X, "raise").smiles
    np.testing.assert_array_equal(head.decision(smiles, 32), refit.decision_of(None, raw))
    # the held-out molecules taught the kept trees: they are not the ones that chose
    assert not np.allclose(head.decision_of(None, raw[held]),
                           first.decision_of(None, raw[held]), atol=1e-3)


def test_the_held_out_molecules_are_whole_scaffolds(fitted, data):
    from exlm_chem.data.splits import murcko_scaffolds

    X, _ = data
    smiles = fitted._prepared(X, "raise").smiles  # canonical, as fit reads them
    held = fitted.held_out_mask_
    np.testing.assert_array_equal(np.flatnonzero(held), held_out_split(
        smiles, fitted.random_state, fitted.validation_fraction).valid_rows)
    assert 0 < held.sum() <= 2 * round(fitted.validation_fraction * len(X))  # about a share
    scaffolds = np.array(murcko_scaffolds(smiles))
    assert set(scaffolds[held]).isdisjoint(scaffolds[~held])  # none seen in training


def test_the_tree_head_reads_the_pretrained_encoder_not_the_finetuned_one(reads_states, data,
                                                                          tiny_checkpoint):
    from exlm_chem.model.molecule_model import MoleculeModel

    X, _ = data
    head = reads_states.tree_head_
    assert head.reads_states and head.features.kinds == ("rdkit2d",)
    pretrained = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    frozen = head.model
    np.testing.assert_allclose(frozen.run(X[:10], EMBED), pretrained.run(X[:10], EMBED),
                               atol=1e-6)
    assert not np.allclose(reads_states.model_.run(X[:10], EMBED),
                           pretrained.run(X[:10], EMBED),
                           atol=1e-4)  # fine-tuning moved the network's own encoder
    # CatBoost reads the states beside the raw (unscaled) descriptors
    smiles = reads_states._prepared(X[:10], "raise").smiles
    side_by_side = np.concatenate([frozen.run(smiles, EMBED, 32),  # [10, d + F]
                                   raw_features(("rdkit2d",), smiles, None)], axis=1)
    assert head.trees.booster == "catboost"
    np.testing.assert_array_equal(head.decision(smiles, 32), head.trees.decision(side_by_side))


def test_a_tree_head_on_states_saves_its_encoder(reads_states, data, tmp_path):
    X, _ = data
    expected = reads_states.predict_proba(X[:10])
    reads_states.save(tmp_path / "m")
    entry = json.loads((tmp_path / "m" / "metadata.json").read_text())["fitted"]["tree_head"]
    assert entry["booster"] == "catboost" and entry["net"] is not None
    np.testing.assert_array_equal(ExLMMoleculeClassifier.load(tmp_path / "m").predict_proba(
        X[:10]), expected)
    (tmp_path / "m" / "tree_encoder.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"tree_encoder\.safetensors is missing"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_without_tree_head_the_network_alone_answers(params, data):
    X, y = data
    est = ExLMMoleculeClassifier(**params, tree_head=False).fit(X, y)
    assert est.tree_head_ is None
    inputs = est._prepared(X[:10], "raise")
    np.testing.assert_allclose(est.decision_function(X[:10]),
                               est.model_.run(inputs.smiles, PREDICT, 32)[:, 0], atol=1e-6)


def test_the_tree_head_is_saved_as_arrays_and_pickled(fitted, data, tmp_path, monkeypatch):
    X, _ = data
    rows = [*X[:15], "not a smiles"]
    expected = fitted.predict_proba(rows)
    fitted.save(tmp_path / "m")
    # CatBoost on MapLight's kinds: its trees, neither an encoder (no states) nor a forest
    saved = {p.name for p in (tmp_path / "m").iterdir()}
    assert "tree_head.safetensors" in saved
    assert not {"tree_encoder.safetensors", "tree_forest.safetensors"} & saved
    entry = json.loads((tmp_path / "m" / "metadata.json").read_text())["fitted"]["tree_head"]
    assert (entry["booster"], entry["net"], entry["forest"]) == ("catboost", None, False)
    assert entry["weight"] == fitted.tree_weight_
    blob = pickle.dumps(fitted)
    # CatBoost fits the trees; loading and predicting walk their arrays with numpy alone
    monkeypatch.setitem(sys.modules, "catboost", None)
    with pytest.raises(ImportError):
        import catboost  # noqa: F401
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict_proba(rows), expected)
    np.testing.assert_array_equal(pickle.loads(blob).predict_proba(rows), expected)
    monkeypatch.undo()
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
    X, y = data
    # positive and skewed, fitted on its log: network and trees output log values; the
    # weight is chosen on that scale and applied on y's
    values = np.exp(np.log1p(np.arange(len(X), dtype=float)) + y)
    chosen_on = []
    monkeypatch.setattr(ensemble, "held_out_tree_weight", _spied_weight(chosen_on))
    listed = (0.25, 0.75, 1.0)  # the weights the held-out molecules choose from
    est = ExLMMoleculeRegressor(**params, target_transform="log", tree_weight=listed)
    assert clone(est).tree_weight == listed
    est.fit(X, values)
    assert est.target_log_.tolist() == [True]
    # the choice, redone from the held-out rows fit used: about a share, whole scaffolds
    held_out = np.flatnonzero(est.held_out_mask_)
    assert 0 < len(held_out) <= 2 * round(params["validation_fraction"] * len(X))
    net_h, _ = _net_and_trees(est, [X[i] for i in held_out])
    (network, trees, labels, task, weights), = chosen_on  # the held-out rows, in order
    assert task == "regression" and weights == listed  # by squared error, of those listed
    np.testing.assert_allclose(labels, np.log(values[held_out, None]))  # log y's
    np.testing.assert_allclose(network, net_h, rtol=1e-5)
    # the trees' from their first fit, on the training molecules alone; the kept head
    # (tree_head_) is CatBoost's refit on every molecule
    first, _, raw = _catboost_fits(est, X, np.log(values)[:, None])
    np.testing.assert_allclose(trees, first.decision_of(None, raw[held_out]), rtol=1e-12)
    assert est.tree_weight_ == held_out_tree_weight(network, trees, labels, task, listed)
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


@pytest.mark.parametrize("weight", [0.5, 0.75])  # 0.5: the mean of the two probabilities
def test_a_given_tree_weight_is_the_trees_share_of_each_probability(params, data, tmp_path,
                                                                    weight):
    X, y = data
    est = ExLMMoleculeClassifier(**params, tree_weight=weight).fit(X, y)
    assert est.tree_weight_ == weight
    net, trees = _net_and_trees(est, X[:10])
    expected = expit((1 - weight) * net[:, 0] + weight * trees[:, 0])  # log-odds mixed
    np.testing.assert_allclose(est.predict_proba(X[:10])[:, 1], expected, atol=1e-6)
    est.save(tmp_path / "c")
    np.testing.assert_allclose(ExLMMoleculeClassifier.load(tmp_path / "c").predict_proba(
        X[:10])[:, 1], expected, atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(est)).predict_proba(X[:10])[:, 1],
                               expected, atol=1e-6)


def test_auto_chooses_the_quarter_or_the_trees_alone_where_enough_molecules_are_held_out(
        params, data, monkeypatch):
    X, y = data
    n_held_out = len(held_out_split(X, params["random_state"],
                                    params["validation_fraction"]).valid_rows)
    chosen_on = []
    monkeypatch.setattr(ensemble, "held_out_tree_weight", _spied_weight(chosen_on))
    monkeypatch.setattr(ensemble, "AUTO_MIN_HELD_OUT", n_held_out + 1)  # one too many
    assert ExLMMoleculeClassifier(**params).fit(X, y).tree_weight_ == 0.75
    assert not chosen_on  # given, not chosen: the trees are fitted once
    monkeypatch.setattr(ensemble, "AUTO_MIN_HELD_OUT", n_held_out)
    est = ExLMMoleculeClassifier(**params).fit(X, y)
    (args,) = chosen_on
    assert args[3:] == ("classification", (0.75, 1.0))
    assert est.tree_weight_ == held_out_tree_weight(*args)


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


@pytest.mark.parametrize("bad", [1.5, -0.1, "half", True, (), (0.75, 2.0), [0.5, "1"]])
def test_the_tree_weight_is_a_share(params, data, bad):
    X, y = data
    with pytest.raises(ValueError, match="tree_weight must be 'auto', in"):
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
    """0.4.0's tree head: histogram boosting on the pre-trained encoder's states and RDKit
    2D, with the classifier's default forest; the weight chosen as by default."""
    X, y = data
    return ExLMMoleculeClassifier(**{**params, "tree_params": None},  # CatBoost's only
                                  tree_booster="hist").fit(X, y)


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
    head = with_forest.tree_head_
    assert head.trees.booster == "hist" and head.features.kinds == ("rdkit2d",)
    net, boosted, forest = _members(with_forest, X[:20])
    member = (expit(boosted) + forest) / 2  # [n, 1]: the tree head's probability
    smiles = with_forest._prepared(X[:20], "raise").smiles
    np.testing.assert_allclose(expit(head.decision(smiles, 32)), member, atol=1e-12)
    w = with_forest.tree_weight_
    expected = expit((1 - w) * net + w * logit(member))
    np.testing.assert_allclose(with_forest.predict_proba(X[:20])[:, 1], expected[:, 0],
                               atol=1e-6)
    assert np.ptp(forest) > 0.1 and not np.allclose(forest, expit(boosted), atol=0.05)


def test_histogram_boosting_learns_the_training_molecules_whatever_the_weight(
        params, with_forest, data):
    X, y = data
    given = ExLMMoleculeClassifier(**{**params, "tree_params": None}, tree_booster="hist",
                                   tree_weight=0.5).fit(X, y)
    np.testing.assert_array_equal(given.held_out_mask_, with_forest.held_out_mask_)
    rows = given.tree_head_.features.values(given._prepared(X, "raise").smiles)
    np.testing.assert_array_equal(given.tree_head_.features.scaler.center,
                                  with_forest.tree_head_.features.scaler.center)
    np.testing.assert_array_equal(given.tree_head_.forest.proba(rows),
                                  with_forest.tree_head_.forest.proba(rows))


def test_the_forest_is_the_runners_forest_on_the_training_molecules(with_forest, data):
    from sklearn.ensemble import RandomForestClassifier

    X, y = data
    # histogram boosting keeps its first fit: the training molecules, in order (the order
    # moves the bootstrap)
    smiles = with_forest._prepared(X, "raise").smiles  # canonical, as fit reads them
    train = held_out_split(smiles, with_forest.random_state,
                           with_forest.validation_fraction).train_rows
    np.testing.assert_array_equal(train, np.flatnonzero(~with_forest.held_out_mask_))
    head = with_forest.tree_head_
    scaled = head.features.values([smiles[i] for i in train])  # scaled on those rows
    runner = RandomForestClassifier(random_state=with_forest.seed_, **FOREST_SETTINGS)
    runner.fit(scaled, y[train])
    rows = head.features.values(smiles)  # every molecule
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
    assert meta["fitted"]["tree_head"]["booster"] == "hist"
    assert meta["fitted"]["tree_head"]["net"] is not None  # it reads the states
    assert (tmp_path / "m" / "tree_encoder.safetensors").is_file()
    assert meta["params"]["tree_forest"] is None
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    assert loaded.tree_head_.forest is not None
    np.testing.assert_allclose(loaded.predict_proba(rows), expected, atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(with_forest)).predict_proba(rows),
                               expected, atol=1e-6)
    assert clone(with_forest).get_params()["tree_forest"] is None
    # a save from before CatBoost (0.4.x) names no booster: histogram boosting, and a
    # refit of it repeats 0.4.x's head (trees on the states beside the kinds it listed)
    del meta["fitted"]["tree_head"]["booster"], meta["params"]["tree_booster"]
    meta["params"]["tree_features"] = ["rdkit2d"]
    (tmp_path / "m" / "metadata.json").write_text(json.dumps(meta))
    old = ExLMMoleculeClassifier.load(tmp_path / "m")
    np.testing.assert_array_equal(old.predict_proba(rows), loaded.predict_proba(rows))
    assert old.get_params()["tree_booster"] == "hist"
    assert old.get_params()["tree_features"] == ["exlm", "rdkit2d"]
    (tmp_path / "m" / "tree_forest.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"tree_forest\.safetensors is missing"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_a_save_without_a_forest_loads_as_before_forests(fitted, data, tmp_path):
    X, _ = data
    # none beside CatBoost by default
    assert fitted.tree_forest is None and fitted.tree_head_.forest is None
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
    # the default (None): beside the classifier's histogram boosting, not beside CatBoost
    # nor in the regressor, and never without a tree head
    assert ExLMMoleculeClassifier()._uses_forest("hist")
    assert not ExLMMoleculeClassifier()._uses_forest("catboost")
    assert not any(ExLMMoleculeRegressor()._uses_forest(b) for b in ("hist", "catboost"))
    assert not ExLMMoleculeClassifier(tree_head=False)._uses_forest("hist")
    assert not ExLMMoleculeClassifier(tree_forest=False)._uses_forest("hist")
    assert ExLMMoleculeClassifier(tree_forest=True)._uses_forest("catboost")  # asked for


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
    # CatBoost without the "exlm" kind: the features alone, no encoder kept
    assert head.trees.booster == "catboost" and head.trees.n_features == width
    assert not head.reads_states and head.model is None
    rows = [*X[:10], "not a smiles"]
    expected = est.predict(rows, on_invalid="nan")
    est.save(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "metadata.json").read_text())["params"][
        "tree_features"] == kinds
    assert not (tmp_path / "m" / "tree_encoder.safetensors").exists()
    loaded = ExLMMoleculeRegressor.load(tmp_path / "m")
    assert loaded.tree_head_.features.kinds == tuple(kinds)
    np.testing.assert_allclose(loaded.predict(rows, on_invalid="nan"), expected, atol=1e-6)
    assert clone(est).get_params()["tree_features"] == kinds


def test_the_default_tree_head_is_catboost_on_maplights_raw_features(fitted, data):
    X, _ = data
    assert fitted.tree_features == fitted.tree_booster == "auto"
    head = fitted.tree_head_
    assert head.features.kinds == TREE_KINDS == ("morgan1024", "avalon", "erg", "rdkit2d")
    assert head.trees.booster == "catboost" and head.forest is None and head.model is None
    # MapLight feeds CatBoost the raw values: no scaling, no encoder states
    smiles = fitted._prepared(X[:10], "raise").smiles
    raw = raw_features(TREE_KINDS, smiles, None)  # [10, F]
    assert head.trees.n_features == raw.shape[1] == head.features.n_features
    np.testing.assert_array_equal(head.decision(smiles, 32), head.trees.decision(raw))
    assert not np.allclose(head.trees.decision(head.features.scaler.transform(raw)),
                           head.trees.decision(raw))  # which the scaled values are not


def test_beyond_four_tasks_the_tree_head_is_histogram_boosting_on_states(params, data):
    X, y = data
    assert [tree_booster("auto", n) for n in (1, CATBOOST_MAX_TASKS, CATBOOST_MAX_TASKS + 1)
            ] == ["catboost", "catboost", "hist"]
    Y = np.column_stack([y, 1 - y, y, 1 - y, y]).astype(float)  # [n, 5]
    # tree_params (the fixture's) are CatBoost's: read only where "auto" picks it
    est = ExLMMoleculeClassifier(**{**params, "epochs": 1}).fit(X, Y)
    head = est.tree_head_
    assert head.trees.booster == "hist" and head.trees.n_tasks == 5
    assert head.reads_states and ("exlm", *head.features.kinds) == HIST_TREE_KINDS
    assert head.forest is not None  # the classifier's forest beside histogram boosting


@pytest.mark.parametrize(("settings", "message"), [
    ({"tree_booster": "xgboost"}, r"tree_booster must be 'auto' or one of \('catboost', "
                                  r"'hist'\), got 'xgboost'"),
    ({"tree_params": {"random_seed": 1}}, r"tree_params must be None or a dict of CatBoost "
                                          r"settings other than \['allow_writing_files'"),
    ({"tree_params": "fast"}, r"tree_params must be None or a dict"),
    # the fixture's tree_params beside the booster that has none
    ({"tree_booster": "hist"}, r"tree_params are CatBoost's settings: set "
                               r"tree_booster='catboost'"),
    # a regressor's loss on a classifier, before anything is fitted
    ({"tree_params": {"loss_function": "RMSE"}}, r"tree_params: CatBoost's classification "
                                                 r"loss_function must be one of"),
])
def test_the_tree_booster_and_its_params_are_checked(params, data, settings, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        ExLMMoleculeClassifier(**{**params, **settings}).fit(X, y)


@pytest.mark.parametrize("bad", [None, "columns", ["rdkit2d", "columns"], [], "ecfp",
                                 ["morgan", "morgan"]])
def test_the_tree_features_are_computed_kinds(params, data, bad):
    X, y = data
    with pytest.raises(ValueError, match=r"tree_features must be 'auto', one of \("):
        ExLMMoleculeClassifier(**params, tree_features=bad).fit(X, y)
