"""Inputs that used to pass as valid, crash a batch, or come back wrong without a word."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from exlm_chem.data.featurize import UnknownTokensWarning, check_smiles
from exlm_chem.embedding import embed
from exlm_chem.errors import InvalidSmilesError
from exlm_chem.model.molecule_model import PREDICT
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor
from exlm_chem.train.finetune import target_scaling

pytestmark = pytest.mark.usefixtures("few_catboost_trees")

JUNK = ["c1ccccc1 this is not a molecule", "CC\nO", " CC O ", "\tC\tO", "C\u2003C"]


def test_whitespace_followed_by_text_is_invalid_with_that_reason():
    checked = check_smiles(JUNK)
    assert not checked.valid.any()
    # positions are those of the entry as given, leading whitespace included
    assert [r.split(":")[0] for r in checked.reasons] == [
        "whitespace ' ' at position 8", "whitespace '\\n' at position 2",
        "whitespace ' ' at position 3", "whitespace '\\t' at position 2",
        "whitespace '\\u2003' at position 1"]
    assert all("a SMILES is one word" in r for r in checked.reasons)


def test_leading_and_trailing_whitespace_is_stripped():
    rows = ["CCO ", "\tCCO", " OCC\n", "c1ccccc1\u2003", "  "]
    checked = check_smiles(rows)
    assert checked.valid.tolist() == [True, True, True, True, False]
    assert checked.canonical[:4] == ["CCO", "CCO", "CCO", "c1ccccc1"]
    assert checked.reasons[4] == "empty SMILES"


def test_junk_rows_never_reach_the_model(fitted_classifier, bbbp_rows):
    X, _ = bbbp_rows
    p = fitted_classifier.predict_proba([X[0], *JUNK, X[1]])
    assert np.isfinite(p[[0, -1]]).all() and np.isnan(p[1:-1]).all()
    with pytest.raises(InvalidSmilesError, match=r"row 2: 'CC\\nO': whitespace"):
        ExLMMoleculeClassifier(None, preset="tiny", epochs=0).fit([X[0], X[1], "CC\nO"],
                                                                  [0, 1, 0])


def test_lone_surrogate_is_one_nan_row_not_a_crash(fitted_classifier, bbbp_rows,
                                                   tiny_checkpoint):
    X, _ = bbbp_rows
    rows = [X[0], "C\ud800C", X[1], "\udcff"]
    assert check_smiles(rows).reasons[1] == ("not encodable text (lone surrogate '\\ud800' "
                                             "at position 1)")
    p = fitted_classifier.predict_proba(rows)
    assert np.isnan(p[[1, 3]]).all()
    np.testing.assert_allclose(p[[0, 2]], fitted_classifier.predict_proba([X[0], X[1]]),
                               rtol=1e-6)
    result = embed(rows, model=str(tiny_checkpoint), device="cpu")
    assert result.valid.tolist() == [True, False, True, False]


def test_molecules_of_unknown_tokens_are_warned_about_and_counted(fitted_classifier,
                                                                  tiny_checkpoint):
    rows = ["[13CH4]", "CCO", "[Uuo]", "C[Uuo][13CH4]", "c1ccccc1"]
    with pytest.warns(UnknownTokensWarning, match=r"3 of 5 molecules are mostly tokens unknown "
                                                  r"to the model \(\[UNK\]\): 2 entirely, 1 for "
                                                  r"more than 50% .*rows \[0, 2, 3\]"):
        p = fitted_classifier.predict_proba(rows)
    assert np.isfinite(p).all()
    # why it matters: the network reads all-[UNK] molecules as one (up to float summation
    # order: length-bucketed batches put them beside different neighbours); only the
    # descriptor members of the tree head still tell them apart
    inputs = fitted_classifier._prepared(rows, "raise")
    net = fitted_classifier.model_.run(inputs.smiles, PREDICT, 32, inputs.features)
    np.testing.assert_allclose(net[0], net[2], rtol=1e-6)
    with pytest.warns(UnknownTokensWarning, match=r"1 of 2 molecules.*rows \[1\]"):
        embed(["CCO", "[Uuo]"], model=str(tiny_checkpoint), device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted_classifier.predict_proba(["CCO", "c1ccccc1O"])


@pytest.mark.parametrize("level", [1e20, 1e-25])
def test_regression_targets_far_from_one_are_standardised_in_float64(level, bbbp_rows,
                                                                     tiny_checkpoint):
    X, _ = bbbp_rows
    z = np.random.default_rng(0).standard_normal(len(X))
    y = level * (1.0 + 0.1 * z)  # spread 0.1 * level
    mean, scale = target_scaling(y[:, None])
    np.testing.assert_allclose(mean, [y.mean()], rtol=1e-12)
    np.testing.assert_allclose(scale, [y.std()], rtol=1e-12)
    reg = ExLMMoleculeRegressor(str(tiny_checkpoint), epochs=1, batch_size=16,
                                validation_fraction=0, random_state=0, device="cpu").fit(X, y)
    pred = reg.predict(X)
    assert np.isfinite(pred).all()
    assert np.abs(pred - y.mean()).max() < 5 * y.std()  # the original units, not ~0 or NaN


def test_targets_beyond_float32_are_refused(bbbp_rows):
    X, _ = bbbp_rows
    y = np.full(len(X), 1e39)
    with pytest.raises(ValueError, match=r"beyond the float32 range.*rows \[0, 1, 2"):
        ExLMMoleculeRegressor(None, preset="tiny", epochs=0).fit(X, y)


def test_prediction_calls_leave_the_estimator_as_fit_left_it(fitted_classifier, bbbp_rows):
    X, y = bbbp_rows
    before = set(vars(fitted_classifier))
    fitted_classifier.predict(["C1CC", X[0]])
    fitted_classifier.transform(["C1CC", X[0]])
    with pytest.warns(UserWarning, match="1 invalid SMILES left out of the score"):
        fitted_classifier.score([X[0], "C1CC", *X[1:4]], [y[0], y[0], *y[1:4]])
    with pytest.raises(InvalidSmilesError):
        fitted_classifier.predict([X[0], X[1], "CC O"], on_invalid="raise")
    with pytest.raises(ValueError, match="on_invalid must be one of"):
        fitted_classifier.predict([X[0]], on_invalid="drop")
    assert set(vars(fitted_classifier)) == before


def test_single_class_score_warns(fitted_classifier, bbbp_rows):
    X, y = bbbp_rows
    with pytest.warns(UserWarning, match="1 of 1 task.*single class.*the score is NaN"):
        assert np.isnan(fitted_classifier.score(X[:4], np.zeros(4, dtype=int)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0 <= fitted_classifier.score(X, y) <= 1
