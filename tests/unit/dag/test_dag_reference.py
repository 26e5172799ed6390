"""States-alignment DP: brute-force oracle, gradients, padding, invalid paths, dispatch."""

from __future__ import annotations

import itertools
import logging
import math
import sys
import types

import pytest
import torch

from exlm_chem.dag import dag_logprob, dag_logprob_autograd, dag_logprob_reference
from exlm_chem.dag import dispatch as dispatch_mod

NEG_INF = float("-inf")


# ----------------------------------------------------------------------------- helpers
def path_scores(emis: torch.Tensor, log_e: torch.Tensor, t_len: int, s_len: int) -> list[float]:
    """Scores of every valid path of one sample, by enumeration (emis [T, S], log_e [S, S])."""
    if t_len == 1:
        return [float(emis[0, 0])] if s_len == 1 else []
    if s_len < 2:
        return []
    scores = []
    for middle in itertools.combinations(range(1, s_len - 1), t_len - 2):
        states = (0, *middle, s_len - 1)
        score = sum(float(emis[t, s]) for t, s in enumerate(states))
        score += sum(float(log_e[u, v]) for u, v in itertools.pairwise(states))
        scores.append(score)
    return scores


def brute_logprob(emis, log_e, t_len, s_len) -> float:
    finite = [s for s in path_scores(emis, log_e, t_len, s_len) if s != NEG_INF]
    if not finite:
        return NEG_INF
    peak = max(finite)
    return peak + math.log(sum(math.exp(s - peak) for s in finite))


def random_batch(
    gen: torch.Generator,
    batch: int,
    t_max: int,
    s_max: int,
    *,
    dtype: torch.dtype = torch.float64,
    p_cut: float = 0.0,
    mostly_valid: bool = True,
):
    """Random emissions [B, T, S], upper-triangular log transitions [B, S, S] and lengths."""
    emis = torch.randn(batch, t_max, s_max, generator=gen, dtype=torch.float64) - 1.0
    log_e = torch.randn(batch, s_max, s_max, generator=gen, dtype=torch.float64) - 1.0
    upper = torch.ones(s_max, s_max, dtype=torch.bool).triu(1)
    cut = torch.rand(batch, s_max, s_max, generator=gen) < p_cut
    log_e = log_e.masked_fill(~upper | cut, NEG_INF)
    t_len = torch.randint(1, t_max + 1, (batch,), generator=gen)
    if mostly_valid:
        # L_b >= T_b most of the time, so that most samples have paths.
        low = torch.clamp(t_len, max=s_max)
        s_len = low + (torch.rand(batch, generator=gen) * (s_max - low + 1)).long()
        s_len = s_len.clamp(1, s_max)
    else:
        s_len = torch.randint(1, s_max + 1, (batch,), generator=gen)
    return emis.to(dtype), log_e.to(dtype), t_len, s_len


def grads(fn, emis, log_e, t_len, s_len, upstream=None):
    emis = emis.detach().clone().requires_grad_(True)
    log_e = log_e.detach().clone().requires_grad_(True)
    out = fn(emis, log_e, t_len, s_len)
    weight = torch.ones_like(out) if upstream is None else upstream
    # Path-less samples are masked out of the loss the way the trainer does it.
    loss = torch.where(torch.isfinite(out), out * weight, 0.0).sum()
    loss.backward()
    # With T = 1 the transitions take no part in the graph; autograd then leaves grad None.
    g_w = torch.zeros_like(log_e) if log_e.grad is None else log_e.grad
    return out.detach(), emis.grad, g_w


IMPLS = [dag_logprob_reference, dag_logprob_autograd, dag_logprob]


# ------------------------------------------------------------------- (1) brute force
@pytest.mark.parametrize("impl", IMPLS, ids=lambda f: f.__name__)
def test_matches_brute_force_on_random_tiny_graphs(impl):
    gen = torch.Generator().manual_seed(0)
    n_finite = n_total = 0
    for trial in range(120):
        batch = 1 + trial % 4
        t_max = 1 + (trial // 4) % 5
        s_max = 1 + (trial // 3) % 7
        emis, log_e, t_len, s_len = random_batch(
            gen, batch, t_max, s_max, p_cut=(trial % 3) * 0.25, mostly_valid=trial % 5 != 0
        )
        out = impl(emis, log_e, t_len, s_len)
        assert out.dtype == torch.float64 and out.shape == (batch,)
        for b in range(batch):
            want = brute_logprob(emis[b], log_e[b], int(t_len[b]), int(s_len[b]))
            got = float(out[b])
            n_total += 1
            if want == NEG_INF:
                assert got == NEG_INF, (trial, b, got)
            else:
                n_finite += 1
                assert got == pytest.approx(want, abs=1e-10, rel=0), (trial, b)
    # The oracle must exercise both outcomes substantially.
    assert n_finite > n_total // 2
    assert n_total - n_finite > 20


def test_known_value_two_paths():
    # T=3, L=4: paths 0-1-3 and 0-2-3, probabilities 0.5*0.5*0.5*... computed by hand.
    emis = torch.full((1, 3, 4), math.log(0.5), dtype=torch.float64)
    log_e = torch.full((1, 4, 4), math.log(0.25), dtype=torch.float64)
    out = dag_logprob_reference(emis, log_e, torch.tensor([3]), torch.tensor([4]))
    # each path: 0.5^3 emissions * 0.25^2 edges; two paths
    assert float(out[0]) == pytest.approx(math.log(2 * 0.5**3 * 0.25**2), abs=1e-12)


# ----------------------------------------------------------------------- (2) gradcheck
@pytest.mark.parametrize(
    ("t_len", "s_len", "s_max"),
    [([3], [4], 4), ([2, 4, 3], [5, 6, 3], 6), ([1, 3], [1, 5], 5)],
)
def test_gradcheck_reference(t_len, s_len, s_max):
    gen = torch.Generator().manual_seed(1)
    t_max = max(t_len)
    batch = len(t_len)
    # Finite everywhere, lower triangle included: the op must mask v <= u itself, and
    # gradcheck then also checks that those entries get zero gradient.
    emis = torch.randn(batch, t_max, s_max, generator=gen, dtype=torch.float64)
    log_e = torch.randn(batch, s_max, s_max, generator=gen, dtype=torch.float64)
    emis.requires_grad_(True)
    log_e.requires_grad_(True)
    t_len_t, s_len_t = torch.tensor(t_len), torch.tensor(s_len)
    assert torch.autograd.gradcheck(
        lambda e, w: dag_logprob_reference(e, w, t_len_t, s_len_t), (emis, log_e), atol=1e-8
    )


# ------------------------------------------------------------ (3) reference vs autograd
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reference_gradients_equal_autograd(dtype):
    gen = torch.Generator().manual_seed(2)
    tol = {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-11, "rtol": 0}
    for trial in range(12):
        emis, log_e, t_len, s_len = random_batch(
            gen, 4, 2 + trial % 6, 3 + trial % 9, dtype=dtype, p_cut=0.3 * (trial % 2)
        )
        upstream = torch.randn(4, generator=gen, dtype=torch.float64).to(dtype) * 3
        ref = grads(dag_logprob_reference, emis, log_e, t_len, s_len, upstream)
        auto = grads(dag_logprob_autograd, emis, log_e, t_len, s_len, upstream)
        assert ref[0].dtype == auto[0].dtype
        torch.testing.assert_close(ref[0], auto[0], **tol, equal_nan=True)
        for got, want in zip(ref[1:], auto[1:], strict=True):
            assert got.dtype == dtype
            assert torch.isfinite(got).all()
            torch.testing.assert_close(got, want, **tol)
    # The comparison is not vacuous: gradients are non-trivial.
    assert ref[1].abs().sum() > 0.1 and ref[2].abs().sum() > 0.1


def test_emission_gradient_is_state_posterior():
    # d logZ / d emis[t, :] sums to 1 over states: each path emits y_t from one state.
    gen = torch.Generator().manual_seed(3)
    emis, log_e, _, _ = random_batch(gen, 3, 5, 8)
    t_len, s_len = torch.tensor([5, 3, 4]), torch.tensor([8, 6, 4])
    _, g_emis, _ = grads(dag_logprob_reference, emis, log_e, t_len, s_len)
    for b in range(3):
        per_t = g_emis[b, : int(t_len[b])].sum(dim=1)
        torch.testing.assert_close(per_t, torch.ones_like(per_t), atol=1e-12, rtol=0)


# ------------------------------------------------------------------------- (4) padding
def _pad_with_garbage(gen, emis, log_e, t_len, s_len, extra_t, extra_s):
    batch, t_max, s_max = emis.shape
    t_new, s_new = t_max + extra_t, s_max + extra_s
    pool = torch.tensor([float("nan"), float("inf"), NEG_INF, 1e30, -1e30, 50.0, 0.0])

    def garbage(*shape):
        pick = torch.randint(0, 2 * len(pool), shape, generator=gen)
        rand = torch.randn(*shape, generator=gen, dtype=torch.float64) * 100
        return torch.where(pick < len(pool), pool[pick.clamp(max=len(pool) - 1)].double(), rand)

    big_e = garbage(batch, t_new, s_new).to(emis.dtype)
    big_w = garbage(batch, s_new, s_new).to(log_e.dtype)
    real_e = torch.zeros(batch, t_new, s_new, dtype=torch.bool)
    real_w = torch.zeros(batch, s_new, s_new, dtype=torch.bool)
    upper = torch.ones(s_new, s_new, dtype=torch.bool).triu(1)
    for b in range(batch):
        tb, sb = int(t_len[b]), int(s_len[b])
        big_e[b, :tb, :sb] = emis[b, :tb, :sb]
        big_w[b, :sb, :sb] = torch.where(upper[:sb, :sb], log_e[b, :sb, :sb], big_w[b, :sb, :sb])
        real_e[b, :tb, :sb] = True
        real_w[b, :sb, :sb] = upper[:sb, :sb]
    return big_e, big_w, real_e, real_w


@pytest.mark.parametrize(
    "impl", [dag_logprob_reference, dag_logprob_autograd], ids=lambda f: f.__name__
)
def test_padding_garbage_changes_nothing(impl):
    gen = torch.Generator().manual_seed(4)
    emis, log_e, t_len, s_len = random_batch(gen, 4, 5, 7, p_cut=0.2)
    t_len, s_len = torch.tensor([5, 2, 1, 4]), torch.tensor([7, 3, 1, 6])
    # Compact copies hold only each sample's real region, with -inf padding and lower triangle.
    clean_e, clean_w, real_e, real_w = _pad_with_garbage(gen, emis, log_e, t_len, s_len, 0, 0)
    clean_e = torch.where(real_e, clean_e, NEG_INF)
    clean_w = torch.where(real_w, clean_w, NEG_INF)
    base = grads(impl, clean_e, clean_w, t_len, s_len, torch.tensor([1.0, -2.0, 0.5, 3.0]).double())
    assert torch.isfinite(base[0]).all()

    big_e, big_w, big_real_e, big_real_w = _pad_with_garbage(gen, emis, log_e, t_len, s_len, 2, 3)
    assert torch.isnan(big_e).any() and torch.isinf(big_w).any()  # garbage really is there
    out, g_e, g_w = grads(
        impl, big_e, big_w, t_len, s_len, torch.tensor([1.0, -2.0, 0.5, 3.0]).double()
    )
    torch.testing.assert_close(out, base[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(g_e[:, :5, :7], base[1], atol=1e-12, rtol=0)
    torch.testing.assert_close(g_w[:, :7, :7], base[2], atol=1e-12, rtol=0)
    assert (g_e[~big_real_e] == 0).all()
    assert (g_w[~big_real_w] == 0).all()
    assert not torch.isnan(g_e).any() and not torch.isnan(g_w).any()


# --------------------------------------------------------------------- (5) no valid path
@pytest.mark.parametrize("impl", IMPLS, ids=lambda f: f.__name__)
def test_samples_without_path_give_minus_inf_and_zero_gradient(impl):
    gen = torch.Generator().manual_seed(5)
    emis, log_e, _, _ = random_batch(gen, 6, 4, 6)
    t_len = torch.tensor([4, 4, 1, 3, 3, 4])
    s_len = torch.tensor([6, 3, 4, 5, 6, 6])
    log_e[3] = NEG_INF  # sample 3: no edges at all
    emis[4, 0, 0] = NEG_INF  # sample 4: start state cannot emit BOS
    log_e[5, :, 5] = NEG_INF  # sample 5: end state unreachable
    valid = torch.tensor([True, False, False, False, False, False])  # 1: T > L; 2: T=1, L>1

    for upstream in (None, torch.tensor([2.0, float("inf"), 1.0, -1.0, 5.0, 1.0]).double()):
        out, g_e, g_w = grads(impl, emis, log_e, t_len, s_len, upstream)
        assert (out[~valid] == NEG_INF).all() and torch.isfinite(out[valid]).all()
        assert not torch.isnan(g_e).any() and not torch.isnan(g_w).any()
        assert (g_e[~valid] == 0).all() and (g_w[~valid] == 0).all()
        # A path-less neighbour does not disturb the valid sample.
        alone = grads(impl, emis[:1], log_e[:1], t_len[:1], s_len[:1])
        torch.testing.assert_close(out[:1], alone[0], atol=1e-12, rtol=0)
        scale = 1.0 if upstream is None else float(upstream[0])
        torch.testing.assert_close(g_e[:1], alone[1] * scale, atol=1e-12, rtol=0)
        torch.testing.assert_close(g_w[:1], alone[2] * scale, atol=1e-12, rtol=0)

    # Unmasked sum: -inf loss for the batch, still no NaN in the gradients.
    e = emis.clone().requires_grad_(True)
    w = log_e.clone().requires_grad_(True)
    impl(e, w, t_len, s_len).sum().backward()
    assert not torch.isnan(e.grad).any() and not torch.isnan(w.grad).any()
    assert (e.grad[~valid] == 0).all() and (w.grad[~valid] == 0).all()


# ------------------------------------------------------------------------ (6) edge cases
@pytest.mark.parametrize("impl", IMPLS, ids=lambda f: f.__name__)
def test_single_target_single_state(impl):
    emis = torch.tensor([[[-0.7, 3.0]], [[-1.5, 9.0]]], dtype=torch.float64)  # [2, 1, 2]
    log_e = torch.zeros(2, 2, 2, dtype=torch.float64)
    out, g_e, g_w = grads(impl, emis, log_e, torch.tensor([1, 1]), torch.tensor([1, 2]))
    assert float(out[0]) == -0.7 and float(out[1]) == NEG_INF
    assert g_e[0].tolist() == [[1.0, 0.0]] and (g_e[1] == 0).all() and (g_w == 0).all()


@pytest.mark.parametrize("impl", IMPLS, ids=lambda f: f.__name__)
def test_single_path_when_states_equal_targets(impl):
    gen = torch.Generator().manual_seed(6)
    emis, log_e, _, _ = random_batch(gen, 1, 5, 5)
    out, g_e, g_w = grads(impl, emis, log_e, torch.tensor([5]), torch.tensor([5]))
    idx = torch.arange(5)
    want = emis[0, idx, idx].sum() + log_e[0, idx[:-1], idx[1:]].sum()
    assert float(out[0]) == pytest.approx(float(want), abs=1e-12)
    # The only path is the diagonal: gradient 1 on it, 0 elsewhere.
    torch.testing.assert_close(g_e[0], torch.eye(5, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(
        g_w[0], torch.diag(torch.ones(4, dtype=torch.float64), 1), atol=1e-12, rtol=0
    )


@pytest.mark.parametrize("impl", IMPLS, ids=lambda f: f.__name__)
def test_bf16_inputs_accumulate_in_fp32(impl):
    gen = torch.Generator().manual_seed(7)
    emis, log_e, t_len, s_len = random_batch(gen, 4, 6, 12, dtype=torch.float32, p_cut=0.2)
    e16, w16 = emis.bfloat16(), log_e.bfloat16()
    out16, g_e16, g_w16 = grads(impl, e16, w16, t_len, s_len)
    assert out16.dtype == torch.float32
    assert g_e16.dtype == torch.bfloat16 and g_w16.dtype == torch.bfloat16
    # Same numbers as fp32 run on the rounded inputs: the DP itself is not done in bf16.
    exact = grads(impl, e16.float(), w16.float(), t_len, s_len)
    torch.testing.assert_close(out16, exact[0], atol=1e-5, rtol=1e-6, equal_nan=True)
    # Close to the unrounded fp32 result within bf16 input rounding (~0.4% per entry).
    full = grads(impl, emis, log_e, t_len, s_len)
    finite = torch.isfinite(full[0])
    assert finite.sum() >= 2
    torch.testing.assert_close(out16[finite], full[0][finite], atol=0.1, rtol=0.02)
    torch.testing.assert_close(g_e16.float(), full[1], atol=0.03, rtol=0.05)


def test_mixed_dtypes_fp32_emissions_fp64_transitions():
    gen = torch.Generator().manual_seed(8)
    emis, log_e, t_len, s_len = random_batch(gen, 3, 4, 6)
    out, g_e, g_w = grads(dag_logprob_reference, emis.float(), log_e, t_len, s_len)
    assert out.dtype == torch.float64 and g_e.dtype == torch.float32 and g_w.dtype == torch.float64
    torch.testing.assert_close(
        out, dag_logprob_reference(emis.float().double(), log_e, t_len, s_len), equal_nan=True
    )


# ------------------------------------------------------------------------ (8) dispatcher
@pytest.fixture
def cpu_batch():
    gen = torch.Generator().manual_seed(9)
    return random_batch(gen, 2, 3, 4, dtype=torch.float32)


@pytest.fixture
def fake_triton(monkeypatch):
    """A stand-in triton_kernels module that records its calls (no real kernel needed)."""
    calls = []
    module = types.ModuleType("exlm_chem.dag.triton_kernels")
    module.TRITON_MAX_STATES = 5

    def fake_kernel(emissions, log_transitions, target_lengths, state_lengths):
        calls.append(emissions.shape)
        return torch.full((emissions.shape[0],), 123.0)

    module.run_checked = fake_kernel
    monkeypatch.setitem(sys.modules, "exlm_chem.dag.triton_kernels", module)
    monkeypatch.setattr(dispatch_mod, "_warned_too_many_states", False)
    return calls


def test_auto_on_cpu_uses_reference(monkeypatch, cpu_batch, fake_triton):
    monkeypatch.delenv("EXLM_DAG_BACKEND", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = dag_logprob(*cpu_batch)
    torch.testing.assert_close(out, dag_logprob_reference(*cpu_batch), equal_nan=True)
    assert fake_triton == []
    assert dispatch_mod.select_backend("auto", torch.device("cpu"), 4) == "reference"


def test_cuda_auto_prefers_triton_and_falls_back_without_it(monkeypatch, fake_triton):
    monkeypatch.delenv("EXLM_DAG_BACKEND", raising=False)
    cuda = torch.device("cuda")
    assert dispatch_mod.select_backend("auto", cuda, 5) == "triton"
    assert dispatch_mod.select_backend("reference", cuda, 5) == "reference"
    # fp64 (gradcheck) stays on the reference: the kernels do not support it.
    assert dispatch_mod.select_backend("auto", cuda, 5, dtypes=(torch.float64,)) == "reference"
    assert dispatch_mod.select_backend("auto", cuda, 5, dtypes=(torch.bfloat16,)) == "triton"
    monkeypatch.setitem(sys.modules, "exlm_chem.dag.triton_kernels", None)  # import fails
    assert dispatch_mod.select_backend("auto", cuda, 5) == "reference"
    with pytest.raises(RuntimeError, match="triton DAG backend is unavailable"):
        dispatch_mod.select_backend("triton", cuda, 5)


def test_env_override(monkeypatch, cpu_batch, fake_triton):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("EXLM_DAG_BACKEND", "triton")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        dag_logprob(*cpu_batch)
    # An explicit backend argument wins over the environment.
    torch.testing.assert_close(
        dag_logprob(*cpu_batch, backend="reference"),
        dag_logprob_reference(*cpu_batch),
        equal_nan=True,
    )
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert dag_logprob(*cpu_batch).tolist() == [123.0, 123.0]
    monkeypatch.setenv("EXLM_DAG_BACKEND", "reference")
    assert dispatch_mod.select_backend("auto", torch.device("cuda"), 4) == "reference"
    monkeypatch.setenv("EXLM_DAG_BACKEND", "cuda")
    with pytest.raises(ValueError, match="EXLM_DAG_BACKEND"):
        dag_logprob(*cpu_batch)


def test_triton_on_cpu_needs_interpreter(monkeypatch, cpu_batch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("EXLM_DAG_BACKEND", raising=False)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        dag_logprob(*cpu_batch, backend="triton")
    with pytest.raises(ValueError, match="backend must be one of"):
        dag_logprob(*cpu_batch, backend="cuda")


def test_too_many_states_falls_back_with_one_warning(monkeypatch, caplog, fake_triton):
    monkeypatch.delenv("EXLM_DAG_BACKEND", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    gen = torch.Generator().manual_seed(10)
    batch = random_batch(gen, 2, 3, 7, dtype=torch.float32)
    with caplog.at_level(logging.WARNING, logger="exlm_chem.dag.dispatch"):
        first = dag_logprob(*batch, backend="triton")
        dag_logprob(*batch, backend="triton")
    torch.testing.assert_close(first, dag_logprob_reference(*batch), equal_nan=True)
    assert fake_triton == []
    warnings = [r for r in caplog.records if "above the Triton kernel's limit" in r.message]
    assert len(warnings) == 1
    small = random_batch(gen, 2, 3, 5, dtype=torch.float32)
    assert dag_logprob(*small, backend="triton").tolist() == [123.0, 123.0]


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        (lambda e, w, t, s: (e[0], w, t, s), ValueError, "emissions must be a 3-D"),
        (lambda e, w, t, s: (e, w[:, :3], t, s), ValueError, r"log_transitions must have shape"),
        (lambda e, w, t, s: (e, w[:1], t, s), ValueError, r"log_transitions must have shape"),
        (lambda e, w, t, s: (e, w, t[:1], s), ValueError, "target_lengths must be a 1-D"),
        (lambda e, w, t, s: (e, w, t, s[:, None]), ValueError, "state_lengths must be a 1-D"),
        (lambda e, w, t, s: (e, w, t.float(), s), TypeError, "target_lengths must be an integer"),
        (lambda e, w, t, s: (e.long(), w, t, s), TypeError, "emissions must be a floating"),
        (
            lambda e, w, t, s: (e, w, torch.tensor([1, 4]), s),
            ValueError,
            r"target_lengths\[1\] = 4 is outside \[1, 3\]",
        ),
        (
            lambda e, w, t, s: (e, w, t, torch.tensor([0, 2])),
            ValueError,
            r"state_lengths\[0\] = 0 is outside \[1, 4\]",
        ),
    ],
)
def test_validation_errors(cpu_batch, change, error, pattern):
    with pytest.raises(error, match=pattern):
        dag_logprob(*change(*cpu_batch), backend="reference")


def test_package_import_does_not_import_triton():
    import subprocess

    code = (
        "import sys, exlm_chem.dag as d; "
        "assert 'triton' not in sys.modules and 'exlm_chem.dag.triton_kernels' not in sys.modules"
        ", sorted(m for m in sys.modules if 'triton' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_length_check_can_be_skipped_and_reaches_the_kernel(monkeypatch, cpu_batch, fake_triton):
    emissions, log_e, t_len, s_len = cpu_batch
    too_long = t_len.clone()
    too_long[0] = emissions.shape[1] + 1
    with pytest.raises(ValueError, match="target_lengths"):
        dag_logprob(emissions, log_e, too_long, s_len, backend="reference")
    # a training step skips the host-side check (the lengths come from the collate)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    dag_logprob(emissions, log_e, too_long, s_len, backend="triton", check_lengths=False)
    assert fake_triton == [emissions.shape]
