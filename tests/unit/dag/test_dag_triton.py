"""Triton DAG states-alignment kernels against the torch reference and a brute-force oracle.

Without CUDA the kernels run under Triton's interpreter, which is chosen when the kernels
are defined: ``TRITON_INTERPRET`` must be set before ``exlm_chem.dag.triton_kernels`` (or
triton) is first imported, hence the environment line above the imports. With CUDA the
same tests run the compiled kernels on the GPU, plus the ``gpu``-marked large shapes.
"""

# ruff: noqa: E402
from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import importlib
import itertools
import json
import math
import subprocess
import sys

import pytest

triton_kernels = importlib.import_module("exlm_chem.dag.triton_kernels")
if not torch.cuda.is_available() and not triton_kernels._is_interpreted():
    # triton's own @jit helpers (tl.max, tl.cdiv, ...) were built without the interpreter:
    # reloading this module cannot fix that, so say what to do instead of failing obscurely
    raise RuntimeError(
        "triton was imported before TRITON_INTERPRET=1 was set in this process; run these "
        "tests with TRITON_INTERPRET=1 in the environment (or set it in tests/conftest.py)"
    )

from exlm_chem.dag.reference import dag_logprob_reference

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NEG_INF = float("-inf")
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def make_inputs(
    target_lengths: list[int],
    state_lengths: list[int],
    T: int | None = None,
    S: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random log-probabilities shaped like the model's (log-softmaxed rows)."""
    gen = torch.Generator().manual_seed(seed)
    B = len(target_lengths)
    T = T or max(target_lengths)
    S = S or max(state_lengths)
    emissions = torch.randn(B, T, S, generator=gen).mul(2.0).log_softmax(-1)
    logits = torch.randn(B, S, S, generator=gen).mul(2.0)
    log_transitions = logits.log_softmax(-1)
    return (
        emissions.to(device=DEVICE, dtype=dtype),
        log_transitions.to(device=DEVICE, dtype=dtype),
        torch.tensor(target_lengths, device=DEVICE),
        torch.tensor(state_lengths, device=DEVICE),
    )


def run_both(emissions, log_transitions, tlen, slen, upstream=None):
    """(out, grad_emis, grad_logE) for the Triton kernel and for the reference."""
    results = []
    for fn in (triton_kernels.dag_logprob_triton, dag_logprob_reference):
        emis = emissions.detach().clone().requires_grad_()
        log_e = log_transitions.detach().clone().requires_grad_()
        out = fn(emis, log_e, tlen, slen)
        grad = torch.ones_like(out) if upstream is None else upstream
        g_emis, g_log_e = torch.autograd.grad(out, (emis, log_e), grad)
        results.append((out.detach(), g_emis, g_log_e))
    return results


def assert_matches_reference(got, want, rtol=1e-5, atol=1e-5):
    for name, a, b in zip(("log P", "grad emissions", "grad transitions"), got, want, strict=True):
        assert a.dtype == b.dtype, name
        assert not torch.isnan(a).any(), f"NaN in {name}"
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m, n=name: f"{n}: {m}")


def brute_force_logprob(emis: torch.Tensor, log_e: torch.Tensor, T_b: int, L_b: int):
    """log-sum-exp over explicitly enumerated paths 0 = s_0 < ... < s_{T_b-1} = L_b - 1."""
    if T_b == 1:
        return emis[0, 0] if L_b == 1 else emis.new_tensor(NEG_INF)
    if L_b < T_b:
        return emis.new_tensor(NEG_INF)
    scores = []
    for middle in itertools.combinations(range(1, L_b - 1), T_b - 2):
        path = (0, *middle, L_b - 1)
        score = sum(emis[t, s] for t, s in enumerate(path))
        score = score + sum(log_e[u, v] for u, v in itertools.pairwise(path))
        scores.append(score)
    return torch.logsumexp(torch.stack(scores), dim=0)


# --------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------


def test_kernel_config_paths_and_limits():
    cfg = triton_kernels.kernel_config(7)
    assert (cfg.tiled, cfg.block_s) == (False, 16)
    cfg = triton_kernels.kernel_config(33)
    assert (cfg.tiled, cfg.block_s) == (False, 64)
    assert triton_kernels.SINGLE_TILE_MAX_STATES == 64
    cfg = triton_kernels.kernel_config(65)
    assert (cfg.tiled, cfg.block_s, cfg.block_u) == (True, 128, 64)
    cfg = triton_kernels.kernel_config(308)  # the paper's text workload
    assert (cfg.tiled, cfg.block_s, cfg.block_u) == (True, 512, 16)
    assert triton_kernels.kernel_config(triton_kernels.TRITON_MAX_STATES).tiled
    with pytest.raises(ValueError, match=r"TRITON_MAX_STATES|range"):
        triton_kernels.kernel_config(triton_kernels.TRITON_MAX_STATES + 1)


# --------------------------------------------------------------------------------------
# exact values
# --------------------------------------------------------------------------------------


def test_single_path_equals_sum_of_its_scores():
    # S == T: the only path is the diagonal 0, 1, ..., T-1
    emissions, log_e, tlen, slen = make_inputs([5, 5], [5, 5], seed=1)
    out = triton_kernels.dag_logprob_triton(emissions, log_e, tlen, slen)
    idx = torch.arange(5)
    for b in range(2):
        want = emissions[b, idx, idx].sum() + log_e[b, idx[:-1], idx[1:]].sum()
        torch.testing.assert_close(out[b], want, rtol=1e-6, atol=1e-6)


def test_two_states_two_targets_is_one_edge():
    emissions = torch.tensor([[[-0.5, -2.0], [-3.0, -0.25]]], device=DEVICE)
    log_e = torch.tensor([[[-7.0, -0.125], [-9.0, -11.0]]], device=DEVICE)
    one = torch.tensor([2], device=DEVICE)
    emis = emissions.clone().requires_grad_()
    le = log_e.clone().requires_grad_()
    out = triton_kernels.dag_logprob_triton(emis, le, one, one)
    assert out.item() == pytest.approx(-0.5 - 0.125 - 0.25, abs=1e-6)
    out.backward(torch.tensor([3.0], device=DEVICE))
    torch.testing.assert_close(emis.grad, torch.tensor([[[3.0, 0.0], [0.0, 3.0]]], device=DEVICE))
    torch.testing.assert_close(le.grad, torch.tensor([[[0.0, 3.0], [0.0, 0.0]]], device=DEVICE))


def test_brute_force_oracle_with_padding():
    tlen_list, slen_list = [4, 3, 2, 5], [7, 5, 4, 9]
    emissions, log_e, tlen, slen = make_inputs(tlen_list, slen_list, T=6, S=10, seed=2)
    upstream = torch.tensor([1.0, -0.5, 2.0, 0.25], device=DEVICE)
    emis = emissions.detach().clone().requires_grad_()
    le = log_e.detach().clone().requires_grad_()
    out = triton_kernels.dag_logprob_triton(emis, le, tlen, slen)
    g_emis, g_le = torch.autograd.grad(out, (emis, le), upstream)

    emis64 = emissions.double().cpu().requires_grad_()
    le64 = log_e.double().cpu().requires_grad_()
    want = torch.stack(
        [
            brute_force_logprob(emis64[b], le64[b], tlen_list[b], slen_list[b])
            for b in range(len(tlen_list))
        ]
    )
    w_emis, w_le = torch.autograd.grad(want, (emis64, le64), upstream.double().cpu())
    torch.testing.assert_close(out.cpu().double(), want.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_emis.cpu().double(), w_emis, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g_le.cpu().double(), w_le, rtol=1e-5, atol=1e-6)
    # the DP sums over every alignment: each target row of the emission gradient is a
    # distribution over states (times the upstream gradient)
    for b, (T_b, _) in enumerate(zip(tlen_list, slen_list, strict=True)):
        row_sums = g_emis[b, :T_b].sum(-1) / upstream[b]
        torch.testing.assert_close(row_sums, torch.ones_like(row_sums), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------
# against the reference
# --------------------------------------------------------------------------------------

SHAPES = {
    # id: (target_lengths, state_lengths, T, S)
    "T2": ([2, 2, 2], [2, 3, 5], None, None),
    "S_eq_T": ([6, 6], [6, 6], None, None),
    "k2": ([7, 5, 6], [14, 10, 12], None, None),
    "k4": ([5, 4], [20, 16], None, None),
    "odd7": ([3, 4, 2], [7, 7, 5], None, None),
    "odd13": ([5, 3], [13, 9], None, None),
    "odd33": ([6, 4], [33, 20], None, None),
    "mixed_padding": ([6, 2, 4, 5, 1], [24, 5, 8, 18, 1], 8, 27),
    "tiled_128": ([4, 3], [70, 40], None, None),
    "tiled_256": ([4, 3], [150, 100], 5, 150),
}


@pytest.mark.parametrize("case", list(SHAPES), ids=list(SHAPES))
def test_matches_reference_fp32(case):
    tlen, slen, T, S = SHAPES[case]
    inputs = make_inputs(tlen, slen, T=T, S=S, seed=len(case))
    gen = torch.Generator().manual_seed(7)
    upstream = (torch.rand(len(tlen), generator=gen) * 3 - 1).to(DEVICE)
    got, want = run_both(*inputs, upstream=upstream)
    assert_matches_reference(got, want)
    assert torch.isfinite(got[0]).all()
    assert (triton_kernels.kernel_config(inputs[0].shape[2]).tiled) == case.startswith("tiled")


def test_padding_and_non_edges_are_ignored_and_get_zero_gradient():
    tlen_list, slen_list = [3, 5, 2], [6, 11, 3]
    emissions, log_e, tlen, slen = make_inputs(tlen_list, slen_list, T=6, S=12, seed=3)
    dirty_emis, dirty_le = emissions.clone(), log_e.clone()
    state = torch.arange(12, device=DEVICE)
    for b, (T_b, L_b) in enumerate(zip(tlen_list, slen_list, strict=True)):
        dirty_emis[b, T_b:] = float("nan")
        dirty_emis[b, :, L_b:] = float("inf")
        dirty_le[b, L_b:] = float("nan")
        dirty_le[b, :, L_b:] = float("inf")
    non_edge = state[:, None] >= state[None, :]
    dirty_le[:, non_edge] = 1e4  # would dominate every sum if it leaked

    got_clean, _ = run_both(emissions, log_e, tlen, slen)
    got_dirty, want_dirty = run_both(dirty_emis, dirty_le, tlen, slen)
    for a, b in zip(got_dirty, got_clean, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert_matches_reference(got_dirty, want_dirty)

    _, g_emis, g_le = got_dirty
    for b, (T_b, L_b) in enumerate(zip(tlen_list, slen_list, strict=True)):
        assert (g_emis[b, T_b:] == 0).all() and (g_emis[b, :, L_b:] == 0).all()
        assert (g_le[b, L_b:] == 0).all() and (g_le[b, :, L_b:] == 0).all()
    assert (g_le[:, non_edge] == 0).all()


def test_no_valid_path_gives_minus_inf_and_zero_gradients():
    # 0: more targets than states; 1: T_b == 1 with L_b > 1; 2: every edge -inf;
    # 3: fine; 4: T_b == 1 and L_b == 1 (log P = emis[0, 0]); 5: only dead ends
    tlen_list, slen_list = [5, 1, 3, 4, 1, 3], [3, 4, 6, 8, 1, 4]
    emissions, log_e, tlen, slen = make_inputs(tlen_list, slen_list, T=5, S=8, seed=4)
    log_e[2] = NEG_INF
    log_e[5, :, 3] = NEG_INF  # nothing reaches the end state
    upstream = torch.tensor([2.0, -1.0, 0.5, 1.5, 3.0, 1.0], device=DEVICE)
    got, want = run_both(emissions, log_e, tlen, slen, upstream=upstream)
    assert_matches_reference(got, want)
    out, g_emis, g_le = got
    invalid = [0, 1, 2, 5]
    assert torch.isneginf(out[invalid]).all()
    assert (g_emis[invalid] == 0).all() and (g_le[invalid] == 0).all()
    assert torch.isfinite(out[3])
    assert out[4].item() == emissions[4, 0, 0].item()
    assert g_emis[4, 0, 0].item() == 3.0 and (g_emis[4].count_nonzero() == 1)


def test_loss_backward_like_training():
    # loss = -mean(log P / T_b) over the samples with a path, the way pre-training uses it
    emissions, log_e, tlen, slen = make_inputs([4, 6, 3], [8, 12, 9], seed=5)
    grads = []
    for fn in (triton_kernels.dag_logprob_triton, dag_logprob_reference):
        emis = emissions.clone().requires_grad_()
        le = log_e.clone().requires_grad_()
        logp = fn(emis, le, tlen, slen)
        loss = -(logp / tlen).mean()
        loss.backward()
        grads.append((loss.detach(), emis.grad, le.grad))
    assert_matches_reference(grads[0], grads[1])


def test_only_one_input_requires_grad_and_no_grad_mode():
    emissions, log_e, tlen, slen = make_inputs([4, 3], [8, 6], seed=6)
    want = dag_logprob_reference(emissions, log_e, tlen, slen)
    with torch.no_grad():
        out = triton_kernels.dag_logprob_triton(emissions, log_e, tlen, slen)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert out.dtype == torch.float32 and out.shape == (2,)

    le = log_e.clone().requires_grad_()
    out = triton_kernels.dag_logprob_triton(emissions, le, tlen, slen)
    (g_le,) = torch.autograd.grad(out.sum(), (le,))
    le_ref = log_e.clone().requires_grad_()
    ref = dag_logprob_reference(emissions, le_ref, tlen, slen)
    (w_le,) = torch.autograd.grad(ref.sum(), le_ref)
    torch.testing.assert_close(g_le, w_le, rtol=1e-5, atol=1e-5)


def test_non_contiguous_inputs_and_int64_lengths():
    emissions, log_e, tlen, slen = make_inputs([3, 4], [6, 8], seed=8)
    emis_t = emissions.transpose(1, 2).contiguous().transpose(1, 2)  # same values, strided
    le_t = log_e.transpose(1, 2).contiguous().transpose(1, 2)
    assert not emis_t.is_contiguous() and not le_t.is_contiguous()
    got, want = run_both(emis_t, le_t, tlen.long(), slen.long())
    assert_matches_reference(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_low_precision_inputs(dtype):
    tlen, slen = [5, 3, 6], [10, 9, 24]
    emissions, log_e, tlen_t, slen_t = make_inputs(tlen, slen, seed=9)
    low = (emissions.to(dtype), log_e.to(dtype), tlen_t, slen_t)
    got, want_same_inputs = run_both(*low)
    out, g_emis, g_le = got
    assert out.dtype == torch.float32
    assert g_emis.dtype == dtype and g_le.dtype == dtype
    # same (rounded) inputs: fp32 accumulation in both, so only the final rounding differs
    torch.testing.assert_close(out, want_same_inputs[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_emis, want_same_inputs[1], rtol=1e-2, atol=1e-3)
    torch.testing.assert_close(g_le, want_same_inputs[2], rtol=1e-2, atol=1e-3)
    # against the fp32 reference on the unrounded inputs: input rounding error only
    got32, _ = run_both(emissions, log_e, tlen_t, slen_t)
    torch.testing.assert_close(out, got32[0], rtol=1e-2, atol=0.15)
    torch.testing.assert_close(g_emis.float(), got32[1], rtol=0.1, atol=0.05)
    torch.testing.assert_close(g_le.float(), got32[2], rtol=0.1, atol=0.05)


# --------------------------------------------------------------------------------------
# input checks and dispatcher
# --------------------------------------------------------------------------------------


def test_bad_inputs_are_rejected_with_a_reason():
    emissions, log_e, tlen, slen = make_inputs([3, 2], [5, 4], seed=10)
    f = triton_kernels.dag_logprob_triton
    with pytest.raises(ValueError, match=r"log_transitions must have shape \[B, S, S\]"):
        f(emissions, log_e[:, :4, :4], tlen, slen)
    with pytest.raises(ValueError, match="emissions must be"):
        f(emissions[0], log_e, tlen, slen)
    with pytest.raises(TypeError, match="integer"):
        f(emissions, log_e, tlen.float(), slen)
    with pytest.raises(TypeError, match="float64"):
        f(emissions.double(), log_e, tlen, slen)
    with pytest.raises(ValueError, match="sample 1: target length 0"):
        f(emissions, log_e, torch.tensor([3, 0], device=DEVICE), slen)
    with pytest.raises(ValueError, match=r"sample 0: .* state length 6"):
        f(emissions, log_e, tlen, torch.tensor([6, 4], device=DEVICE))
    with pytest.raises(ValueError, match=r"\[B\] = \[2\]"):
        f(emissions, log_e, tlen[:1], slen)


def test_dispatcher_routes_to_these_kernels():
    dispatch = pytest.importorskip("exlm_chem.dag.dispatch")
    assert dispatch.select_backend("triton", DEVICE, 30) == "triton"
    too_many = triton_kernels.TRITON_MAX_STATES + 1
    assert dispatch.select_backend("triton", DEVICE, too_many) == "reference"
    emissions, log_e, tlen, slen = make_inputs([4, 3], [9, 7], seed=11)
    out = dispatch.dag_logprob(emissions, log_e, tlen, slen, backend="triton")
    assert out.grad_fn is None or "Triton" in type(out.grad_fn).__name__
    emis = emissions.clone().requires_grad_()
    out = dispatch.dag_logprob(emis, log_e, tlen, slen, backend="triton")
    assert "DagLogProbTriton" in type(out.grad_fn).__name__
    torch.testing.assert_close(out, dag_logprob_reference(emissions, log_e, tlen, slen))


# --------------------------------------------------------------------------------------
# compiled (GPU) code generation, checked without a GPU
# --------------------------------------------------------------------------------------

_COMPILE_SCRIPT = """
import json, warnings
warnings.simplefilter("ignore")
from exlm_chem.dag.triton_compile import compile_for_gpu
print(json.dumps([r._asdict() for S in (20, 100, 160, 308) for r in compile_for_gpu(S, "fp32")]))
"""


@pytest.mark.slow
def test_kernels_compile_for_sm90_without_spills():
    """The interpreter does not enforce Triton's compile rules; compile for real (no GPU)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE_SCRIPT], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(proc.stdout.strip().splitlines()[-1])
    names = {r["kernel"] for r in records}
    assert names == {
        "_fwd_single_tile_kernel",
        "_bwd_single_tile_kernel",
        "_fwd_tiled_kernel",
        "_bwd_beta_tiled_kernel",
        "_bwd_trans_tiled_kernel",
    }
    for r in records:
        if r["stack_bytes"] is not None:
            assert r["stack_bytes"] == 0, f"register spills: {r}"


# --------------------------------------------------------------------------------------
# GPU only: real CUDA runs at the benchmark shapes
# --------------------------------------------------------------------------------------


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    ("B", "T", "S"), [(256, 20, 40), (256, 40, 80), (256, 40, 160), (16, 77, 308)]
)
def test_cuda_large_shapes(dtype, B, T, S):
    gen = torch.Generator().manual_seed(B + T + S)
    tlen = torch.randint(max(2, T // 2), T + 1, (B,), generator=gen)
    slen = torch.minimum(tlen * (S // T), torch.tensor(S))
    tlen[0], slen[0] = T, S
    inputs = make_inputs(tlen.tolist(), slen.tolist(), T=T, S=S, seed=B + S, dtype=dtype)
    got, want = run_both(*inputs)
    if dtype == torch.float32:
        assert_matches_reference(got, want, rtol=1e-4, atol=1e-4)
    else:
        torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(got[1], want[1], rtol=2e-2, atol=2e-3)
        torch.testing.assert_close(got[2], want[2], rtol=2e-2, atol=2e-3)
    assert math.isfinite(got[0].sum().item())


def test_interpreter_numpy_failure_is_explained():
    """Triton 3.6's interpreter under NumPy >= 2.4 fails with a bare TypeError: name the fix."""
    with pytest.raises(RuntimeError, match=r"NumPy < 2\.4 .*\.venv-triton36") as info:
        with triton_kernels._explained_interpreter_errors():
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
    assert isinstance(info.value.__cause__, TypeError)
    with pytest.raises(ValueError, match="unrelated"):
        with triton_kernels._explained_interpreter_errors():
            raise ValueError("unrelated")
