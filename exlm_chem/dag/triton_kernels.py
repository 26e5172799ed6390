"""Triton kernels for the DAG states-alignment log-likelihood (forward and fused backward).

The op, its forward recursion ``alpha`` and its closed-form backward with the mirror
recursion ``beta`` are those written out in :mod:`exlm_chem.dag.reference`.

Design. SMILES graphs are small (S = k * T states, T of 3-40 targets), so one program
handles one sample and loops over t; everything is fp32 in log space whatever the input
dtype. Two paths, chosen from ``BLOCK_S = next_pow2(S)``:

* single tile (``BLOCK_S <= SINGLE_TILE_MAX_STATES`` = 64, most SMILES batches): the
  forward kernel keeps the whole ``[BLOCK_S, BLOCK_S]`` log-transition tile in registers
  and stores the alpha rows (``[B, T, S]`` fp32, kept for the backward). The backward
  kernel walks t in reverse, computing beta rows, the emission gradient and the transition
  gradient in the same loop; the transition gradient lives in a ``[BLOCK_S, BLOCK_S]`` fp32
  register accumulator and is written once at the end. The exponentials of one step serve
  both the beta logsumexp and the transition gradient (one ``[BLOCK_S, BLOCK_S]`` exp per
  step).
* tiled (``64 < S <= TRITON_MAX_STATES`` = 1024, e.g. the paper's text shape S ~ 308): a
  register tile of S x S would spill (it already does at 128), so the forward loads the
  transitions in row blocks of ``BLOCK_U`` per step and merges the logsumexp over u blocks
  online; alpha rows round-trip through global memory (a barrier orders them). The
  backward computes beta rows and the emission gradient in one per-sample kernel (the
  reduction over v is complete within a row block, so no online merge is needed), then a
  second kernel over (sample, row block) accumulates the transition gradient over t in
  registers from the stored alpha and beta tables.

Beyond ``TRITON_MAX_STATES`` the dispatcher (``exlm_chem.dag.dispatch``) falls back to the
torch reference.

Padding and non-edges are masked here, not by the caller, with the reference's results:
exactly zero gradient there, ``-inf`` and zero gradients for a sample with no valid path.

CPU: kernels run under Triton's interpreter only, which is chosen when ``@triton.jit`` runs
(for triton's own helpers at triton's import), so ``TRITON_INTERPRET=1`` must be in the
environment before triton is first imported. The interpreter is slow (it executes each
program in Python); it is for tests. :func:`exlm_chem.dag.triton_compile.compile_for_gpu`
compiles the kernels for an NVIDIA target without a GPU, which catches what the
interpreter does not check.

Triton 3.6's interpreter (the GPU image's version) turns a runtime loop bound into a Python
int with ``int(array)`` on a one-element 1-d array, which NumPy >= 2.4 rejects
(``TypeError: only 0-dimensional arrays can be converted to Python scalars``); Triton 3.9
squeezes first. Every runtime scalar is such an array there, so no rewrite of a
data-dependent loop avoids it: interpret with triton 3.6 under NumPy < 2.4 (what
``scripts/setup.sh dev`` puts in ``.venv-triton36``). The compiled kernels are unaffected.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from exlm_chem.dag.inputs import check_inputs

__all__ = [
    "SINGLE_TILE_MAX_STATES",
    "TRITON_MAX_STATES",
    "DagLogProbTriton",
    "KernelConfig",
    "dag_logprob_triton",
    "kernel_config",
]

#: Largest padded state count (power of two) handled by the fused single-tile kernels.
SINGLE_TILE_MAX_STATES = 64
#: Largest state count S the Triton path accepts; the dispatcher falls back above it.
TRITON_MAX_STATES = 1024
# Elements of one [BLOCK_U, BLOCK_S] row block in the tiled path.
_TILE_ELEMS = 8192
# (forward, backward) warps per BLOCK_S. Chosen so that every kernel compiles for sm_90
# without register spills (ptxas resource usage with triton 3.9; reproduce with
# `python benchmarks/dag_loss.py --ptxas`): the fused single-tile backward already needs
# ~210 registers per thread at BLOCK_S=64 with 8 warps and spills at BLOCK_S=128 whatever
# the warp count (2 KB of stack at 8 or 16 warps), hence the tiled path from 65 states on.
# Not yet tuned by timing on a GPU.
_SINGLE_TILE_WARPS = {16: (1, 1), 32: (2, 4), 64: (4, 8)}
_TILED_WARPS = {128: (8, 8), 256: (8, 16), 512: (8, 16), 1024: (8, 8)}

_SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# kernels may only read module globals that are constexpr
_NEG_INF = tl.constexpr(float("-inf"))


# single-tile kernels
@triton.jit
def _sample_lengths(tlen_ptr, slen_ptr, b, T, S):
    """Target and state counts of sample ``b``, clamped to the padded sizes (a bad length
    must not read out of bounds; the wrapper validates lengths anyway)."""
    return tl.minimum(tl.load(tlen_ptr + b), T), tl.minimum(tl.load(slen_ptr + b), S)


@triton.jit
def _backward_scale(logz_ptr, gout_ptr, b):
    """Upstream gradient of sample ``b``, whether it has a path, and its log Z made finite
    (a sample without a path gets zero gradients, not NaN)."""
    logz = tl.load(logz_ptr + b)
    valid = logz > _NEG_INF
    return tl.load(gout_ptr + b), valid, tl.where(valid, logz, 0.0)


@triton.jit
def _emission_gradient(alpha, beta, emission, logz_safe, g, valid):
    """Gradient of the emissions of one row: each state's posterior
    ``exp(alpha + beta - emission - log Z)`` times the upstream gradient ``g``; zero where
    the state is on no path (no -inf - -inf NaN) and for a sample without a path."""
    live = (alpha > _NEG_INF) & (beta > _NEG_INF)
    emission = tl.where(live, emission, 0.0)
    ge = tl.where(live, tl.exp(alpha + beta - emission - logz_safe) * g, 0.0)
    return tl.where(valid, ge, 0.0)


@triton.jit
def _fwd_single_tile_kernel(
    emis_ptr, logE_ptr,  # [B, T, S] emissions, [B, S, S] log transitions
    tlen_ptr, slen_ptr,  # [B] int32 target and state lengths
    alpha_ptr,  # [B, T, S] fp32 (written when STORE_ALPHA)
    logz_ptr,  # [B] fp32
    T,
    S,
    BLOCK_S: tl.constexpr,
    STORE_ALPHA: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    T_b, L_b = _sample_lengths(tlen_ptr, slen_ptr, b, T, S)

    offs = tl.arange(0, BLOCK_S)
    rows = offs[:, None]  # u
    cols = offs[None, :]  # v
    edge = (rows < L_b) & (cols < L_b) & (cols > rows)
    logE = tl.load(logE_ptr + b * S * S + rows * S + cols, mask=edge, other=_NEG_INF)
    logE = logE.to(tl.float32)

    emis_b = emis_ptr + b * T * S
    alpha_b = alpha_ptr + b * T * S
    e00 = tl.load(emis_b).to(tl.float32)
    alpha = tl.where(offs == 0, e00, _NEG_INF)
    if STORE_ALPHA:
        tl.store(alpha_b + offs, alpha, mask=offs < S)

    for t in range(1, T_b):
        scores = alpha[:, None] + logE  # [u, v]
        m = tl.max(scores, axis=0)
        shift = tl.where(m == _NEG_INF, 0.0, m)  # an all -inf column must not give NaN
        s = tl.sum(tl.exp(scores - shift[None, :]), axis=0)
        lse = tl.where(s > 0.0, tl.log(tl.where(s > 0.0, s, 1.0)) + shift, _NEG_INF)
        e_t = tl.load(emis_b + t * S + offs, mask=offs < L_b, other=_NEG_INF).to(tl.float32)
        alpha = lse + e_t
        if STORE_ALPHA:
            tl.store(alpha_b + t * S + offs, alpha, mask=offs < S)

    logz = tl.max(tl.where(offs == L_b - 1, alpha, _NEG_INF), axis=0)
    tl.store(logz_ptr + b, logz)


@triton.jit
def _bwd_single_tile_kernel(
    emis_ptr, logE_ptr,  # [B, T, S] emissions, [B, S, S] log transitions
    tlen_ptr, slen_ptr,  # [B] int32 target and state lengths
    alpha_ptr,  # [B, T, S] fp32
    logz_ptr,  # [B] fp32
    gout_ptr,  # [B] fp32 upstream gradient
    gemis_ptr,  # [B, T, S] zero-initialised, emissions dtype
    glogE_ptr,  # [B, S, S] fully written here, log_transitions dtype
    T,
    S,
    BLOCK_S: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    T_b, L_b = _sample_lengths(tlen_ptr, slen_ptr, b, T, S)
    g, valid, logz_safe = _backward_scale(logz_ptr, gout_ptr, b)

    offs = tl.arange(0, BLOCK_S)
    rows = offs[:, None]
    cols = offs[None, :]
    logE = tl.load(
        logE_ptr + b * S * S + rows * S + cols,
        mask=(rows < L_b) & (cols < L_b) & (cols > rows),
        other=_NEG_INF,
    ).to(tl.float32)

    emis_b = emis_ptr + b * T * S
    alpha_b = alpha_ptr + b * T * S
    gemis_b = gemis_ptr + b * T * S

    last = T_b - 1
    e_last = tl.load(emis_b + last * S + L_b - 1).to(tl.float32)
    beta = tl.where(offs == L_b - 1, e_last, _NEG_INF)  # beta[last, v]
    acc = tl.zeros([BLOCK_S, BLOCK_S], dtype=tl.float32)

    for i in range(0, last):
        t = last - i
        # emission gradient of row t, now that beta[t] is known
        a_t = tl.load(alpha_b + t * S + offs, mask=offs < L_b, other=_NEG_INF)
        e_t = tl.load(emis_b + t * S + offs, mask=offs < L_b, other=_NEG_INF).to(tl.float32)
        ge = _emission_gradient(a_t, beta, e_t, logz_safe, g, valid)
        tl.store(gemis_b + t * S + offs, ge.to(gemis_ptr.dtype.element_ty), mask=offs < S)

        # step t-1 -> t: x[u, v] = logE[u, v] + beta[t, v]
        x = logE + beta[None, :]
        m = tl.max(x, axis=1)
        has = m > _NEG_INF
        shift = tl.where(has, m, 0.0)
        p = tl.exp(x - shift[:, None])
        s = tl.sum(p, axis=1)
        a_prev = tl.load(alpha_b + (t - 1) * S + offs, mask=offs < L_b, other=_NEG_INF)
        # exp(alpha[t-1,u] + logE[u,v] + beta[t,v] - logZ) = p[u, v] * w[u]; w <= 1 whenever
        # both factors are finite, and w is forced to 0 otherwise (a dead end would overflow)
        w_live = has & (a_prev > _NEG_INF)
        w = tl.where(w_live, tl.exp(a_prev + shift - logz_safe), 0.0)
        w = tl.where(valid, w, 0.0)
        acc += p * w[:, None]
        e_prev = tl.load(emis_b + (t - 1) * S + offs, mask=offs < L_b, other=_NEG_INF)
        lse = tl.where(has, tl.log(tl.where(s > 0.0, s, 1.0)) + shift, _NEG_INF)
        beta = lse + e_prev.to(tl.float32)

    a_0 = tl.load(alpha_b + offs, mask=offs < L_b, other=_NEG_INF)
    e_0 = tl.load(emis_b + offs, mask=offs < L_b, other=_NEG_INF).to(tl.float32)
    ge = _emission_gradient(a_0, beta, e_0, logz_safe, g, valid)
    tl.store(gemis_b + offs, ge.to(gemis_ptr.dtype.element_ty), mask=offs < S)

    # recomputed rather than kept live through the loop (registers)
    edge = (rows < L_b) & (cols < L_b) & (cols > rows)
    gE = tl.where(valid, tl.where(edge, acc * g, 0.0), 0.0)
    tl.store(
        glogE_ptr + b * S * S + rows * S + cols,
        gE.to(glogE_ptr.dtype.element_ty),
        mask=(rows < S) & (cols < S),
    )


# tiled kernels (large S)
@triton.jit
def _fwd_tiled_kernel(
    emis_ptr,
    logE_ptr,
    tlen_ptr,
    slen_ptr,
    alpha_ptr,  # always written: the next step reads the previous row back in row blocks
    logz_ptr,
    T,
    S,
    BLOCK_S: tl.constexpr,
    BLOCK_U: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    T_b, L_b = _sample_lengths(tlen_ptr, slen_ptr, b, T, S)

    offs = tl.arange(0, BLOCK_S)
    offs_u = tl.arange(0, BLOCK_U)
    emis_b = emis_ptr + b * T * S
    alpha_b = alpha_ptr + b * T * S
    logE_b = logE_ptr + b * S * S
    n_ub = tl.cdiv(L_b, BLOCK_U)

    e00 = tl.load(emis_b).to(tl.float32)
    alpha = tl.where(offs == 0, e00, _NEG_INF)
    tl.store(alpha_b + offs, alpha, mask=offs < S)
    tl.debug_barrier()

    for t in range(1, T_b):
        m_run = tl.full([BLOCK_S], _NEG_INF, tl.float32)
        s_run = tl.zeros([BLOCK_S], dtype=tl.float32)
        for ub in range(0, n_ub):
            u = ub * BLOCK_U + offs_u
            a_u = tl.load(alpha_b + (t - 1) * S + u, mask=u < L_b, other=_NEG_INF)
            edge = (u[:, None] < L_b) & (offs[None, :] < L_b) & (offs[None, :] > u[:, None])
            tile = tl.load(logE_b + u[:, None] * S + offs[None, :], mask=edge, other=_NEG_INF)
            scores = a_u[:, None] + tile.to(tl.float32)  # [BLOCK_U, BLOCK_S]
            m_new = tl.maximum(m_run, tl.max(scores, axis=0))
            shift = tl.where(m_new == _NEG_INF, 0.0, m_new)
            s_run = s_run * tl.exp(m_run - shift) + tl.sum(tl.exp(scores - shift[None, :]), 0)
            m_run = m_new
        shift = tl.where(m_run == _NEG_INF, 0.0, m_run)
        lse = tl.where(s_run > 0.0, tl.log(tl.where(s_run > 0.0, s_run, 1.0)) + shift, _NEG_INF)
        e_t = tl.load(emis_b + t * S + offs, mask=offs < L_b, other=_NEG_INF).to(tl.float32)
        alpha = lse + e_t
        tl.store(alpha_b + t * S + offs, alpha, mask=offs < S)
        # the next step reads this row back with another thread layout
        tl.debug_barrier()

    logz = tl.max(tl.where(offs == L_b - 1, alpha, _NEG_INF), axis=0)
    tl.store(logz_ptr + b, logz)


@triton.jit
def _bwd_beta_tiled_kernel(
    emis_ptr,
    logE_ptr,
    tlen_ptr,
    slen_ptr,
    alpha_ptr,  # [B, T, S] fp32
    logz_ptr,
    gout_ptr,
    beta_ptr,  # [B, T, S] fp32 scratch, rows t < T_b and states < L_b written
    gemis_ptr,  # [B, T, S] zero-initialised
    T,
    S,
    BLOCK_S: tl.constexpr,
    BLOCK_U: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    T_b, L_b = _sample_lengths(tlen_ptr, slen_ptr, b, T, S)
    g, valid, logz_safe = _backward_scale(logz_ptr, gout_ptr, b)

    offs = tl.arange(0, BLOCK_S)
    offs_u = tl.arange(0, BLOCK_U)
    emis_b = emis_ptr + b * T * S
    alpha_b = alpha_ptr + b * T * S
    beta_b = beta_ptr + b * T * S
    gemis_b = gemis_ptr + b * T * S
    logE_b = logE_ptr + b * S * S
    n_ub = tl.cdiv(L_b, BLOCK_U)

    last = T_b - 1
    e_last = tl.load(emis_b + last * S + L_b - 1).to(tl.float32)
    beta = tl.where(offs == L_b - 1, e_last, _NEG_INF)
    tl.store(beta_b + last * S + offs, beta, mask=offs < S)
    a_t = tl.load(alpha_b + last * S + offs, mask=offs < L_b, other=_NEG_INF)
    e_t = tl.load(emis_b + last * S + offs, mask=offs < L_b, other=_NEG_INF).to(tl.float32)
    ge = _emission_gradient(a_t, beta, e_t, logz_safe, g, valid)
    tl.store(gemis_b + last * S + offs, ge.to(gemis_ptr.dtype.element_ty), mask=offs < S)
    tl.debug_barrier()

    for i in range(0, last):
        t = last - i
        beta_t = tl.load(beta_b + t * S + offs, mask=offs < L_b, other=_NEG_INF)
        for ub in range(0, n_ub):
            u = ub * BLOCK_U + offs_u
            edge = (u[:, None] < L_b) & (offs[None, :] < L_b) & (offs[None, :] > u[:, None])
            tile = tl.load(logE_b + u[:, None] * S + offs[None, :], mask=edge, other=_NEG_INF)
            x = tile.to(tl.float32) + beta_t[None, :]  # [BLOCK_U, BLOCK_S]
            m = tl.max(x, axis=1)
            has = m > _NEG_INF
            shift = tl.where(has, m, 0.0)
            s = tl.sum(tl.exp(x - shift[:, None]), axis=1)
            e_u = tl.load(emis_b + (t - 1) * S + u, mask=u < L_b, other=_NEG_INF)
            e_u = e_u.to(tl.float32)
            beta_u = tl.where(has, tl.log(tl.where(s > 0.0, s, 1.0)) + shift, _NEG_INF) + e_u
            tl.store(beta_b + (t - 1) * S + u, beta_u, mask=u < L_b)
            a_u = tl.load(alpha_b + (t - 1) * S + u, mask=u < L_b, other=_NEG_INF)
            ge_u = _emission_gradient(a_u, beta_u, e_u, logz_safe, g, valid)
            tl.store(gemis_b + (t - 1) * S + u, ge_u.to(gemis_ptr.dtype.element_ty), mask=u < L_b)
        # the next step reads the whole beta row back
        tl.debug_barrier()


@triton.jit
def _bwd_trans_tiled_kernel(
    logE_ptr,
    tlen_ptr,
    slen_ptr,
    alpha_ptr,
    beta_ptr,
    logz_ptr,
    gout_ptr,
    glogE_ptr,  # [B, S, S] fully written here
    T,
    S,
    BLOCK_S: tl.constexpr,
    BLOCK_U: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    ub = tl.program_id(1)
    T_b, L_b = _sample_lengths(tlen_ptr, slen_ptr, b, T, S)
    g, valid, logz_safe = _backward_scale(logz_ptr, gout_ptr, b)

    offs = tl.arange(0, BLOCK_S)
    u = ub * BLOCK_U + tl.arange(0, BLOCK_U)
    alpha_b = alpha_ptr + b * T * S
    beta_b = beta_ptr + b * T * S
    edge = (u[:, None] < L_b) & (offs[None, :] < L_b) & (offs[None, :] > u[:, None])
    tile = tl.load(
        logE_ptr + b * S * S + u[:, None] * S + offs[None, :], mask=edge, other=_NEG_INF
    ).to(tl.float32)

    acc = tl.zeros([BLOCK_U, BLOCK_S], dtype=tl.float32)
    # row blocks past L_b (and invalid samples) only write zeros
    n_steps = tl.where(valid, tl.where(ub * BLOCK_U < L_b, T_b - 1, 0), 0)
    for t in range(0, n_steps):
        a_u = tl.load(alpha_b + t * S + u, mask=u < L_b, other=_NEG_INF)
        beta_v = tl.load(beta_b + (t + 1) * S + offs, mask=offs < L_b, other=_NEG_INF)
        z = a_u[:, None] + tile + beta_v[None, :] - logz_safe
        acc += tl.where(z > _NEG_INF, tl.exp(z), 0.0)

    gE = tl.where(valid, tl.where(edge, acc * g, 0.0), 0.0)
    tl.store(
        glogE_ptr + b * S * S + u[:, None] * S + offs[None, :],
        gE.to(glogE_ptr.dtype.element_ty),
        mask=(u[:, None] < S) & (offs[None, :] < S),
    )


# launch configuration
class KernelConfig(NamedTuple):
    """Launch parameters chosen from the state count (see :func:`kernel_config`)."""

    tiled: bool
    block_s: int
    block_u: int
    fwd_warps: int
    bwd_warps: int


def kernel_config(num_states: int) -> KernelConfig:
    """Block sizes and warp counts for ``num_states`` (S) states.

    Parameters
    ----------
    num_states : int
        Padded state dimension S of the batch.

    Returns
    -------
    KernelConfig
        ``tiled`` says which path runs; ``block_s`` is the padded power of two (at least
        16); ``block_u`` is the row-block height of the tiled path (``block_s`` for the
        single tile).
    """
    if num_states < 1 or num_states > TRITON_MAX_STATES:
        raise ValueError(
            f"S={num_states} states is outside the Triton path's range "
            f"[1, {TRITON_MAX_STATES}]; use the torch reference"
        )
    block_s = max(16, triton.next_power_of_2(num_states))
    if block_s <= SINGLE_TILE_MAX_STATES:
        return KernelConfig(False, block_s, block_s, *_SINGLE_TILE_WARPS[block_s])
    return KernelConfig(True, block_s, _TILE_ELEMS // block_s, *_TILED_WARPS[block_s])


# launchers
def _forward(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    store_alpha: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, S = emissions.shape
    cfg = kernel_config(S)
    logz = torch.empty(B, dtype=torch.float32, device=emissions.device)
    if store_alpha or cfg.tiled:
        # padded rows t >= T_b are never read; states s >= L_b of valid rows hold -inf
        alpha = torch.empty((B, T, S), dtype=torch.float32, device=emissions.device)
    else:
        alpha = logz  # never dereferenced when STORE_ALPHA is False
    if B == 0:
        return logz, alpha
    if cfg.tiled:
        _fwd_tiled_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz,
            T, S, BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.fwd_warps,
        )  # fmt: skip
    else:
        _fwd_single_tile_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz,
            T, S, BLOCK_S=cfg.block_s, STORE_ALPHA=store_alpha, num_warps=cfg.fwd_warps,
        )  # fmt: skip
    return logz, alpha


def _backward(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    alpha: torch.Tensor,
    logz: torch.Tensor,
    grad_out: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, S = emissions.shape
    cfg = kernel_config(S)
    grad_emis = torch.zeros_like(emissions)
    grad_logE = torch.empty_like(log_transitions)
    if B == 0:
        return grad_emis, grad_logE
    if cfg.tiled:
        beta = torch.empty((B, T, S), dtype=torch.float32, device=emissions.device)
        _bwd_beta_tiled_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out,
            beta, grad_emis, T, S,
            BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.bwd_warps,
        )  # fmt: skip
        _bwd_trans_tiled_kernel[(B, triton.cdiv(S, cfg.block_u))](
            log_transitions, target_lengths, state_lengths, alpha, beta, logz, grad_out,
            grad_logE, T, S,
            BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.bwd_warps,
        )  # fmt: skip
    else:
        _bwd_single_tile_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out,
            grad_emis, grad_logE, T, S,
            BLOCK_S=cfg.block_s, num_warps=cfg.bwd_warps,
        )  # fmt: skip
    return grad_emis, grad_logE


class DagLogProbTriton(torch.autograd.Function):
    """Autograd wrapper: forward kernel saves alpha, backward runs the fused kernels.

    Inputs must already be validated and contiguous (see :func:`dag_logprob_triton`).
    Not twice differentiable.
    """

    @staticmethod
    def forward(
        ctx,
        emissions: torch.Tensor,
        log_transitions: torch.Tensor,
        target_lengths: torch.Tensor,
        state_lengths: torch.Tensor,
    ) -> torch.Tensor:
        needs_grad = bool(ctx.needs_input_grad[0] or ctx.needs_input_grad[1])
        logz, alpha = _forward(
            emissions, log_transitions, target_lengths, state_lengths, store_alpha=needs_grad
        )
        if needs_grad:
            ctx.save_for_backward(
                emissions, log_transitions, target_lengths, state_lengths, alpha, logz
            )
        return logz

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out: torch.Tensor):
        emissions, log_transitions, target_lengths, state_lengths, alpha, logz = ctx.saved_tensors
        grad_out = grad_out.to(torch.float32).contiguous()
        with _explained_interpreter_errors():
            grad_emis, grad_logE = _backward(
                emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out
            )
        return (
            grad_emis if ctx.needs_input_grad[0] else None,
            grad_logE if ctx.needs_input_grad[1] else None,
            None,
            None,
        )


# what triton 3.6's interpreter raises under NumPy >= 2.4 (see the module docstring)
_NUMPY_SCALAR_ERROR = "only 0-dimensional arrays can be converted to Python scalars"


@contextlib.contextmanager
def _explained_interpreter_errors() -> Iterator[None]:
    """Re-raise the interpreter's NumPy-scalar failure with its cause and the fix."""
    try:
        yield
    except Exception as err:
        if _NUMPY_SCALAR_ERROR not in str(err):
            raise
        import numpy

        raise RuntimeError(
            f"Triton {triton.__version__}'s interpreter cannot run these kernels with NumPy "
            f"{numpy.__version__}: it converts one-element arrays to loop bounds, which NumPy "
            ">= 2.4 rejects. Use NumPy < 2.4 with this triton (scripts/setup.sh dev builds "
            ".venv-triton36 so), or triton >= 3.9; compiled GPU kernels are not affected"
        ) from err


def _is_interpreted() -> bool:
    # The interpreter is picked when @triton.jit runs: for triton's own helpers (tl.max, ...)
    # at triton's import, for these kernels at this module's import. Both must agree.
    return all(
        type(fn).__name__ == "InterpretedFunction" for fn in (_fwd_single_tile_kernel, tl.max)
    )


def _check_triton_inputs(emissions: torch.Tensor, log_transitions: torch.Tensor) -> None:
    """What the kernels need beyond :func:`exlm_chem.dag.inputs.check_inputs`."""
    for name, x in (("emissions", emissions), ("log_transitions", log_transitions)):
        if x.dtype not in _SUPPORTED_DTYPES:
            raise TypeError(
                f"{name} dtype {x.dtype} is not supported by the Triton path "
                f"(float32, bfloat16, float16); use the torch reference"
            )
    S = emissions.shape[2]
    if S > TRITON_MAX_STATES:
        raise ValueError(
            f"S={S} states exceeds TRITON_MAX_STATES={TRITON_MAX_STATES}; use the torch reference"
        )
    if emissions.device.type == "cpu" and not _is_interpreted():
        raise RuntimeError(
            "the Triton DAG kernels got CPU tensors but Triton's interpreter is off: set "
            "TRITON_INTERPRET=1 before triton and exlm_chem.dag.triton_kernels are first "
            "imported, or use the torch reference on CPU"
        )


def dag_logprob_triton(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    *,
    check_lengths: bool = True,
) -> torch.Tensor:
    """Log-likelihood log P(Y) of each sample's targets under the states DAG (Triton).

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths : Tensor
        As in :func:`exlm_chem.dag.dag_logprob`; the scores float32, bfloat16 or float16.
    check_lengths : bool, keyword-only
        Validate the lengths (one host synchronisation on CUDA). The kernels clamp them
        anyway, so skipping the check cannot read out of bounds.

    Returns
    -------
    Tensor [B], float32
        ``log P(Y)``; ``-inf`` where no path exists (those samples get zero gradients).
        Gradients flow to ``emissions`` and ``log_transitions`` in their own dtypes.

    Raises
    ------
    ValueError, TypeError, RuntimeError
        Bad shapes, dtypes or lengths; ``S > TRITON_MAX_STATES``; CPU tensors without
        Triton's interpreter.
    """
    check_inputs(emissions, log_transitions, target_lengths, state_lengths, check_lengths)
    return run_checked(emissions, log_transitions, target_lengths, state_lengths)


def run_checked(emissions: torch.Tensor, log_transitions: torch.Tensor,
                target_lengths: torch.Tensor, state_lengths: torch.Tensor) -> torch.Tensor:
    """:func:`dag_logprob_triton` on inputs that passed
    :func:`~exlm_chem.dag.inputs.check_inputs` (the dispatcher's one check)."""
    _check_triton_inputs(emissions, log_transitions)
    device = emissions.device
    tlen = target_lengths.to(device=device, dtype=torch.int32).contiguous()
    slen = state_lengths.to(device=device, dtype=torch.int32).contiguous()
    with _explained_interpreter_errors():
        return DagLogProbTriton.apply(
            emissions.contiguous(), log_transitions.contiguous(), tlen, slen
        )
