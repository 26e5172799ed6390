import numpy as np
import pytest
import torch

from exlm_chem.data.collate import (
    IGNORE_INDEX,
    MaskedSample,
    SpecialIds,
    collate_exlm,
    collate_mlm,
    mask_tokens,
)
from exlm_chem.data.inference_inputs import inference_inputs

SPECIAL = SpecialIds(bos=0, pad=1, eos=2, mask=4)
BOS, EOS, M = 0, 2, 4


def test_expansion_matches_the_worked_example_k3():
    # [BOS, a, M, b, M, M, c, EOS] with a=10, b=11, c=12 and masked originals 20, 21, 22
    ids = np.array([BOS, 10, M, 11, M, M, 12, EOS])
    sample = MaskedSample(ids, np.array([2, 4, 5]), np.array([20, 21, 22]))
    batch = collate_exlm([sample], 3, SPECIAL)  # one row: no padding
    expanded, pos_o, pos_c, states, targets = (batch[i][0] for i in (0, 1, 2, 4, 6))
    assert expanded.tolist() == [BOS] * 3 + [10] + [M] * 3 + [11] + [M] * 6 + [12] + [EOS] * 3
    assert pos_o.tolist() == [0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 5, 5, 5, 6, 7, 7, 7]
    assert pos_c.tolist() == [1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3, 0, 1, 2, 3]
    assert states.tolist() == [0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17]
    assert targets.tolist() == [BOS, 20, 21, 22, EOS]


def test_mask_tokens_never_masks_specials_and_masks_at_least_one():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 40):
        ids = np.concatenate(([BOS], np.arange(10, 10 + n), [EOS]))
        s = mask_tokens(ids, 0.15, rng, SPECIAL)
        assert 1 <= len(s.masked_positions) <= n
        assert s.input_ids[0] == BOS and s.input_ids[-1] == EOS
        assert np.all(s.input_ids[s.masked_positions] == M)
        assert np.array_equal(ids[s.masked_positions], s.masked_targets)
        unmasked = np.setdiff1d(np.arange(len(ids)), s.masked_positions)
        assert np.array_equal(s.input_ids[unmasked], ids[unmasked])


def test_mask_ratio_is_unbiased():
    rng = np.random.default_rng(1)
    ids = np.concatenate(([BOS], np.arange(10, 50), [EOS]))  # 40 ordinary tokens
    counts = [len(mask_tokens(ids, 0.15, rng, SPECIAL).masked_positions) for _ in range(4000)]
    assert abs(np.mean(counts) - 6.0) < 0.1


def test_fragment_masking_masks_whole_groups_within_budget():
    rng = np.random.default_rng(2)
    ids = np.concatenate(([BOS], np.arange(10, 30), [EOS]))  # 20 tokens -> budget 3 or 4
    groups = [np.array([1, 2]), np.array([3, 4, 5]), np.array([6]), np.array([7, 8, 9, 10])]
    for _ in range(50):
        s = mask_tokens(ids, 0.15, rng, SPECIAL, candidate_groups=groups)
        chosen = set(s.masked_positions.tolist())
        for g in groups:  # a group is masked entirely or not at all
            assert chosen.issuperset(g.tolist()) or chosen.isdisjoint(g.tolist())
        assert 1 <= len(chosen) <= 4  # the budget is 3 or 4; no group is larger than 4


def test_mask_tokens_rejects_sequences_without_bos_eos():
    with pytest.raises(ValueError):
        mask_tokens(np.array([10, 11, 12]), 0.15, np.random.default_rng(0), SPECIAL)


def test_collate_exlm_pads_and_counts():
    a = MaskedSample(np.array([BOS, 10, M, EOS]), np.array([2]), np.array([30]))
    b = MaskedSample(np.array([BOS, M, 11, M, 12, EOS]), np.array([1, 3]), np.array([31, 32]))
    batch = collate_exlm([a, b], 2, SPECIAL)
    assert batch.input_ids.shape == (2, 10)  # b: 2 + 2 + 1 + 2 + 1 + 2
    assert batch.state_lengths.tolist() == [6, 8]
    assert batch.target_lengths.tolist() == [3, 4]
    assert batch.targets.tolist() == [[BOS, 30, EOS, 1], [BOS, 31, 32, EOS]]
    assert batch.padding_mask.sum(1).tolist() == [7, 10]
    assert batch.input_ids[0, 7:].tolist() == [1] * 3
    # every state index points at an expanded copy
    for row in range(2):
        n = batch.state_lengths[row]
        assert torch.all(batch.pos_copy[row, batch.state_index[row, :n]] > 0)


def test_collate_mlm_labels_only_masked_positions():
    s = MaskedSample(np.array([BOS, M, 11, M, EOS]), np.array([1, 3]), np.array([31, 32]))
    batch = collate_mlm([s], SPECIAL)
    assert batch.labels.tolist() == [[IGNORE_INDEX, 31, IGNORE_INDEX, 32, IGNORE_INDEX]]
    assert batch.pos_copy.abs().sum() == 0
    assert batch.pos_original.tolist() == [[0, 1, 2, 3, 4]]


def test_inference_expansion_keeps_first_bos_copy_at_zero():
    ids, pos_o, pos_c, mask = inference_inputs(
        [np.array([BOS, 10, 11, EOS]), np.array([BOS, 12, EOS])], 2, SPECIAL
    )
    assert ids.tolist() == [[BOS, BOS, 10, 11, EOS, EOS], [BOS, BOS, 12, EOS, EOS, 1]]
    assert pos_c.tolist()[0] == [1, 2, 0, 0, 1, 2]
    assert pos_o.tolist()[1][:5] == [0, 0, 1, 2, 2]
    assert mask.sum(1).tolist() == [6, 5]


def _random_molecules(rng, n, low=1, high=60):
    """[BOS, ordinary tokens, EOS] rows of random lengths (ids 5..60, never special)."""
    return [np.concatenate(([BOS], rng.integers(5, 60, rng.integers(low, high)), [EOS]))
            for _ in range(n)]


@pytest.mark.parametrize("objective, k", [("exlm", 2), ("exlm", 3), ("mlm", 0)])
def test_vectorised_collate_equals_the_per_molecule_reference(objective, k):
    from exlm_chem.data.collate_flat import collate_exlm_flat, collate_mlm_flat, mask_flat

    rows = _random_molecules(np.random.default_rng(7), 300)
    rows[3] = np.array([BOS, 9, EOS])  # the shortest molecule there is
    ref_rng, flat_rng = np.random.default_rng(11), np.random.default_rng(11)
    samples = [mask_tokens(r, 0.15, ref_rng, SPECIAL) for r in rows]
    flat = mask_flat(np.concatenate(rows), np.array([len(r) for r in rows]), 0.15, flat_rng,
                     SPECIAL)
    if objective == "exlm":
        ref, new = collate_exlm(samples, k, SPECIAL), collate_exlm_flat(flat, k, SPECIAL)
    else:
        ref, new = collate_mlm(samples, SPECIAL), collate_mlm_flat(flat, SPECIAL)
    for name, a, b in zip(ref._fields, ref, new, strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b), name
    # both consumed the generator identically
    assert ref_rng.random() == flat_rng.random()


def test_mask_flat_rejects_a_molecule_without_eos():
    from exlm_chem.data.collate_flat import mask_flat

    with pytest.raises(ValueError, match="molecule 1 "):
        mask_flat(np.array([BOS, 10, EOS, BOS, 11, 12]), np.array([3, 3]), 0.15,
                  np.random.default_rng(0), SPECIAL)
