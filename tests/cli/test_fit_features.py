"""``exlm-chem fit --features/--feature-columns`` and ``predict`` reading them back."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from exlm_chem.cli import main

pytestmark = pytest.mark.usefixtures("few_catboost_trees")


@pytest.fixture(scope="module")
def train_csv(moleculenet_dir, tmp_path_factory):
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz").iloc[200:236].reset_index(drop=True)
    frame["smiles"] = frame["smiles"] + " "  # as in Delaney's ESOL file: a trailing space
    frame.loc[3, "smiles"] = "C1CC"  # one invalid row
    frame["logp_guess"] = np.linspace(-2, 4, len(frame))
    path = tmp_path_factory.mktemp("fit_features") / "train.csv"
    frame.to_csv(path, index=False)
    return path


def test_fit_with_descriptors_and_a_column_then_predict(train_csv, tiny_checkpoint, tmp_path,
                                                        capsys):
    model = tmp_path / "model"
    assert main(["fit", str(train_csv), "--target-columns", "p_np", "--out", str(model),
                 "--pretrained", str(tiny_checkpoint), "--epochs", "1", "--device", "cpu",
                 "--features", "rdkit2d", "--feature-columns", "logp_guess",
                 "--on-invalid", "drop", "--n-jobs", "1", "--no-progress"]) == 0
    assert "trained on 35 rows" in capsys.readouterr().out  # trailing spaces are fine
    meta = json.loads((model / "metadata.json").read_text())
    assert meta["params"]["features"] == ["rdkit2d", "columns"]
    assert meta["fitted"]["features"]["names"]["columns"] == ["logp_guess"]
    out = tmp_path / "pred.csv"
    assert main(["predict", str(model), str(train_csv), "--out", str(out),
                 "--keep-columns", "name", "--no-progress"]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["row", "name", "valid", "invalid_reason", "p_np"]
    assert pred["valid"].tolist() == [i != 3 for i in range(36)]
    assert np.isfinite(pred["p_np"][pred["valid"]]).all() and np.isnan(pred["p_np"][3])

    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    frame = pd.read_csv(train_csv)
    est = ExLMMoleculeClassifier.load(model)
    direct = est.predict_proba(frame[["smiles", "logp_guess"]])[:, 0]  # the p_np column
    np.testing.assert_allclose(pred["p_np"], direct, rtol=1e-5)

    without = tmp_path / "no_column.csv"
    frame.drop(columns="logp_guess").to_csv(without, index=False)
    with pytest.raises(ValueError, match="logp_guess"):
        main(["predict", str(model), str(without), "--out", str(tmp_path / "p2.csv"),
              "--no-progress"])


def test_feature_columns_must_not_be_targets(train_csv, tiny_checkpoint, tmp_path):
    with pytest.raises(ValueError, match=r"--feature-columns \['p_np'\] are also"):
        main(["fit", str(train_csv), "--target-columns", "p_np", "--out", str(tmp_path / "m"),
              "--pretrained", str(tiny_checkpoint), "--feature-columns", "p_np"])


@pytest.mark.parametrize(("task", "flags", "expected"), [
    ("regression", [], ["rdkit2d"]),  # the regressor's own default
    ("regression", ["--features", "none"], None),
    ("classification", [], None),
])
def test_fit_follows_each_estimators_default_features(train_csv, tiny_checkpoint, tmp_path,
                                                      task, flags, expected):
    model = tmp_path / "model"
    target = "p_np" if task == "classification" else "logp_guess"
    assert main(["fit", str(train_csv), "--target-columns", target, "--task", task,
                 "--out", str(model), "--pretrained", str(tiny_checkpoint), "--epochs", "1",
                 "--device", "cpu", "--on-invalid", "drop", "--n-jobs", "1",
                 "--no-progress", *flags]) == 0
    meta = json.loads((model / "metadata.json").read_text())
    assert (meta["fitted"]["features"] or {}).get("kinds") == expected


def test_fit_refuses_none_with_other_features(train_csv, tiny_checkpoint, tmp_path):
    with pytest.raises(ValueError, match="--features none cannot go with other kinds"):
        main(["fit", str(train_csv), "--target-columns", "logp_guess", "--task",
              "regression", "--out", str(tmp_path / "m"), "--pretrained",
              str(tiny_checkpoint), "--features", "none", "rdkit2d", "--no-progress"])
