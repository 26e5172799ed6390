"""The objectives' values and counts, computed without waiting for the device."""

from __future__ import annotations

import numpy as np
import torch

from exlm_chem.data.collate import IGNORE_INDEX, SpecialIds
from exlm_chem.data.collate_flat import collate_exlm_flat, collate_mlm_flat, mask_flat
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.train.objectives import exlm_loss, mlm_loss

SPECIAL = SpecialIds(bos=0, pad=1, eos=2, mask=4)


def _masked(n: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = [np.concatenate(([0], rng.integers(5, 30, rng.integers(4, 20)), [2])) for _ in range(n)]
    return mask_flat(np.concatenate(rows), np.array([len(r) for r in rows]), 0.3, rng, SPECIAL)


def _model(objective: str) -> ExLMModel:
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", vocab_size=30, objective=objective, dropout=0.0,
                               attention_dropout=0.0)
    return ExLMModel(config).eval()


def test_exlm_loss_is_the_mean_over_samples_with_a_path_and_counts_the_rest():
    model = _model("exlm")
    batch = collate_exlm_flat(_masked(), 2, SPECIAL)
    # sample 1 gets fewer states than targets: no path through its DAG
    lengths = batch.state_lengths.clone()
    lengths[1] = batch.target_lengths[1] - 1
    broken = batch._replace(state_lengths=lengths)
    out = exlm_loss(model, broken)
    assert isinstance(out.n_invalid, torch.Tensor) and int(out.n_invalid) == 1
    singles = [exlm_loss(model, type(batch)(*(t[i : i + 1] for t in batch))).loss
               for i in range(6) if i != 1]
    torch.testing.assert_close(out.loss, torch.stack(singles).mean(), rtol=1e-5, atol=1e-6)
    out.loss.backward()  # the invalid sample contributes a zero, finite gradient
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_exlm_loss_without_any_path_is_zero_and_still_backpropagates():
    model = _model("exlm")
    batch = collate_exlm_flat(_masked(2), 2, SPECIAL)
    out = exlm_loss(model, batch._replace(state_lengths=batch.target_lengths - 1))
    assert float(out.loss.detach()) == 0.0 and int(out.n_invalid) == 2
    out.loss.backward()  # every parameter gets a (zero) gradient, as DDP needs
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and not g.any() for g in grads)


def test_mlm_loss_is_cross_entropy_on_the_masked_positions_only():
    model = _model("mlm")
    batch = collate_mlm_flat(_masked(), SPECIAL)
    out = mlm_loss(model, batch, with_accuracy=True)
    hidden = model(batch.input_ids, batch.pos_original, batch.pos_copy, batch.padding_mask)
    selected = batch.labels != IGNORE_INDEX
    want = torch.nn.functional.cross_entropy(model.lm_head(hidden[selected]).float(),
                                             batch.labels[selected])
    torch.testing.assert_close(out.loss, want)
    assert out.n_predicted == int(selected.sum()) and 0 <= out.n_correct <= out.n_predicted
