"""The states-alignment log-likelihood over the DAG of expanded states, in torch.

This is where the paper's dynamic programme (appendices H and I) is written out. Shapes:
B samples, T target positions (BOS + masked tokens + EOS), S expanded states (DAG nodes).
For a sample with ``T_b`` targets and ``L_b`` states, a path visits exactly ``T_b`` states
``0 = s_0 < s_1 < ... < s_{T_b-1} = L_b - 1`` and scores
``sum_t emis[t, s_t] + sum_t logE[s_{t-1}, s_t]``; ``log P(Y)`` is the log-sum-exp over
all such paths. The forward recursion computes it:

    alpha[0, v] = emis[0, 0] if v == 0 else -inf
    alpha[t, v] = logsumexp_{u < v}(alpha[t-1, u] + logE[u, v]) + emis[t, v]
    log P(Y)    = alpha[T_b - 1, L_b - 1]

Read in this order:

* :func:`dag_logprob_autograd`: the recursion above, written plainly and differentiated by
  autograd. It keeps every step's [B, S, S] intermediate alive (memory O(B*T*S*S)), so
  the tests use it as the oracle of the other implementations.
* :func:`dag_logprob_reference`: the same value with a hand-written backward, a custom
  ``autograd.Function`` that runs the mirror (beta) recursion and applies the closed-form
  gradients

      dlogZ/demis[t, v] = exp(alpha[t, v] + beta[t, v] - emis[t, v] - logZ)
      dlogZ/dlogE[u, v] = sum_t exp(alpha[t, u] + logE[u, v] + beta[t+1, v] - logZ)

  Memory is O(B*T*S) for alpha plus O(B*S*S) for the transition gradient; no
  [B, T, S, S] tensor is built. This is the CPU path; :mod:`exlm_chem.dag.triton_kernels`
  is the same backward as GPU kernels.

Both mask padding (``t >= T_b``, ``s >= L_b``) and non-edges (``v <= u``) themselves, so the
values stored there may be anything, NaN included, and receive exactly zero gradient. A
sample with no valid path returns ``-inf`` and zero gradients.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

__all__ = ["dag_logprob_autograd", "dag_logprob_reference", "masked_inputs"]

_NEG_INF = float("-inf")


def _accumulation_dtype(*tensors: Tensor) -> torch.dtype:
    # fp64 stays fp64 so that gradcheck is meaningful; everything else runs in fp32.
    return torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32


def masked_inputs(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Cast to the accumulation dtype and overwrite padding and non-edges with ``-inf``.

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths : Tensor
        As in :func:`exlm_chem.dag.dag_logprob`.

    Returns
    -------
    emis : Tensor [B, T, S]
        ``-inf`` where ``t >= T_b`` or ``s >= L_b``.
    log_e : Tensor [B, S, S]
        ``-inf`` where ``v <= u`` or either state is padding.
    emis_mask : Tensor [B, T, S], bool
        True on the real region of ``emissions``.
    edge_mask : Tensor [B, S, S], bool
        True on the entries of ``log_transitions`` that may be edges.
    """
    dtype = _accumulation_dtype(emissions, log_transitions)
    device = emissions.device
    _, t_max, s_max = emissions.shape
    t_len = target_lengths.to(device=device, dtype=torch.long)
    s_len = state_lengths.to(device=device, dtype=torch.long)
    pos = torch.arange(t_max, device=device)
    state = torch.arange(s_max, device=device)
    state_ok = state[None, :] < s_len[:, None]  # [B, S]
    emis_mask = (pos[None, :, None] < t_len[:, None, None]) & state_ok[:, None, :]
    forward_edge = state[:, None] < state[None, :]  # [S, S], u < v
    edge_mask = forward_edge[None] & state_ok[:, :, None] & state_ok[:, None, :]
    # torch.where (not multiplication) so that NaN/inf garbage in padding cannot leak.
    emis = torch.where(emis_mask, emissions.to(dtype), _NEG_INF)
    log_e = torch.where(edge_mask, log_transitions.to(dtype), _NEG_INF)
    return emis, log_e, emis_mask, edge_mask


def _gather_end(table: Tensor, t_len: Tensor, s_len: Tensor) -> Tensor:
    """``table[b, T_b - 1, L_b - 1]`` for each sample, shape [B]."""
    rows = torch.arange(table.shape[0], device=table.device)
    return table[rows, t_len - 1, s_len - 1]


# ---------------------------------------------------------------------- the recursion
def _safe_logsumexp(x: Tensor, dim: int) -> Tensor:
    """logsumexp whose gradient is 0 (not NaN) where every reduced entry is -inf."""
    peak = x.amax(dim=dim, keepdim=True).detach()
    peak = torch.where(torch.isfinite(peak), peak, 0.0)
    total = torch.exp(x - peak).sum(dim=dim)
    nonzero = total > 0
    # log() only ever sees positive numbers, so its gradient stays finite everywhere.
    logged = torch.log(torch.where(nonzero, total, 1.0)) + peak.squeeze(dim)
    return torch.where(nonzero, logged, _NEG_INF)


def dag_logprob_autograd(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
) -> Tensor:
    """log P(Y) by the forward recursion of the module docstring, differentiated by autograd.

    ``alpha[t]`` is ``steps[t]`` below: step t adds one edge ``u -> v`` (u < v) to every
    path and the emission of target t at its new end v.

    Parameters and return value are those of :func:`dag_logprob_reference`. Autograd
    stores every step's [B, S, S] scores (memory O(B*T*S*S)): the tests' oracle.
    """
    emis, log_e, _, _ = masked_inputs(emissions, log_transitions, target_lengths, state_lengths)
    t_len = target_lengths.to(device=emis.device, dtype=torch.long)
    s_len = state_lengths.to(device=emis.device, dtype=torch.long)
    s_max = emis.shape[2]
    first = torch.full_like(emis[:, 0], _NEG_INF)
    start = torch.arange(s_max, device=emis.device) == 0
    steps = [torch.where(start[None, :], emis[:, 0], first)]  # each [B, S]
    for t in range(1, emis.shape[1]):
        scores = steps[-1][:, :, None] + log_e  # [B, S(u), S(v)]
        steps.append(_safe_logsumexp(scores, dim=1) + emis[:, t])
    alpha = torch.stack(steps, dim=1)  # [B, T, S]
    log_z = _gather_end(alpha, t_len, s_len)
    # Cut the gradient of path-less samples: d(-inf)/d(emission) would otherwise be 1.
    return torch.where(torch.isfinite(log_z), log_z, _NEG_INF)


# ---------------------------------------------------------------------- the hand-written backward
def _alpha_table(emis: Tensor, log_e: Tensor) -> Tensor:
    """Forward table ``alpha[b, t, v]`` (log space), shape [B, T, S]."""
    batch, t_max, s_max = emis.shape
    alpha = emis.new_full((batch, t_max, s_max), _NEG_INF)
    alpha[:, 0, 0] = emis[:, 0, 0]
    for t in range(1, t_max):
        # [B, S(u), 1] + [B, S(u), S(v)] -> reduce over u. torch.logsumexp returns -inf
        # (not NaN) for all -inf columns, and this function is never differentiated.
        scores = alpha[:, t - 1, :, None] + log_e
        alpha[:, t] = torch.logsumexp(scores, dim=1) + emis[:, t]
    return alpha


class _DagLogProb(torch.autograd.Function):
    """log P(Y) with closed-form alpha/beta gradients (see module docstring)."""

    @staticmethod
    def forward(
        ctx: FunctionCtx,
        emissions: Tensor,
        log_transitions: Tensor,
        target_lengths: Tensor,
        state_lengths: Tensor,
    ) -> Tensor:
        emis, log_e, _, _ = masked_inputs(emissions, log_transitions, target_lengths, state_lengths)
        t_len = target_lengths.to(device=emis.device, dtype=torch.long)
        s_len = state_lengths.to(device=emis.device, dtype=torch.long)
        alpha = _alpha_table(emis, log_e)
        log_z = _gather_end(alpha, t_len, s_len)
        # Only alpha and log Z are kept; the masked inputs are cheap to rebuild in backward
        # and the beta table is never stored whole (it is consumed step by step).
        ctx.save_for_backward(emissions, log_transitions, t_len, s_len, alpha, log_z)
        ctx.input_dtypes = (emissions.dtype, log_transitions.dtype)  # type: ignore[attr-defined]
        return log_z

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
        emissions, log_transitions, t_len, s_len, alpha, log_z = ctx.saved_tensors
        emis, log_e, emis_mask, edge_mask = masked_inputs(emissions, log_transitions, t_len, s_len)
        batch, t_max, s_max = emis.shape
        valid = torch.isfinite(log_z)  # [B]; -inf means no path
        # Finite stand-in for invalid samples: their terms are all -inf anyway, and the
        # final where() below makes their gradient exactly zero.
        log_z_safe = torch.where(valid, log_z, 0.0)

        grad_emis = torch.zeros_like(emis)  # [B, T, S]
        grad_log_e = torch.zeros_like(log_e)  # [B, S, S]
        state = torch.arange(s_max, device=emis.device)
        # beta_out[t, u]: log-sum over path suffixes leaving u after emitting y_t (emission at
        # t excluded, so that dlogZ/demis = exp(alpha + beta_out - logZ) needs no -inf - -inf).
        # At the sample's last target only the final state is a valid end: beta_out = 0.
        end_init = emis.new_zeros((batch, s_max)).masked_fill(
            state[None, :] != (s_len - 1)[:, None], _NEG_INF
        )
        beta_next = emis.new_full((batch, s_max), _NEG_INF)  # beta (with emission) at t + 1
        for t in range(t_max - 1, -1, -1):
            # [B, S(u), S(v)]: logE[u, v] + beta[t + 1, v]
            link = log_e + beta_next[:, None, :]
            # One exp of the [B, S, S] block serves both the logsumexp and the edge gradient.
            peak = link.amax(dim=2)  # [B, S]; -inf for rows without a live successor
            peak_safe = torch.where(torch.isfinite(peak), peak, 0.0)
            weight = torch.exp(link - peak_safe[:, :, None])  # [B, S, S], in [0, 1]
            beta_out = torch.log(weight.sum(dim=2)) + peak_safe  # log(0) = -inf: no path
            beta_out = torch.where((t_len - 1 == t)[:, None], end_init, beta_out)
            # dlogZ/dlogE[u, v] += exp(alpha[t, u] + logE[u, v] + beta[t + 1, v] - logZ),
            # split as exp(alpha[t, u] + peak[u] - logZ) * weight[u, v]. The first factor is
            # the posterior of the best edge out of u, <= 1 for valid samples, so no overflow;
            # with peak = -inf it is exactly 0.
            row_scale = torch.exp(alpha[:, t] + peak - log_z_safe[:, None])  # [B, S]
            grad_log_e.addcmul_(weight, row_scale[:, :, None])
            grad_emis[:, t] = torch.exp(alpha[:, t] + beta_out - log_z_safe[:, None])
            beta_next = beta_out + emis[:, t]

        upstream = grad_out.to(emis.dtype)
        grad_emis = grad_emis * upstream[:, None, None]
        grad_log_e = grad_log_e * upstream[:, None, None]
        # Exact zeros for padding, non-edges and path-less samples (also if upstream is inf).
        keep_emis = emis_mask & valid[:, None, None]
        keep_edge = edge_mask & valid[:, None, None]
        grad_emis = torch.where(keep_emis, grad_emis, 0.0)
        grad_log_e = torch.where(keep_edge, grad_log_e, 0.0)
        emis_dtype, trans_dtype = ctx.input_dtypes
        return grad_emis.to(emis_dtype), grad_log_e.to(trans_dtype), None, None


def dag_logprob_reference(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
) -> Tensor:
    """Log-likelihood of each target under its DAG, with closed-form gradients.

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths : Tensor
        As in :func:`exlm_chem.dag.dag_logprob`.

    Returns
    -------
    Tensor [B], float32 (float64 if an input is float64)
        ``log P(Y)``; ``-inf`` for samples without a valid path (their gradients are 0).

    Notes
    -----
    No shape validation happens here; :func:`exlm_chem.dag.dag_logprob` validates and
    dispatches. Accumulation is fp32 (fp64 for fp64 inputs); gradients come back in the
    inputs' dtypes. The backward is not itself differentiable.
    """
    out = _DagLogProb.apply(emissions, log_transitions, target_lengths, state_lengths)
    if _accumulation_dtype(emissions, log_transitions) == torch.float64:
        return out
    return out.float()
