"""The one model object: every entry point reaches the network through it, checks its
SMILES once and runs the one inference loop; pooling is checked in one place."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from exlm_chem.model.molecule_model import EMBED, PREDICT, MoleculeModel, build_model

PACKAGE = Path(__file__).resolve().parents[3] / "exlm_chem"
pytestmark = pytest.mark.usefixtures("few_catboost_trees")


@pytest.fixture(scope="module")
def bbbp(moleculenet_dir) -> tuple[list[str], np.ndarray]:
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz").iloc[:40]
    return frame["smiles"].tolist(), frame["p_np"].to_numpy()


@pytest.fixture(scope="module")
def classifier(tiny_checkpoint, bbbp):
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    X, y = bbbp
    return ExLMMoleculeClassifier(str(tiny_checkpoint), epochs=1, batch_size=16,
                                  random_state=0, device="cpu").fit(X[:32], y[:32])


@pytest.fixture(scope="module")
def saved_classifier(classifier, tmp_path_factory) -> Path:
    return classifier.save(tmp_path_factory.mktemp("one_model") / "clf")


def _calls(package: Path, names: set[str]) -> dict[str, set[str]]:
    """name -> modules (relative paths) of the package that call it."""
    found: dict[str, set[str]] = {name: set() for name in names}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in names:
                    found[name].add(str(path.relative_to(package)))
    return found


def test_there_is_one_inference_loop():
    calls = _calls(PACKAGE, {"sorted_batches", "inference_inputs", "inference_mode"})
    # the length-sorted batches of inference are cut in one place
    assert calls["sorted_batches"] == {"model/molecule_model.py"}
    # unmasked encoder inputs: per batch in the loop, or once per fit for training
    assert calls["inference_inputs"] == {"model/molecule_model.py", "data/finetune_data.py"}
    # besides the loop, only the analyses of the LM head over masked inputs
    assert calls["inference_mode"] == {"model/molecule_model.py", "analysis/entropy.py",
                                       "analysis/explanation.py"}


def test_a_pooling_is_checked_in_one_place():
    checks = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
                if any((isinstance(p, ast.Constant) and p.value in ("bos", "mean"))
                       or (isinstance(p, ast.Name) and p.id == "POOLINGS") for p in parts):
                    checks.add(str(path.relative_to(PACKAGE)))
    assert checks == {"model/pooling.py"}


def test_every_entry_point_runs_the_model_loop(monkeypatch, tiny_checkpoint, classifier,
                                               saved_classifier, bbbp, tmp_path):
    from exlm_chem.cli import main
    from exlm_chem.embedding import embed, iter_embeddings
    from exlm_chem.screening.manifest import model_sha256
    from exlm_chem.screening.worker import EMBED as SCREEN_EMBED
    from exlm_chem.screening.worker import PREDICT as SCREEN_PREDICT
    from exlm_chem.screening.worker import ModelSpec, compute
    from exlm_chem.sklearn.embedder import ExLMEmbedder

    runs: list[str] = []
    original = MoleculeModel.run

    def counting(self, molecules, output=PREDICT, *args, **kwargs):
        runs.append(output)
        return original(self, molecules, output, *args, **kwargs)

    monkeypatch.setattr(MoleculeModel, "run", counting)
    X = bbbp[0][:6]
    csv = tmp_path / "in.csv"
    pd.DataFrame({"smiles": X}).to_csv(csv, index=False)
    spec = ModelSpec(str(tiny_checkpoint), model_sha256(tiny_checkpoint), SCREEN_EMBED, "cpu",
                     "mean", None, 256)
    predict_spec = spec._replace(path=str(saved_classifier), mode=SCREEN_PREDICT,
                                 sha256=model_sha256(saved_classifier))
    entry_points = {
        "embed": lambda: embed(X, model=tiny_checkpoint, device="cpu"),
        "iter_embeddings": lambda: list(iter_embeddings(X, model=tiny_checkpoint, device="cpu")),
        "ExLMEmbedder": lambda: ExLMEmbedder(tiny_checkpoint, device="cpu").fit_transform(X),
        "predict_proba": lambda: classifier.predict_proba(X),
        "transform": lambda: classifier.transform(X),
        "cli embed": lambda: main(["embed", str(csv), "--model", str(tiny_checkpoint),
                                   "--out", str(tmp_path / "e.npy"), "--no-progress"]),
        "cli predict": lambda: main(["predict", str(saved_classifier), str(csv),
                                     "--out", str(tmp_path / "p.csv"), "--no-progress"]),
        "screen embed": lambda: compute(spec, X),
        "screen predict": lambda: compute(predict_spec, X),
    }
    for name, call in entry_points.items():
        runs.clear()
        with torch.inference_mode(False):
            call()
        assert runs, f"{name} did not reach the network through MoleculeModel.run"


def _parse_counts(monkeypatch) -> Counter:
    from rdkit import Chem

    counts: Counter = Counter()
    original = Chem.MolFromSmiles

    def counting(smiles, *args, **kwargs):
        counts[smiles] += 1
        return original(smiles, *args, **kwargs)

    monkeypatch.setattr(Chem, "MolFromSmiles", counting)
    return counts


def test_a_call_parses_each_distinct_smiles_once(monkeypatch, tiny_checkpoint, classifier,
                                                 saved_classifier, bbbp, tmp_path):
    from exlm_chem.cli import main
    from exlm_chem.embedding import embed

    X = bbbp[0][:5]
    # repeats, another spelling of a molecule, invalid rows (their reasons need no re-parse)
    rows = [X[0], X[1], X[0], "OCC", "CCO", "C1CC", "C1CC", "", None, " CCO ", *X[2:]]
    distinct = {r.strip() for r in rows if isinstance(r, str) and r.strip()}
    csv = tmp_path / "in.csv"
    pd.DataFrame({"smiles": [r if r is not None else "" for r in rows]}).to_csv(csv,
                                                                                index=False)
    calls = {
        "predict_proba": lambda: classifier.predict_proba(rows),
        "transform": lambda: classifier.transform(rows),
        "embed": lambda: embed(rows, model=tiny_checkpoint, device="cpu"),
        "exlm-chem predict": lambda: main(["predict", str(saved_classifier), str(csv),
                                           "--out", str(tmp_path / "p.csv"),
                                           "--no-progress"]),
    }
    # the classifier's tree head reads the check's molecules: no parse of its own
    for name, call in calls.items():
        counts = _parse_counts(monkeypatch)
        call()
        assert counts == dict.fromkeys(distinct, 1), name
        monkeypatch.undo()


@pytest.fixture(scope="module")
def hundred(moleculenet_dir) -> list[str]:
    """100 distinct valid SMILES, none of them the estimators' training molecules."""
    from exlm_chem.data.featurize import check_smiles

    smiles = list(dict.fromkeys(pd.read_csv(moleculenet_dir / "bbbp.csv.gz")["smiles"][40:300]))
    return [s for s, ok in zip(smiles, check_smiles(smiles).valid, strict=True) if ok][:100]


@pytest.fixture(scope="module")
def regressor(tiny_checkpoint, bbbp):
    """The default regressor (RDKit 2D descriptors beside the pooled state, tree head)."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeRegressor

    X, y = bbbp
    return ExLMMoleculeRegressor(str(tiny_checkpoint), epochs=1, batch_size=16,
                                 random_state=0, device="cpu").fit(X[:32], y[:32] * 2.0 - 1)


def test_hundred_molecules_are_hundred_parses_with_the_default_estimators(
        monkeypatch, tiny_checkpoint, classifier, saved_classifier, regressor, hundred,
        tmp_path):
    """The default estimators (tree head, descriptors) parse each molecule once per call:
    the tree head's and the features' descriptors read the check's molecules."""
    from exlm_chem.cli import main
    from exlm_chem.embedding import embed

    assert classifier.tree_head_ is not None and regressor.tree_head_ is not None
    assert regressor.feature_spec_ is not None  # features="auto": RDKit 2D descriptors
    saved_regressor = regressor.save(tmp_path / "reg")
    csv = tmp_path / "hundred.csv"
    pd.DataFrame({"smiles": hundred}).to_csv(csv, index=False)
    calls = {
        "classifier.predict_proba": lambda: classifier.predict_proba(hundred),
        "classifier.predict": lambda: classifier.predict(hundred),
        "classifier.transform": lambda: classifier.transform(hundred),
        "regressor.predict": lambda: regressor.predict(hundred),
        "regressor.transform": lambda: regressor.transform(hundred),
        "embed": lambda: embed(hundred, model=tiny_checkpoint, device="cpu"),
        "exlm-chem predict (classifier)": lambda: main(
            ["predict", str(saved_classifier), str(csv), "--out", str(tmp_path / "c.csv"),
             "--no-progress"]),
        "exlm-chem predict (regressor)": lambda: main(
            ["predict", str(saved_regressor), str(csv), "--out", str(tmp_path / "r.csv"),
             "--no-progress"]),
    }
    for name, call in calls.items():
        counts = _parse_counts(monkeypatch)
        call()
        assert sum(counts.values()) == 100 and set(counts) == set(hundred), name
        monkeypatch.undo()


def test_views_share_the_weights_and_the_mode(tiny_checkpoint, bbbp):
    model = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    bos = model.view("bos")
    assert model.view("mean") is model and bos.encoder is model.encoder
    assert not bos.training and not model.training
    assert bos.view(max_length=20).max_length == 20 and bos.max_length == 256
    X = bbbp[0][:8]
    np.testing.assert_array_equal(bos.embed(X).values, model.view("bos").run(
        bos.prepare(X).smiles, EMBED))
    with pytest.raises(ValueError, match="max_length must be an integer >= 3"):
        model.view(max_length=2)
    with pytest.raises(ValueError, match="outside the encoder's 2 blocks"):
        model.view(model.pooling.__class__("mean", layer=2))


def test_outputs_keep_rows_and_reasons(tiny_checkpoint):
    model = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    out = model.embed(["CCO", "C1CC", None, "OCC"])
    assert out.values.shape == (4, 64) and out.values.dtype == np.float32
    assert out.valid.tolist() == [True, False, False, True]
    assert out.reasons[0] is None and "unclosed ring" in out.reasons[1]
    assert np.isnan(out.values[1:3]).all()
    np.testing.assert_array_equal(out.values[0], out.values[3])  # one canonical form
    with pytest.raises(ValueError, match="no head"):
        model.run(["CCO"], PREDICT)


def test_settings_rebuild_the_model(tiny_checkpoint):
    from exlm_chem.model.saved_model import model_from_bytes, model_to_bytes

    base = MoleculeModel.from_checkpoint(tiny_checkpoint)
    torch.manual_seed(0)
    model = build_model(base.config, base.tokenizer, 2, base.encoder.state_dict(), 0.2,
                        "bos", 100, pooling_layer=0)
    settings = model.settings()
    assert settings == {"pooler_dropout": 0.2, "pooling": "bos", "max_length": 100,
                        "n_features": 0, "pooling_layer": 0}
    again = model_from_bytes(model_to_bytes(model), base.config, base.tokenizer, 2, **settings)
    assert again.pooling == model.pooling and again.max_length == 100
    X = ["CCO", "c1ccccc1O"]
    np.testing.assert_array_equal(again.run(X), model.eval().run(X))
