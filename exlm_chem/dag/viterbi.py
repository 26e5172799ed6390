"""Best (Viterbi) alignment of targets to DAG states.

Same DAG and path set as :mod:`exlm_chem.dag.reference`, with max in place of log-sum-exp
and a backtrace. The result says which target each state emits on the single most likely
path, which is what the case-study heatmaps visualise.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from exlm_chem.dag.reference import masked_inputs

__all__ = ["BestAlignment", "dag_best_alignment"]


class BestAlignment(NamedTuple):
    """Most likely path per sample.

    Attributes
    ----------
    logprob : Tensor [B], float32 (float64 for float64 inputs)
        Score of the best path (sum of its emissions and edges); ``-inf`` if none exists.
    state_to_target : Tensor [B, S], int64
        For each state, the target index it emits on the best path; -1 if not visited
        (also for padding states and for samples without a path).
    path : list of Tensor
        Per sample, the visited states in order (int64, length ``T_b``, starts at 0 and
        ends at ``L_b - 1``); empty for samples without a path.
    """

    logprob: Tensor
    state_to_target: Tensor
    path: list[Tensor]


@torch.no_grad()
def dag_best_alignment(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
) -> BestAlignment:
    """Viterbi path through the DAG for each sample.

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths : Tensor
        As in :func:`exlm_chem.dag.dag_logprob`.

    Returns
    -------
    BestAlignment
    """
    emis, log_e, _, _ = masked_inputs(emissions, log_transitions, target_lengths, state_lengths)
    t_len = target_lengths.to(device=emis.device, dtype=torch.long)
    s_len = state_lengths.to(device=emis.device, dtype=torch.long)
    batch, t_max, s_max = emis.shape
    rows = torch.arange(batch, device=emis.device)

    delta = emis.new_full((batch, s_max), float("-inf"))
    delta[:, 0] = emis[:, 0, 0]
    # back[t, b, v]: predecessor of v at step t on the best partial path (unused at t = 0).
    back = torch.zeros((t_max, batch, s_max), dtype=torch.long, device=emis.device)
    ends = delta.new_full((batch,), float("-inf"))
    ends = torch.where(t_len == 1, delta[rows, s_len - 1], ends)
    for t in range(1, t_max):
        best, back[t] = (delta[:, :, None] + log_e).max(dim=1)  # reduce over u: [B, S]
        delta = best + emis[:, t]
        ends = torch.where(t_len == t + 1, delta[rows, s_len - 1], ends)

    valid = torch.isfinite(ends)
    # Backtrace for all samples at once; samples finish at different t, so each one only
    # steps back while t < T_b.
    current = s_len - 1  # [B]
    steps = torch.full((batch, t_max), -1, dtype=torch.long, device=emis.device)
    for t in range(t_max - 1, -1, -1):
        active = t < t_len
        steps[:, t] = torch.where(active, current, -1)
        if t > 0:
            previous = back[t, rows, current]
            current = torch.where(active, previous, current)

    state_to_target = torch.full((batch, s_max), -1, dtype=torch.long, device=emis.device)
    path: list[Tensor] = []
    for b in range(batch):
        if not bool(valid[b]):
            path.append(torch.empty(0, dtype=torch.long, device=emis.device))
            continue
        visited = steps[b, : int(t_len[b])]
        path.append(visited)
        state_to_target[b, visited] = torch.arange(visited.numel(), device=emis.device)
    return BestAlignment(logprob=ends, state_to_target=state_to_target, path=path)
