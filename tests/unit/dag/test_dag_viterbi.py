"""Viterbi best alignment against brute-force path enumeration."""

from __future__ import annotations

import itertools

import pytest
import torch

from exlm_chem.dag import BestAlignment, dag_best_alignment

NEG_INF = float("-inf")


def best_path_brute(emis, log_e, t_len: int, s_len: int):
    """(score, states) of the best path of one sample; (-inf, None) if there is none."""
    if t_len == 1:
        return (float(emis[0, 0]), (0,)) if s_len == 1 else (NEG_INF, None)
    if s_len < 2:
        return NEG_INF, None
    best = (NEG_INF, None)
    for middle in itertools.combinations(range(1, s_len - 1), t_len - 2):
        states = (0, *middle, s_len - 1)
        score = sum(float(emis[t, s]) for t, s in enumerate(states))
        score += sum(float(log_e[u, v]) for u, v in itertools.pairwise(states))
        if score > best[0]:
            best = (score, states)
    return best


def random_case(gen, batch, t_max, s_max, p_cut):
    emis = torch.randn(batch, t_max, s_max, generator=gen, dtype=torch.float64)
    log_e = torch.randn(batch, s_max, s_max, generator=gen, dtype=torch.float64)
    # Lower triangle gets finite junk: the op itself must ignore v <= u.
    cut = torch.rand(batch, s_max, s_max, generator=gen) < p_cut
    log_e = log_e.masked_fill(cut & torch.ones(s_max, s_max, dtype=torch.bool).triu(1), NEG_INF)
    t_len = torch.randint(1, t_max + 1, (batch,), generator=gen)
    s_len = torch.maximum(
        t_len.clamp(max=s_max), torch.randint(1, s_max + 1, (batch,), generator=gen)
    )
    return emis, log_e, t_len, s_len


def test_viterbi_matches_brute_force_and_returns_a_valid_path():
    gen = torch.Generator().manual_seed(11)
    n_valid = n_invalid = 0
    for trial in range(100):
        batch, t_max, s_max = 1 + trial % 4, 1 + trial % 5, 1 + trial % 7
        emis, log_e, t_len, s_len = random_case(gen, batch, t_max, s_max, 0.3 * (trial % 2))
        result = dag_best_alignment(emis, log_e, t_len, s_len)
        assert isinstance(result, BestAlignment)
        assert result.state_to_target.shape == (batch, s_max)
        assert result.state_to_target.dtype == torch.long
        assert len(result.path) == batch
        for b in range(batch):
            tb, sb = int(t_len[b]), int(s_len[b])
            want, _ = best_path_brute(emis[b], log_e[b], tb, sb)
            got = float(result.logprob[b])
            mapping = result.state_to_target[b]
            if want == NEG_INF:
                n_invalid += 1
                assert got == NEG_INF
                assert result.path[b].numel() == 0 and (mapping == -1).all()
                continue
            n_valid += 1
            assert got == pytest.approx(want, abs=1e-10)
            path = result.path[b].tolist()
            assert len(path) == tb and path[0] == 0 and path[-1] == sb - 1
            assert all(u < v for u, v in itertools.pairwise(path))
            score = sum(float(emis[b, t, s]) for t, s in enumerate(path))
            score += sum(float(log_e[b, u, v]) for u, v in itertools.pairwise(path))
            assert score == pytest.approx(got, abs=1e-10)
            expected_map = [-1] * s_max
            for t, s in enumerate(path):
                expected_map[s] = t
            assert mapping.tolist() == expected_map
    assert n_valid > 100 and n_invalid > 10


def test_viterbi_known_path_and_padding_ignored():
    # 1 sample, T=3 real of 4, L=4 real of 6; padding holds huge values that would win.
    emis = torch.full((1, 4, 6), -5.0)
    emis[0, 1, 2] = -0.1  # best middle state is 2
    emis[0, 0, 0] = emis[0, 2, 3] = -0.2
    emis[0, 3] = 100.0  # padded target row
    emis[0, :, 4:] = 100.0  # padded states
    log_e = torch.zeros(1, 6, 6)
    log_e[0, 1, 0] = 50.0  # lower triangle junk
    result = dag_best_alignment(emis, log_e, torch.tensor([3]), torch.tensor([4]))
    assert result.path[0].tolist() == [0, 2, 3]
    assert result.state_to_target[0].tolist() == [0, -1, 1, 2, -1, -1]
    assert float(result.logprob[0]) == pytest.approx(-0.5, abs=1e-6)
    assert result.logprob.dtype == torch.float32


def test_viterbi_under_no_grad():
    emis = torch.zeros(1, 2, 2, requires_grad=True)
    log_e = torch.zeros(1, 2, 2, requires_grad=True)
    result = dag_best_alignment(emis, log_e, torch.tensor([2]), torch.tensor([2]))
    assert not result.logprob.requires_grad
    assert result.path[0].tolist() == [0, 1]
