"""Masked-position entropy: equal to a direct, unbatched computation for both objectives."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from exlm_chem.analysis.entropy import (
    batch_entropies,
    entropy_markdown,
    mask_for_entropy,
    masked_entropy,
)
from exlm_chem.data.collate import SpecialIds, collate_exlm
from exlm_chem.data.corpus import read_smiles_file
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model import ExLMConfig, ExLMModel, save_checkpoint
from exlm_chem.model.checkpoint import load_checkpoint

SPECIAL = SpecialIds(bos=0, pad=1, eos=2, mask=4)


def make_mlm_checkpoint(directory):
    """A random tiny MLM checkpoint with weights spread wide enough for peaked outputs."""
    tok = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", len(tok), objective="mlm")
    torch.manual_seed(0)
    model = ExLMModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 1.0)
    return save_checkpoint(directory, model, config, tok.tokens)


@pytest.fixture(scope="module")
def mlm_checkpoint(tmp_path_factory):
    return make_mlm_checkpoint(tmp_path_factory.mktemp("mlm") / "mlm")


@pytest.fixture(scope="module")
def molecules(pretrain_dir):
    # held-out MOSES molecules (the tiny checkpoint trained on the start of moses_train)
    return read_smiles_file(pretrain_dir / "moses_test.smi.gz", limit=6)


def _entropy_bits(logits: torch.Tensor) -> np.ndarray:
    p = torch.softmax(logits.double(), -1).numpy()
    return -(p * np.log2(np.where(p > 0, p, 1.0))).sum(-1)


def _direct_mlm(path, smiles, ratio, seed):
    """Entropy at each masked position, one molecule at a time, positions 0..N-1."""
    model, _, _ = load_checkpoint(path)
    tok = SmilesTokenizer.from_file(path / "vocab.txt")
    values = []
    for row, s in enumerate(smiles):
        sample = mask_for_entropy(np.array(tok.encode(s)), ratio, seed, row, SPECIAL)
        ids = torch.tensor(sample.input_ids)[None]
        n = ids.shape[1]
        with torch.no_grad():
            hidden = model(ids, torch.arange(n)[None], torch.zeros(1, n, dtype=torch.long),
                           torch.ones(1, n, dtype=torch.bool))
            logits = model.lm_head(hidden[0, torch.tensor(sample.masked_positions)])
        values.append(_entropy_bits(logits))
    return np.concatenate(values)


def _direct_exlm(model, sample, k):
    """Aligned-state and all-[MASK]-state entropies by enumerating every alignment."""
    batch = collate_exlm([sample], k, SPECIAL)
    with torch.no_grad():
        hidden = model(batch.input_ids, batch.pos_original, batch.pos_copy, batch.padding_mask)
        logits = model.lm_head(hidden[0, batch.state_index[0]])  # [S, V]
        log_e = model.transition_head(hidden, batch.state_index, batch.state_lengths)[0]
    log_p = torch.log_softmax(logits.double(), -1).numpy()
    log_e = log_e.double().numpy()
    targets = batch.targets[0].numpy()
    n_states, n_targets = log_p.shape[0], len(targets)
    best, best_path = -np.inf, None
    for inner in itertools.combinations(range(1, n_states - 1), n_targets - 2):
        path = [0, *inner, n_states - 1]
        score = sum(log_p[s, y] for s, y in zip(path, targets, strict=True))
        score += sum(log_e[u, v] for u, v in itertools.pairwise(path))
        if score > best:
            best, best_path = score, path
    entropy = _entropy_bits(logits)
    is_mask = batch.input_ids[0, batch.state_index[0]].numpy() == SPECIAL.mask
    return entropy[best_path[1:-1]], entropy[is_mask]


def test_mlm_entropy_equals_direct_computation(mlm_checkpoint, molecules):
    rows = masked_entropy(mlm_checkpoint, molecules, mask_ratios=(0.15, 0.5), seed=3,
                          batch_size=4)
    for row, ratio in zip(rows, (0.15, 0.5), strict=True):
        direct = _direct_mlm(mlm_checkpoint, molecules, ratio, seed=3)
        assert row.objective == "mlm" and row.k_states == 1 and row.mask_ratio == ratio
        assert row.n_targets == direct.size
        assert row.mean == pytest.approx(direct.mean(), rel=1e-5)
        assert row.std == pytest.approx(direct.std(), rel=1e-4)
        assert math.isnan(row.state_mean) and row.unit == "bits"
    assert rows[0].std > 0.05  # the values differ: the comparison is not between constants


def test_exlm_entropy_equals_brute_force_alignment(tiny_checkpoint, molecules):
    model, config, _ = load_checkpoint(tiny_checkpoint)
    tok = SmilesTokenizer.from_file(tiny_checkpoint / "vocab.txt")
    smiles = molecules[:3]
    samples = [mask_for_entropy(np.array(tok.encode(s)), 0.15, 7, i, SPECIAL)
               for i, s in enumerate(smiles)]
    batch = collate_exlm(samples, config.k_states, SPECIAL)  # padded: lengths differ
    result = batch_entropies(model, batch)
    assert result.valid.all()
    aligned, states = [], []
    for i, sample in enumerate(samples):
        direct_aligned, direct_states = _direct_exlm(model, sample, config.k_states)
        np.testing.assert_allclose(result.aligned[i], direct_aligned, atol=1e-4)
        np.testing.assert_allclose(result.mask_states[i], direct_states, atol=1e-4)
        aligned.append(direct_aligned)
        states.append(direct_states)

    (row,) = masked_entropy(tiny_checkpoint, smiles, mask_ratios=(0.15,), seed=7)
    aligned, states = np.concatenate(aligned), np.concatenate(states)
    assert row.objective == "exlm" and row.k_states == config.k_states
    assert row.n_targets == aligned.size and row.n_invalid == 0
    assert row.mean == pytest.approx(aligned.mean(), abs=1e-4)
    assert row.std == pytest.approx(aligned.std(), abs=1e-4)
    assert row.state_mean == pytest.approx(states.mean(), abs=1e-4)
    assert states.size == config.k_states * aligned.size


def test_batching_and_model_do_not_change_the_masks(tiny_checkpoint, mlm_checkpoint, molecules):
    one = masked_entropy(tiny_checkpoint, molecules, mask_ratios=(0.3,), batch_size=1)
    many = masked_entropy(tiny_checkpoint, molecules, mask_ratios=(0.3,), batch_size=6)
    assert one[0].n_targets == many[0].n_targets
    assert one[0].mean == pytest.approx(many[0].mean, abs=1e-5)
    assert one[0].state_mean == pytest.approx(many[0].state_mean, abs=1e-5)
    mlm = masked_entropy(mlm_checkpoint, molecules, mask_ratios=(0.3,))
    assert mlm[0].n_targets == one[0].n_targets  # the same masks for every checkpoint
    table = entropy_markdown(one + mlm)
    assert table.count("\n") == 4 and "| – |" in table


def test_bad_input_names_the_row(mlm_checkpoint):
    with pytest.raises(ValueError, match="row 1: empty SMILES"):
        masked_entropy(mlm_checkpoint, ["CCO", "  "])
    with pytest.raises(ValueError, match=r"mask ratios must be in \(0, 1\]"):
        masked_entropy(mlm_checkpoint, ["CCO"], mask_ratios=(0.0,))
