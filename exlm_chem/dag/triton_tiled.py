"""The tiled Triton kernels of the DAG states-alignment loss (``64 < S <= 1024`` states).

For large graphs, e.g. the paper's text shape S ~ 308 (launched by
:mod:`exlm_chem.dag.triton_kernels`): a register tile of S x S would spill (it already does
at 128), so the transitions are read in row blocks of ``BLOCK_U`` rows.

* :func:`_fwd_tiled_kernel`, one program per sample, merges the logsumexp over the u
  blocks online; alpha rows round-trip through global memory (a barrier orders them).
* :func:`_bwd_beta_tiled_kernel`, one program per sample, computes beta rows and the
  emission gradient (the reduction over v is complete within a row block, so no online
  merge is needed).
* :func:`_bwd_trans_tiled_kernel`, one program per (sample, row block), accumulates the
  transition gradient over t in registers from the stored alpha and beta tables.
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
