"""The TDC lever study scores its heads on the held-out valid part, never the test part,
and resumes."""

from __future__ import annotations

import json
import math
from typing import ClassVar

import pytest
from repo_scripts import REPO, load_script

HEADS = ("trees(rdkit2d)", "trees(emb+rdkit2d)")


@pytest.fixture(scope="module")
def study():
    return load_script("benchmarks/tdc/tdc_levers.py")


@pytest.fixture(scope="module")
def random_tiny(tmp_path_factory) -> str:
    """A tiny-preset encoder with random weights and the shipped vocabulary: embeds in
    well under a second where the shipped model takes several."""
    import torch

    from exlm_chem.model import ExLMConfig, ExLMModel
    from exlm_chem.model.checkpoint import save_checkpoint

    shipped = REPO / "models" / "exlm-small"
    config = ExLMConfig.preset("tiny", ExLMConfig.from_json(shipped / "config.json").vocab_size)
    tokens = (shipped / "vocab.txt").read_text().split("\n")[: config.vocab_size]
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("random_tiny") / "model"
    return str(save_checkpoint(path, ExLMModel(config), config, tokens, {"steps": 0}))


def test_heads_are_scored_on_the_valid_part_and_a_rerun_skips_them(
        study, random_tiny, moleculenet_dir, tmp_path) -> None:
    # admet_group.zip lies in tdc_admet/ beside the MoleculeNet mirror, as the loader finds it
    model = random_tiny
    out = tmp_path / "levers"
    records = study.run(["dili"], [1], model, out, HEADS, data_path=moleculenet_dir)
    assert [r["head"] for r in records] == list(HEADS)
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert lines == records
    for record in records:
        assert record["task"] == "dili" and record["seed"] == 1
        assert record["metric"] == "roc_auc" and record["part"] == "valid"
        assert math.isfinite(record["valid_score"]) and 0.0 <= record["valid_score"] <= 1.0
        assert not any("test" in key for key in record)
        assert record["wall_s"] >= 0 and record["cpu_s"] >= 0
    assert study.run(["dili"], [1], model, out, HEADS, data_path=moleculenet_dir) == []
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    table = study.report(out)
    assert "dili (AUROC)" in table and "| trees(rdkit2d) |" in table


def test_the_fit_part_drops_the_test_rows(study, moleculenet_dir) -> None:
    from exlm_chem.benchmark.tdc import load_tdc_task

    data = load_tdc_task("dili", 1, moleculenet_dir)
    part = study.fit_part(data)
    n = len(data.train) + len(data.valid)
    assert len(part.smiles) == len(part.labels) == n and len(part.test) == 0
    assert part.smiles == data.smiles[:n]


def test_the_cluster_part_scores_the_held_out_clusters(study, moleculenet_dir) -> None:
    from exlm_chem.benchmark.tdc import load_tdc_task

    data = load_tdc_task("dili", 1, moleculenet_dir, cluster=True)
    part = study.task_part("dili", 1, "cluster", moleculenet_dir)
    assert list(part.valid) == list(data.test) and len(part.test) == 0
    assert list(part.train) == list(data.train)
    with pytest.raises(ValueError, match="split must be one of"):
        study.task_part("dili", 1, "random", moleculenet_dir)


def test_every_head_has_a_spec_and_the_baseline_is_0_4_0s_head(study) -> None:
    from exlm_chem.model.frozen_trees import HIST_TREE_KINDS, STATES_KIND

    specs = study._heads()
    assert tuple(specs) == study.HEADS
    # the head of the committed records: the states and RDKit 2D, as tree_booster="hist"
    assert specs[study.BASELINE] == study.Head("trees", True, ("rdkit2d",))
    assert (STATES_KIND, *specs[study.BASELINE].kinds) == HIST_TREE_KINDS


class _Booster:
    """Stands in for CatBoost: remembers its settings and fits a linear model."""

    made: ClassVar[list[dict]] = []

    def __init__(self, **settings) -> None:
        from sklearn.linear_model import LinearRegression, LogisticRegression

        _Booster.made.append(settings)
        self.model = (LogisticRegression() if type(self).__name__.endswith("Classifier")
                      else LinearRegression())

    def fit(self, x, y):
        self.fit_y = y
        self.model.fit(x, y)
        return self

    def predict(self, x):
        return self.model.predict(x)

    def predict_proba(self, x):
        return self.model.predict_proba(x)


def test_catboost_heads_fit_the_transformed_target_and_predict_on_ys_scale(study,
                                                                            monkeypatch):
    import sys
    import types

    import numpy as np

    from exlm_chem.benchmark.tasks import TaskData

    fake = types.ModuleType("catboost")
    fake.CatBoostClassifier = type("CatBoostClassifier", (_Booster,), {})
    fake.CatBoostRegressor = type("CatBoostRegressor", (_Booster,), {})
    monkeypatch.setitem(sys.modules, "catboost", fake)
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(60, 3)).astype(np.float32)
    y = np.exp(2 * raw[:, :1].astype(np.float64) + 1)  # positive and skewed: fitted on log(y)
    data = TaskData("half_life_obach", [f"C{i}" for i in range(60)], y, np.arange(50),
                    np.arange(50, 60), np.zeros(0, np.int64), task_type="regression",
                    metric="spearman", held_out_valid=True)
    assert study.target_log(data).tolist() == [True]
    states = rng.normal(size=(60, 2)).astype(np.float32)
    head = study._heads()["catboost(emb+maplight)"]
    predicted = study.predict_valid(head, data, states, raw, seed=2)
    assert np.allclose(predicted, y[50:, 0], rtol=1e-4)  # log(y) is linear in raw
    assert _Booster.made[-1] == {"random_seed": 2, "verbose": False, "thread_count": 1,
                                  "allow_writing_files": False}
    labels = (raw[:, :1] > 0).astype(np.float64)
    classes = data._replace(labels=labels, task_type="classification", metric="roc_auc")
    proba = study.predict_valid(study._heads()["catboost(maplight)"], classes, None, raw, 3)
    assert proba.shape == (10,) and ((proba >= 0) & (proba <= 1)).all()


def test_trees_heads_fit_0_4_0s_booster_seeded_as_the_estimators(study, monkeypatch):
    import numpy as np

    from exlm_chem.benchmark.tasks import TaskData
    from exlm_chem.data.splits import held_out_split
    from exlm_chem.model.frozen_trees import FrozenTrees

    fitted = []
    fit = FrozenTrees.fit.__func__

    def recorded(cls, *args, **kwargs):
        fitted.append((args, kwargs, fit(cls, *args, **kwargs)))
        return fitted[-1][2]

    monkeypatch.setattr(FrozenTrees, "fit", classmethod(recorded))
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(60, 3)).astype(np.float32)
    labels = (raw[:, :1] > 0).astype(np.float64)
    data = TaskData("dili", [f"C{i}" for i in range(60)], labels, np.arange(50),
                    np.arange(50, 60), np.zeros(0, np.int64), task_type="classification",
                    metric="roc_auc", held_out_valid=True)
    states = rng.normal(size=(60, 2)).astype(np.float32)
    for name, given in (("trees(rdkit2d)", None), (study.BASELINE, states)):
        proba = study.predict_valid(study._heads()[name], data, given, raw, seed=2)
        assert proba.shape == (10,) and ((proba >= 0) & (proba <= 1)).all()
    seed = held_out_split(data.smiles[:50], 2, 0.0).seed
    for (args, kwargs, trees), reads in zip(fitted, (False, True), strict=True):
        assert kwargs["booster"] == "hist" and trees.trees.booster == "hist"
        assert args[6] == seed and kwargs["forest"] and trees.forest is not None
        assert trees.reads_states == reads


def test_member_heads_average_consecutive_seeds_and_reuse_a_first_member(study, monkeypatch):
    import numpy as np

    from exlm_chem.benchmark.tasks import TaskData
    from exlm_chem.data.splits import held_out_split
    from exlm_chem.model.frozen_trees import FrozenTrees

    seeds = []
    fit = FrozenTrees.fit.__func__

    def recorded(cls, *args, **kwargs):
        seeds.append(args[6])
        assert kwargs["booster"] == "catboost" and not kwargs["forest"]
        assert kwargs["booster_params"] == {"iterations": 20}
        return fit(cls, *args, **kwargs)

    monkeypatch.setattr(FrozenTrees, "fit", classmethod(recorded))
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(60, 3)).astype(np.float32)
    labels = (raw[:, :1] + 0.3 * rng.normal(size=(60, 1)) > 0).astype(np.float64)
    data = TaskData("dili", [f"C{i}" for i in range(60)], labels, np.arange(50),
                    np.arange(50, 60), np.zeros(0, np.int64), task_type="classification",
                    metric="roc_auc", held_out_valid=True)
    one = study.Head("member", False, ("rdkit2d",), (("iterations", 20),))
    three = one._replace(seeds=3)
    drawn = held_out_split(data.smiles[:50], 2, 0.0).seed
    alone = [study.predict_valid(one, data, None, raw, seed=2)]
    assert seeds == [drawn]
    averaged = study.predict_valid(three, data, None, raw, seed=2)
    assert seeds == [drawn, drawn, drawn + 1, drawn + 2]
    reused = study.predict_valid(three, data, None, raw, seed=2, first=alone[0])
    assert seeds[4:] == [drawn + 1, drawn + 2]  # the first member is not fitted again
    assert np.allclose(averaged, reused) and not np.allclose(averaged, alone[0])
    assert ((averaged >= 0) & (averaged <= 1)).all() and averaged.shape == (10,)


# the scaffold study reads the network's valid part; the cluster study the benchmark's
# test part (the held-out clusters), from the second of two folders
@pytest.mark.parametrize(("at", "part"), [("valid", "valid"), ("test", "cluster")])
def test_the_member_report_mixes_each_lever_with_the_networks_outputs(study, tmp_path, at,
                                                                        part):
    import numpy as np

    from exlm_chem.benchmark.tdc import tdc_metric

    out, network = tmp_path / "levers", tmp_path / "network"
    (network / "parts").mkdir(parents=True)
    labels = np.array([0, 1, 0, 1, 1, 0], np.float64)
    np.savez(network / "parts" / "dili_seed1.npz", **{
        f"{at}_labels": labels[:, None],
        f"{at}_network": np.array([[0.1], [0.9], [0.2], [0.8], [0.7], [0.3]])})
    lever = "member(maplight) l2=10"
    predicted = {study.MEMBER: np.array([0.6, 0.4, 0.2, 0.8, 0.7, 0.3]),  # AUROC 8/9
                 lever: np.array([0.1, 0.9, 0.2, 0.8, 0.7, 0.3])}  # AUROC 1
    out.mkdir()
    with open(out / "results.jsonl", "w") as handle:
        for head, values in predicted.items():
            study._keep_predictions(out, "dili", 1, head, values)
            handle.write(json.dumps({"task": "dili", "seed": 1, "head": head,
                                     "metric": "roc_auc", "part": part,
                                     "valid_score": tdc_metric("roc_auc", labels, values)})
                         + "\n")
        # a seed the lever lacks (no network parts: alone only), where the member ranks
        # perfectly: the lever is compared on seed 1 alone, not against the mean of both
        handle.write(json.dumps({"task": "dili", "seed": 2, "head": study.MEMBER,
                                 "metric": "roc_auc", "valid_score": 1.0}) + "\n")
    table = study.member_report(out, [tmp_path / "elsewhere", network])
    row = next(line for line in table.splitlines() if line.startswith(f"| {lever} |"))
    assert "+12.50 %, 1 / 0 of 1" in row  # alone: 1 against 8/9
    # averaged with a network that ranks perfectly, both are perfect
    assert "+0.00 %, 0 / 0 of 1" in row
    data_row = next(line for line in table.splitlines() if line.startswith("| dili |"))
    # the member over its two seeds; the lever on seed 1, its change against seed 1's member
    assert data_row.split("|")[3:7] == [" 0.944 ", " 1.000 ", " 1.000 (+12.5 %, 1) ",
                                        " 1.000 (+0.0 %, 1) "]


def test_the_beside_report_shows_each_lever_on_both_studies_over_their_shared_tasks(
        study, tmp_path) -> None:
    lever = "member(maplight) l2=10"
    scores = {"cluster": {("dili", study.MEMBER): 0.5, ("dili", lever): 0.6,
                          ("herg", study.MEMBER): 0.5, ("herg", lever): 0.1},
              "valid": {("dili", study.MEMBER): 0.8, ("dili", lever): 0.6}}
    folders = {}
    for part, cells in scores.items():
        folders[part] = tmp_path / part
        folders[part].mkdir()
        (folders[part] / "results.jsonl").write_text("".join(
            json.dumps({"task": task, "seed": 1, "head": head, "metric": "roc_auc",
                        "part": part, "valid_score": score}) + "\n"
            for (task, head), score in cells.items()))
    table = study.beside_report([(study._study_split(folders["cluster"]), folders["cluster"],
                                  None),
                                 (study._study_split(folders["valid"]), folders["valid"], None)])
    assert table.startswith("1 tasks: dili.")  # herg, which one study lacks, is left out
    assert "| head | cluster: alone | scaffold: alone |" in table
    row = next(line for line in table.splitlines() if line.startswith(f"| {lever} |"))
    assert row == f"| {lever} | +20.00 %, 1 / 0 of 1 | -25.00 %, 0 / 1 of 1 |"


def test_the_weight_report_mixes_the_mae_rmse_member_at_each_share(study, tmp_path):
    import numpy as np

    from exlm_chem.benchmark.tdc import tdc_metric

    out, network = tmp_path / "levers", tmp_path / "network"
    (network / "parts").mkdir(parents=True)
    labels = np.array([1.0, 2.0, 4.0, 8.0])
    # the network is off by one everywhere; both members are exact, so the mix's MAE is
    # the network's share: 0.25 at 0.75, 0.5 at 0.5, 0 at 1
    np.savez(network / "parts" / "ld50_zhu_seed1.npz", valid_labels=labels[:, None],
             valid_network=(labels + 1)[:, None])
    out.mkdir()
    with open(out / "results.jsonl", "w") as handle:
        for head in (study.MEMBER, "member(maplight) RMSE"):
            study._keep_predictions(out, "ld50_zhu", 1, head, labels)
            handle.write(json.dumps({"task": "ld50_zhu", "seed": 1, "head": head,
                                     "metric": "mae",
                                     "valid_score": tdc_metric("mae", labels, labels)})
                         + "\n")
    table = study.weight_report(out, [network], "member(maplight) MAE+RMSE", (0.5, 0.75, 1.0))
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in table.splitlines()[2:]}
    assert rows == {"0.5": "-100.00 %, 0 / 1 of 1", "0.75": "+0.00 %, 0 / 0 of 1",
                    "1": "+100.00 %, 1 / 0 of 1"}


def test_a_head_for_one_task_type_is_not_fitted_on_the_other(study, tmp_path) -> None:
    head = "member(maplight) RMSE"
    assert study._heads()[head].task_type == "regression"
    # dili is a classification task: nothing is loaded, fitted or written
    assert study.run(["dili"], [1], "no-model", tmp_path / "levers", (head,)) == []
    assert not (tmp_path / "levers" / "results.jsonl").exists()


def test_the_kernel_head_is_kernel_ridge_at_the_penalty_leave_one_out_refits_choose(study):
    import numpy as np
    from sklearn.kernel_ridge import KernelRidge

    rng = np.random.default_rng(3)
    x = rng.poisson(1.0, size=(30, 12)).astype(np.float64)
    y = x[:, :3].sum(axis=1) + rng.normal(size=30)
    train, valid = np.arange(24), np.arange(24, 30)
    kernel = study.tanimoto(x, x)
    assert np.allclose(np.diag(kernel), 1.0) and np.allclose(kernel, kernel.T)
    z = (y[train] - y[train].mean()) / y[train].std()

    def refits(alpha):  # each train row predicted by a ridge fitted without it
        rows = []
        for i in train:
            rest = np.delete(train, i)
            ridge = KernelRidge(alpha=alpha, kernel="precomputed").fit(
                kernel[np.ix_(rest, rest)], z[rest])
            rows.append(ridge.predict(kernel[i, rest][None, :])[0])
        return np.array(rows)

    errors = {a: np.mean((refits(a) - z) ** 2) for a in study.KERNEL_ALPHAS}
    best = min(errors, key=errors.__getitem__)
    dual, loo = study.kernel_ridge(kernel[np.ix_(train, train)], z)
    assert np.allclose(loo, refits(best))
    ridge = KernelRidge(alpha=best, kernel="precomputed").fit(kernel[np.ix_(train, train)], z)
    assert np.allclose(dual, ridge.dual_coef_)
    expected = ridge.predict(kernel[np.ix_(valid, train)]) * y[train].std() + y[train].mean()
    got = study.kernel_predict(x[train], y[train], x[valid], False, np.array([False]))
    assert np.allclose(got, expected)

    labels = (y > np.median(y)).astype(np.float64)
    probabilities = study.kernel_predict(x[train], labels[train], x[valid], True,
                                         np.array([False]))
    assert probabilities.shape == (6,) and ((probabilities > 0) & (probabilities < 1)).all()
    assert np.corrcoef(probabilities, y[valid])[0, 1] > 0  # ranks as the target does
