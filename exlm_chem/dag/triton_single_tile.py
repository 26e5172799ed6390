"""The single-tile Triton kernels of the DAG states-alignment loss (``S <= 64`` states).

Most SMILES batches take this path (``BLOCK_S = next_pow2(S) <= SINGLE_TILE_MAX_STATES``
of :mod:`exlm_chem.dag.triton_kernels`, which launches them): one program per sample
keeps the whole ``[BLOCK_S, BLOCK_S]`` log-transition tile in registers.

* :func:`_fwd_single_tile_kernel` runs the ``alpha`` recursion over t and stores the alpha
  rows (``[B, T, S]`` fp32, kept for the backward) when asked to.
* :func:`_bwd_single_tile_kernel` walks t in reverse, computing beta rows, the emission
  gradient and the transition gradient in the same loop; the transition gradient lives in
  a ``[BLOCK_S, BLOCK_S]`` fp32 register accumulator and is written once at the end. The
  exponentials of one step serve both the beta logsumexp and the transition gradient (one
  ``[BLOCK_S, BLOCK_S]`` exp per step).
"""

from __future__ import annotations

import triton
import triton.language as tl

from exlm_chem.dag.triton_common import (
    _NEG_INF,
    _backward_scale,
    _emission_gradient,
    _sample_lengths,
)


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
