"""Paths through the case study's DAG weighted by its transitions alone (no targets).

Steps 4, 5 and 7 of :mod:`exlm_chem.analysis.explanation`: the visit probability of each
state (a forward-backward pass over the transitions) and the best paths, of any length or
of a fixed one, from the DAG Viterbi of :func:`exlm_chem.dag.dag_best_alignment`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fixed_length_viterbi", "transition_viterbi", "visit_probabilities"]


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x - peak), axis=axis)) + np.squeeze(peak, axis=axis)


def visit_probabilities(log_e: np.ndarray) -> tuple[np.ndarray, float]:
    """Probability that a path 0 -> S-1 weighted by ``prod E`` visits each state.

    Parameters
    ----------
    log_e : numpy.ndarray
        [S, S] log transition matrix; entries with ``v <= u`` are ignored.

    Returns
    -------
    visit : numpy.ndarray
        [S] in [0, 1]; ``visit[0] = visit[S-1] = 1`` when a path exists.
    log_partition : float
        Log of the total weight of all paths (0 when every non-final row sums to 1).
    """
    n = log_e.shape[0]
    log_e = np.where(np.triu(np.ones((n, n), dtype=bool), 1), log_e.astype(np.float64), -np.inf)
    alpha = np.full(n, -np.inf)
    beta = np.full(n, -np.inf)
    alpha[0] = 0.0
    beta[n - 1] = 0.0
    for v in range(1, n):
        alpha[v] = _logsumexp(alpha[:v] + log_e[:v, v], axis=0)
    for u in range(n - 2, -1, -1):
        beta[u] = _logsumexp(log_e[u, u + 1 :] + beta[u + 1 :], axis=0)
    log_z = float(alpha[n - 1])
    if not np.isfinite(log_z):
        raise ValueError("no path from the first to the last state has positive weight")
    visit = np.exp(alpha + beta - log_z)
    return np.clip(visit, 0.0, 1.0), log_z


def _best_paths(log_e: np.ndarray, log_node: np.ndarray,
                n_visits: list[int]) -> tuple[list[list[int]], np.ndarray]:
    """Best path 0 -> S-1 visiting exactly ``n`` states, for each ``n`` of ``n_visits``.

    The DAG Viterbi of :func:`exlm_chem.dag.dag_best_alignment` with the emission of every
    target at state s set to ``log_node[s]``: a path of ``n`` states is an alignment of
    ``n`` targets. Returns the paths (empty where none exists) and their [len(n_visits)]
    log scores (``-inf`` where none exists).
    """
    import torch

    from exlm_chem.dag import dag_best_alignment

    n, batch = log_e.shape[0], len(n_visits)
    node = torch.as_tensor(np.asarray(log_node, dtype=np.float64))
    best = dag_best_alignment(
        node.expand(batch, max(n_visits), n),
        torch.as_tensor(log_e.astype(np.float64)).expand(batch, n, n),
        torch.tensor(n_visits), torch.full((batch,), n))
    return [p.tolist() for p in best.path], best.logprob.numpy()


def transition_viterbi(log_e: np.ndarray, log_node: np.ndarray) -> tuple[list[int], float]:
    """Max-product path from state 0 to state S-1.

    Score of a path ``s_0 < ... < s_m``: ``sum_i log_e[s_{i-1}, s_i] + sum_i log_node[s_i]``
    (both ends included): the best of the fixed-length paths of every length.

    Parameters
    ----------
    log_e : numpy.ndarray
        [S, S] log transitions (``v <= u`` ignored).
    log_node : numpy.ndarray
        [S] log weight of visiting each state.

    Returns
    -------
    path : list of int
    log_score : float
    """
    n = log_e.shape[0]
    paths, scores = _best_paths(log_e, log_node, list(range(min(n, 2), n + 1)))
    best = int(np.argmax(scores))
    if not np.isfinite(scores[best]):
        raise ValueError("no path from the first to the last state has positive weight")
    return paths[best], float(scores[best])


def fixed_length_viterbi(
    log_e: np.ndarray, log_node: np.ndarray, n_visits: int
) -> tuple[list[int], float]:
    """Max-product path from state 0 to state S-1 that visits exactly ``n_visits`` states.

    Same score as :func:`transition_viterbi`; with ``n_visits = masks + 2`` this is the
    path shape of pre-training, where every ``[MASK]`` hides exactly one token and the
    t-th interior state of the path emits the t-th masked token.

    Returns
    -------
    path : list of int
        ``n_visits`` states.
    log_score : float
    """
    n = log_e.shape[0]
    if not 2 <= n_visits <= n:
        raise ValueError(f"a path from state 0 to state {n - 1} visits 2..{n} states, "
                         f"not {n_visits}")
    paths, scores = _best_paths(log_e, log_node, [n_visits])
    if not np.isfinite(scores[0]):
        raise ValueError("no path of the requested length has positive weight")
    return paths[0], float(scores[0])
