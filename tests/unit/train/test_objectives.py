"""The objectives' values and counts, computed without waiting for the device."""

from __future__ import annotations

import numpy as np
import torch

from exlm_chem.data.collate import IGNORE_INDEX, SpecialIds
from exlm_chem.data.collate_flat import collate_exlm_flat, collate_mlm_flat, mask_flat
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.train.objectives import (
    descriptor_loss,
    equivalence_loss,
    exlm_loss,
    mlm_loss,
    translation_loss,
)

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


# ----- the descriptor loss (auxiliary objective) --------------------------------------------
class _Identity:
    """A model whose descriptor head returns the BOS state itself: predictions by hand."""

    descriptor_head = staticmethod(lambda x: x)


def _by_hand(predicted: list[list[float]]) -> torch.Tensor:
    """Hidden states [B, 2, D] whose BOS states are ``predicted``."""
    bos = torch.tensor(predicted)
    return torch.stack([bos, torch.full_like(bos, 99.0)], dim=1)


PREDICTED = [[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]]
TARGETS = torch.tensor([[3.0, float("nan"), -2.0], [0.5, -4.0, 1.0]])


def test_descriptor_loss_clips_the_targets_first():
    hidden = _by_hand(PREDICTED)
    # unclipped: (0-3)^2 + (-1+2)^2 + (2-0.5)^2 + (0+4)^2 + (0.5-1)^2 over the 5 known
    assert descriptor_loss(_Identity, hidden, TARGETS) == torch.tensor(28.5) / 5
    # clipped to ±1.5: 3 -> 1.5, -2 -> -1.5, -4 -> -1.5; the NaN stays left out
    want = torch.tensor((0 - 1.5) ** 2 + (-1 + 1.5) ** 2 + (2 - 0.5) ** 2 + (0 + 1.5) ** 2
                        + (0.5 - 1) ** 2) / 5
    assert descriptor_loss(_Identity, hidden, TARGETS, clip=1.5) == want == torch.tensor(1.45)
    # a clip beyond every target changes nothing, bit for bit
    assert torch.equal(descriptor_loss(_Identity, hidden, TARGETS, clip=6.0),
                       descriptor_loss(_Identity, hidden, TARGETS))


def test_descriptor_loss_counts_only_the_given_columns():
    hidden = _by_hand(PREDICTED)
    columns = torch.tensor([True, False, True])
    # columns 0 and 2: (0-3)^2 + (-1+2)^2 + (2-0.5)^2 + (0.5-1)^2 over 4 entries
    got = descriptor_loss(_Identity, hidden, TARGETS, columns=columns)
    assert got == torch.tensor(9.0 + 1.0 + 2.25 + 0.25) / 4
    # a column left out may hold anything; with the clip as well
    other = TARGETS.clone()
    other[:, 1] = 1e6
    assert descriptor_loss(_Identity, hidden, other, columns=columns) == got
    assert descriptor_loss(_Identity, hidden, other, clip=1.5, columns=columns) == torch.tensor(
        2.25 + 0.25 + 2.25 + 0.25) / 4
    # no column drawn at all: 0, not NaN
    none = torch.zeros(3, dtype=torch.bool)
    assert descriptor_loss(_Identity, hidden, TARGETS, columns=none) == 0.0


def _descriptor_loss_before(model, hidden, targets):
    """descriptor_loss as it was before clip and columns (commit e4d2285), the reference."""
    predicted = model.descriptor_head(hidden[:, 0]).float()
    known = torch.isfinite(targets)
    error = torch.where(known, predicted - torch.nan_to_num(targets), 0.0)
    return error.square().sum() / known.sum().clamp(min=1)


def test_descriptor_loss_with_all_columns_is_the_old_loss_bit_for_bit():
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", vocab_size=30, n_descriptors=35)
    model = ExLMModel(config)
    hidden = torch.randn(8, 5, config.d_model)
    targets = torch.randn(8, 35) * 3
    targets[2, 4] = float("nan")
    want = _descriptor_loss_before(model, hidden, targets)
    assert torch.equal(descriptor_loss(model, hidden, targets), want)
    # an all-True mask (a share that rounds to every column) is the same loss too
    every = torch.ones(35, dtype=torch.bool)
    assert torch.equal(descriptor_loss(model, hidden, targets, columns=every), want)


def test_columns_left_out_get_no_gradient():
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", vocab_size=30, n_descriptors=6)
    model = ExLMModel(config)
    columns = torch.tensor([True, False, False, True, False, True])
    loss = descriptor_loss(model, torch.randn(4, 3, config.d_model), torch.randn(4, 6),
                           columns=columns)
    loss.backward()
    out = model.descriptor_head.out  # its last layer: one row (and bias) per column
    rows = out.weight.grad.abs().sum(dim=1) + out.bias.grad.abs()
    assert (rows[~columns] == 0).all() and (rows[columns] > 0).all()


def test_equivalence_loss_is_the_two_way_infonce_of_the_mean_pooled_views():
    torch.manual_seed(0)
    a, b = torch.randn(4, 7, 16), torch.randn(4, 5, 16)
    mask_a = torch.arange(7) < torch.tensor([7, 3, 5, 2]).unsqueeze(1)  # [4, 7]
    mask_b = torch.arange(5) < torch.tensor([5, 4, 1, 2]).unsqueeze(1)  # [4, 5]
    got = equivalence_loss(a, mask_a, b, mask_b, temperature=0.5)
    # by hand: each row's mean over its real tokens, cosine similarities, both directions
    pa = torch.stack([a[i, mask_a[i]].mean(0) for i in range(4)])
    pb = torch.stack([b[i, mask_b[i]].mean(0) for i in range(4)])
    sim = torch.tensor([[float(torch.cosine_similarity(pa[i], pb[j], dim=0)) for j in range(4)]
                        for i in range(4)]) / 0.5
    rows = -torch.stack([sim[i, i] - torch.logsumexp(sim[i], 0) for i in range(4)]).mean()
    cols = -torch.stack([sim[j, j] - torch.logsumexp(sim[:, j], 0) for j in range(4)]).mean()
    torch.testing.assert_close(got, (rows + cols) / 2, rtol=1e-5, atol=1e-6)
    # padding states change nothing
    noisy = a.masked_fill(~mask_a.unsqueeze(-1), 1e3)
    torch.testing.assert_close(equivalence_loss(noisy, mask_a, b, mask_b, 0.5), got)


def test_equivalence_loss_rewards_views_that_agree_and_is_zero_for_one_molecule():
    torch.manual_seed(0)
    a = torch.randn(8, 6, 32)
    mask = torch.ones(8, 6, dtype=torch.bool)
    agree = equivalence_loss(a, mask, a + 0.01 * torch.randn_like(a), mask, 0.1)
    shuffled = equivalence_loss(a, mask, a[torch.randperm(8)], mask, 0.1)
    assert float(agree) < 0.01 < float(shuffled)
    assert float(equivalence_loss(a[:1], mask[:1], a[:1], mask[:1], 0.1)) == 0.0


def _decoder_model() -> ExLMModel:
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", vocab_size=30, dropout=0.0, attention_dropout=0.0,
                               smiles_decoder=True)
    return ExLMModel(config).eval()


def test_translation_loss_is_the_teacher_forced_cross_entropy_from_the_pooled_view():
    model = _decoder_model()
    torch.manual_seed(1)
    hidden = torch.randn(3, 6, 64, requires_grad=True)
    mask = torch.arange(6) < torch.tensor([6, 4, 2]).unsqueeze(1)  # [3, 6]
    canonical = torch.tensor([[0, 7, 8, 9, 2], [0, 11, 2, 1, 1], [0, 5, 6, 2, 1]])  # pad 1
    got = translation_loss(model, hidden, mask, canonical, pad_id=1)
    # by hand: each molecule on its own, its real tokens only, every token after BOS scored
    scores, n = [], 0
    for i, length in enumerate([5, 3, 4]):
        pooled = hidden[i, mask[i]].mean(0, keepdim=True)  # [1, d]
        row = canonical[i : i + 1, :length]
        logits = model.smiles_decoder(pooled, row[:, :-1])[0]  # [length - 1, V]
        scores.append(torch.nn.functional.cross_entropy(logits, row[0, 1:], reduction="sum"))
        n += length - 1
    torch.testing.assert_close(got, torch.stack(scores).sum() / n, rtol=1e-5, atol=1e-6)
    # more padding, and anything in the view's padding, change nothing
    wider = torch.cat([canonical, torch.ones(3, 2, dtype=torch.long)], dim=1)
    noisy = hidden.detach().masked_fill(~mask.unsqueeze(-1), 1e3)
    torch.testing.assert_close(translation_loss(model, noisy, mask, wider, pad_id=1), got)
    # the loss reaches the encoder's states through the pooled vector, real tokens only
    got.backward()
    assert (hidden.grad[mask].abs().sum(-1) > 0).all() and (hidden.grad[~mask] == 0).all()


def test_the_decoder_learns_a_molecule_back_from_its_pooled_state():
    model = _decoder_model().train()
    torch.manual_seed(2)
    hidden = torch.randn(4, 5, 64)
    mask = torch.ones(4, 5, dtype=torch.bool)
    canonical = torch.tensor([[0, 7, 8, 9, 2], [0, 9, 8, 7, 2], [0, 7, 7, 7, 2], [0, 8, 9, 8, 2]])
    optimizer = torch.optim.Adam(model.smiles_decoder.parameters(), lr=1e-2)
    with torch.no_grad():
        first = float(translation_loss(model, hidden, mask, canonical, pad_id=1))
    for _ in range(60):
        optimizer.zero_grad()
        translation_loss(model, hidden, mask, canonical, pad_id=1).backward()
        optimizer.step()
    # four strings that differ only in their middle tokens: only the pooled state tells
    # them apart, so a loss near 0 says the decoder reads it
    with torch.no_grad():
        last = float(translation_loss(model, hidden, mask, canonical, pad_id=1))
    assert first > 2.0 and last < 0.05
