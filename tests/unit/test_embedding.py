"""exlm_chem.embedding: pooled encoder states, aligned with the input, NaN where invalid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.inference_inputs import inference_inputs
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.embedding import EmbeddingResult, embed, iter_embeddings
from exlm_chem.model.checkpoint import load_checkpoint
from exlm_chem.model.molecule_model import EMBED, MoleculeModel

TOL = {"rtol": 1e-4, "atol": 1e-5}  # batched vs one-by-one forward: float32 rounding only


@pytest.fixture(scope="module")
def bbbp_smiles(moleculenet_dir) -> list[str]:
    """40 real BBBP SMILES that RDKit parses (lengths 10 to 100+ characters)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz")
    good = [s for s in frame["smiles"] if Chem.MolFromSmiles(s) is not None]
    return good[:40]


@pytest.fixture(scope="module")
def embedder(tiny_checkpoint) -> MoleculeModel:
    return MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")


def _direct(checkpoint, smiles: list[str], pooling: str) -> np.ndarray:
    """One molecule per forward pass, the model reading RDKit's canonical SMILES, pooling
    written out here (no exlm_chem.data.featurize)."""
    from rdkit import Chem

    model, config, _ = load_checkpoint(checkpoint)
    tok = SmilesTokenizer(checkpoint / "vocab.txt")
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    rows = []
    with torch.no_grad():
        for s in smiles:
            ids = np.asarray(tok.encode(Chem.MolToSmiles(Chem.MolFromSmiles(s)), max_length=256))
            input_ids, pos_o, pos_c, mask = inference_inputs([ids], config.k_states, special)
            assert input_ids[0, 0] == tok.bos_id and mask.all()  # one row: no padding
            hidden = model(input_ids, pos_o, pos_c, mask)[0]  # [X, d]
            rows.append((hidden[0] if pooling == "bos" else hidden.mean(0)).numpy())
    return np.stack(rows)


@pytest.mark.parametrize("pooling", ["bos", "mean"])
@pytest.mark.parametrize("batch_size", [1, 64])
def test_valid_rows_equal_a_direct_forward(tiny_checkpoint, embedder, bbbp_smiles, pooling,
                                           batch_size):
    expected = _direct(tiny_checkpoint, bbbp_smiles, pooling)
    X, valid = embed(bbbp_smiles, model=embedder, pooling=pooling, batch_size=batch_size)
    assert X.dtype == np.float32 and X.shape == (40, 64)
    assert valid.dtype == bool and valid.all()
    np.testing.assert_allclose(X, expected, **TOL)


def test_the_inference_loop_equals_a_direct_forward(tiny_checkpoint, embedder, bbbp_smiles):
    from rdkit import Chem

    canonical = [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in bbbp_smiles]
    for pooling in ("bos", "mean"):
        np.testing.assert_allclose(embedder.view(pooling).run(canonical, EMBED, batch_size=7),
                                   _direct(tiny_checkpoint, bbbp_smiles, pooling), **TOL)
    with pytest.raises(ValueError, match="pooling"):
        embedder.view("max")


def test_bos_and_mean_pooling_differ(embedder, bbbp_smiles):
    bos = embed(bbbp_smiles[:5], model=embedder, pooling="bos").embeddings
    mean = embed(bbbp_smiles[:5], model=embedder, pooling="mean").embeddings
    assert np.abs(bos - mean).max() > 0.1


def test_shuffled_input_gives_shuffled_output(embedder, bbbp_smiles):
    X = embed(bbbp_smiles, model=embedder, batch_size=5).embeddings
    perm = np.random.default_rng(0).permutation(len(bbbp_smiles))
    shuffled = [bbbp_smiles[i] for i in perm]
    Y = embed(shuffled, model=embedder, batch_size=5).embeddings
    np.testing.assert_allclose(Y, X[perm], **TOL)
    # distinct molecules get distinct vectors (a constant output would pass the line above)
    assert np.abs(X[0] - X[1]).max() > 1e-3


def test_embeddings_do_not_depend_on_how_a_molecule_is_written(embedder):
    written = ["OCC", "C(C)O", "CCO", "c1ccccc1O", "Oc1ccccc1", "C1CC"]
    out = embed(written, model=embedder)
    np.testing.assert_array_equal(out.embeddings[0], out.embeddings[2])
    np.testing.assert_array_equal(out.embeddings[1], out.embeddings[2])
    np.testing.assert_array_equal(out.embeddings[3], out.embeddings[4])
    assert not np.array_equal(out.embeddings[2], out.embeddings[4])
    assert out.valid.tolist() == [True] * 5 + [False]


def test_invalid_rows_are_nan_and_masked(embedder, bbbp_smiles):
    bad = {
        1: None,
        3: "",
        4: "   ",
        6: 42,
        7: float("nan"),
        9: "C1CC",  # unclosed ring
        10: b"CCO",  # bytes, not str
        12: "C" * 2500,  # parsable, but longer than the 2000-character limit
        13: "x" * 100_000,
    }
    rows: list[object] = list(bbbp_smiles[:15])
    for i, value in bad.items():
        rows[i] = value
    X, valid = embed(rows, model=embedder, batch_size=4)
    assert X.shape == (15, 64)
    assert np.flatnonzero(~valid).tolist() == sorted(bad)
    assert np.isnan(X[~valid]).all()
    assert np.isfinite(X[valid]).all()
    good = [i for i in range(15) if i not in bad]
    clean = embed([rows[i] for i in good], model=embedder).embeddings
    np.testing.assert_allclose(X[good], clean, **TOL)


def test_long_valid_smiles_is_truncated_to_max_length(embedder):
    # 1500 carbons tokenise to 1500 tokens; max_length 256 keeps BOS, 254 carbons, EOS.
    # The BOS state: a mean over hundreds of like states moves by ~1e-5 for one carbon
    # more, within TOL, so it could not tell 254 carbons from 253
    X, valid = embed(["C" * 1500, "C" * 254, "C" * 253], model=embedder, max_length=256,
                     pooling="bos")
    assert valid.all()
    np.testing.assert_allclose(X[0], X[1], **TOL)
    assert np.abs(X[0] - X[2]).max() > 1e-4


def test_empty_and_all_invalid_inputs(embedder):
    X, valid = embed([], model=embedder)
    assert X.shape == (0, 64) and valid.shape == (0,)
    X, valid = embed([None, "?"], model=embedder)
    assert X.shape == (2, 64) and not valid.any() and np.isnan(X).all()


def test_accepts_series_arrays_and_returns_a_named_tuple(embedder, bbbp_smiles):
    ref = embed(bbbp_smiles[:6], model=embedder)
    assert isinstance(ref, EmbeddingResult)
    for data in (pd.Series(bbbp_smiles[:6]), np.array(bbbp_smiles[:6], dtype=object),
                 tuple(bbbp_smiles[:6])):
        np.testing.assert_allclose(embed(data, model=embedder).embeddings, ref.embeddings,
                                   **TOL)


def test_iter_embeddings_chunks_concatenate_to_embed(embedder, bbbp_smiles):
    rows: list[object] = list(bbbp_smiles[:30])
    rows[8], rows[21] = "not_a_molecule", None
    whole = embed(rows, model=embedder)
    chunks = list(iter_embeddings(iter(rows), model=embedder, chunk_size=7, batch_size=3))
    assert [c.start for c in chunks] == [0, 7, 14, 21, 28]
    assert [len(c.valid) for c in chunks] == [7, 7, 7, 7, 2]
    np.testing.assert_allclose(np.concatenate([c.embeddings for c in chunks]), whole.embeddings,
                               **TOL)
    np.testing.assert_array_equal(np.concatenate([c.valid for c in chunks]), whole.valid)
    reasons = [r for c in chunks for r in c.reasons]
    assert [i for i, r in enumerate(reasons) if r is not None] == [8, 21]
    assert reasons[8].startswith("SMILES Parse Error: syntax error")  # RDKit's own words
    assert "not a string" in reasons[21]


def test_iter_embeddings_is_lazy(embedder, bbbp_smiles):
    consumed = []

    def source():
        for i, s in enumerate(bbbp_smiles[:20]):
            consumed.append(i)
            yield s

    stream = iter_embeddings(source(), model=embedder, chunk_size=5)
    first = next(stream)
    assert first.embeddings.shape == (5, 64)
    assert len(consumed) <= 6  # one chunk (plus the look-ahead that ends it), not all 20


def test_training_mode_is_restored_and_dropout_off(tiny_checkpoint, bbbp_smiles):
    embedder = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    embedder.train()
    a = embed(bbbp_smiles[:8], model=embedder).embeddings
    b = embed(bbbp_smiles[:8], model=embedder).embeddings
    np.testing.assert_array_equal(a, b)  # dropout would make these differ
    assert embedder.training and embedder.encoder.training
    assert not any(p.grad is not None for p in embedder.parameters())


def test_model_given_as_a_path_or_default(tiny_checkpoint, bbbp_smiles, monkeypatch, embedder):
    ref = embed(bbbp_smiles[:4], model=embedder).embeddings
    by_path = embed(bbbp_smiles[:4], model=str(tiny_checkpoint), device="cpu").embeddings
    np.testing.assert_array_equal(by_path, ref)
    monkeypatch.setenv("EXLM_CHEM_MODEL", str(tiny_checkpoint))
    by_default = embed(bbbp_smiles[:4], device="cpu").embeddings
    np.testing.assert_array_equal(by_default, ref)


def test_bad_options_are_clear_errors(embedder, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="pooling"):
        embed(["CCO"], model=embedder, pooling="max")
    with pytest.raises(ValueError, match="batch_size"):
        embed(["CCO"], model=embedder, batch_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        iter_embeddings(["CCO"], model=embedder, chunk_size=0)  # eager, before next()
    with pytest.raises(TypeError, match="MoleculeModel"):
        embed(["CCO"], model=42)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        embed(["CCO"], model=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        embed(["CCO"], model=tmp_path)  # a directory, but no checkpoint in it
    monkeypatch.setenv("EXLM_CHEM_MODEL", str(tmp_path / "unset"))
    with pytest.raises(FileNotFoundError, match="EXLM_CHEM_MODEL"):
        embed(["CCO"])
