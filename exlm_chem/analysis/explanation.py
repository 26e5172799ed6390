"""The case study (paper, Figures 7, 10 and 11) of a SMILES with ``[MASK]`` tokens, as numbers.

What is computed, for an input such as ``"CC(=O)[MASK]c1ccccc1[MASK]"``:

1. The input becomes ``[BOS] tokens [EOS]`` with the mask id where the text says
   ``[MASK]`` (the tokenizer itself never produces the mask id from text, so the string is
   split on the literal ``[MASK]`` first). BOS, every ``[MASK]`` and EOS are expanded to
   ``k = config.k_states`` copies exactly as in pre-training; these S copies are the DAG's
   states, in expanded-sequence order.
2. ``P_s``: each state's distribution over the vocabulary, ``softmax(lm_head(h_s))``; the
   top-k tokens and their probabilities label the figure's axes.
3. ``E = exp(log E)`` from the transition head: ``E[u, v]`` is the probability of moving
   from state u to state v. Only ``u < v`` are edges; each row except the last sums to 1
   over its successors (the last state has none; its row is all 0).
4. Visit probabilities. Without gold targets there is no emission term to condition on,
   so the path distribution is defined by the transitions alone: a path
   ``0 = s_0 < s_1 < ... < s_m = S - 1`` has weight ``prod_i E[s_{i-1}, s_i]``, and
   ``visit[v] = sum of the weights of the paths through v / sum of all weights``, from a
   forward-backward pass in log space (``alpha[v]`` sums the paths 0 -> v, ``beta[v]``
   the paths v -> S - 1). Because every non-final row of E sums to 1, the total weight
   (``log_partition``) is 1 up to rounding: this is the Markov chain started in state 0,
   and ``visit[v]`` the chance that it passes through v. ``visit[0] = visit[S-1] = 1``.
5. The Viterbi path: the max-product path from state 0 to state S - 1 under
   ``prod_i E[s_{i-1}, s_i] * prod_i max_x P_{s_i}(x)`` (every visited state, both ends
   included, contributes its most probable token's probability; the ends are on every
   path, so they do not change the argmax). ``viterbi_log_score`` is its natural log.
6. The fill-in: the argmax token of each interior state on the Viterbi path, in order.
   A token belongs to the ``[MASK]`` whose copy emitted it, so each ``[MASK]`` gets 0..k
   tokens. Interior BOS or EOS copies on the path (possible: the DAG lets any state emit)
   are listed in ``unattributed`` and left out of ``filled_smiles``; so are special
   tokens (``[CLS]``, ``[PAD]``, ...) emitted by a ``[MASK]`` copy.
7. The one-token-per-mask reading: the best path (same score) through exactly
   ``masks + 2`` states, whose t-th interior state fills the t-th ``[MASK]``, which is
   how pre-training aligns targets to states.

Steps 4, 5 and 7 are :mod:`exlm_chem.analysis.explanation_paths`; the figure is drawn by
:func:`exlm_chem.analysis.explanation_plot.plot_explanation`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.analysis.explanation_paths import (
    fixed_length_viterbi,
    transition_viterbi,
    visit_probabilities,
)

MASK_TEXT = "[MASK]"

__all__ = [
    "MASK_TEXT",
    "Explanation",
    "MaskedInput",
    "StateInfo",
    "explain",
    "explanation_from_dict",
    "parse_masked_smiles",
]


class MaskedInput(NamedTuple):
    """A SMILES with ``[MASK]`` placeholders, encoded."""

    ids: np.ndarray  # [N] int64: [BOS] tokens [EOS], the mask id at each placeholder
    pieces: list[str]  # the text between placeholders (len = number of masks + 1)
    tokens: list[str]  # [N] token strings, "[MASK]" at placeholders, BOS/EOS included


class StateInfo(NamedTuple):
    """One expanded state (a DAG node)."""

    index: int  # state number s (row/column of the transition matrix)
    kind: str  # "BOS", "MASK" or "EOS"
    mask_index: int | None  # 1-based number of the [MASK] it copies; None for BOS/EOS
    copy: int  # copy number 1..k
    expanded_position: int  # position in the expanded input sequence
    original_position: int  # position in [BOS] tokens [EOS] (before expansion)
    label: str  # short name: "BOS·1", "M2·3", "EOS·2"


class Explanation(NamedTuple):
    """Everything the case-study figure shows, as numbers.

    Attributes
    ----------
    smiles : str
        The input, ``[MASK]`` placeholders included.
    model : str
        Checkpoint directory.
    k : int
        Expanded states per BOS/[MASK]/EOS.
    tokens : list of str
        The unexpanded input tokens, BOS and EOS included.
    states : list of StateInfo
        The S states in order.
    top_tokens : list of list of str
        ``[S][top_k]`` most probable tokens of each state.
    top_probs : numpy.ndarray
        [S, top_k] their probabilities.
    transitions : numpy.ndarray
        [S, S] ``E`` (0 on non-edges).
    visit_probability : numpy.ndarray
        [S] probability that a path drawn from ``E`` visits each state.
    log_partition : float
        ``log`` of the total path weight (0 up to rounding; see the module docstring).
    viterbi_path : list of int
        States of the best path, from 0 to S - 1.
    viterbi_log_score : float
        Natural log of its score.
    fill_in : list of list of str
        Per ``[MASK]``, the tokens its copies emit on the Viterbi path (0..k each).
    unattributed : list of dict
        ``{"state", "label", "token"}`` for interior BOS/EOS copies on the path.
    filled_smiles : str
        The input with each ``[MASK]`` replaced by its fill-in (special tokens left out).
    filled_smiles_valid : bool or None
        Whether RDKit parses ``filled_smiles`` (None when RDKit is missing).
    one_per_mask_path : list of int
        The best path with exactly ``masks + 2`` states (:func:`fixed_length_viterbi`).
    one_per_mask_fill : list of str
        Its interior states' argmax tokens: the t-th fills the t-th ``[MASK]``, as in
        pre-training where each ``[MASK]`` hides one token.
    one_per_mask_smiles : str
        The input filled with ``one_per_mask_fill`` (special tokens kept as text).
    """

    smiles: str
    model: str
    k: int
    tokens: list[str]
    states: list[StateInfo]
    top_tokens: list[list[str]]
    top_probs: np.ndarray
    transitions: np.ndarray
    visit_probability: np.ndarray
    log_partition: float
    viterbi_path: list[int]
    viterbi_log_score: float
    fill_in: list[list[str]]
    unattributed: list[dict[str, Any]]
    filled_smiles: str
    filled_smiles_valid: bool | None
    one_per_mask_path: list[int]
    one_per_mask_fill: list[str]
    one_per_mask_smiles: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (what ``--json`` writes)."""
        data = self._asdict()  # field order is the JSON key order
        del data["top_tokens"], data["top_probs"]  # written per state
        for name in ("tokens", "viterbi_path", "unattributed", "one_per_mask_path",
                     "one_per_mask_fill"):
            data[name] = list(data[name])
        data.update(
            states=[{**s._asdict(), "top_tokens": list(tt), "top_probs": [float(p) for p in tp],
                     "visit_probability": float(vp)}
                    for s, tt, tp, vp in zip(self.states, self.top_tokens, self.top_probs,
                                             self.visit_probability, strict=True)],
            transitions=self.transitions.tolist(),
            visit_probability=self.visit_probability.tolist(),
            fill_in=[list(f) for f in self.fill_in])
        return data

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as indented JSON; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path


def parse_masked_smiles(smiles_with_masks: str, tokenizer: Any) -> MaskedInput:
    """Encode a SMILES holding literal ``[MASK]`` placeholders.

    Parameters
    ----------
    smiles_with_masks : str
        E.g. ``"CC(=O)[MASK]c1ccccc1[MASK]"``.
    tokenizer : SmilesTokenizer

    Returns
    -------
    MaskedInput

    Raises
    ------
    ValueError
        No ``[MASK]`` in the text, nothing but masks, or a token outside the vocabulary.
    """
    if not isinstance(smiles_with_masks, str):
        raise TypeError(f"expected a str, got {type(smiles_with_masks).__name__}")
    pieces = smiles_with_masks.split(MASK_TEXT)
    if len(pieces) < 2:
        raise ValueError(f"{smiles_with_masks!r} holds no {MASK_TEXT}: put {MASK_TEXT} where "
                         "the model should fill in tokens, e.g. 'CC(=O)[MASK]c1ccccc1'")
    ids: list[int] = [tokenizer.bos_id]
    tokens: list[str] = [tokenizer.convert_ids_to_tokens(tokenizer.bos_id)]
    for i, piece in enumerate(pieces):
        if i > 0:
            ids.append(tokenizer.mask_id)
            tokens.append(MASK_TEXT)
        piece_tokens = tokenizer.tokenize(piece)
        piece_ids = tokenizer.convert_tokens_to_ids(piece_tokens)
        # out-of-vocabulary tokens map to [UNK], a special id like any other special text
        unknown = [t for t, i in zip(piece_tokens, piece_ids, strict=True)
                   if i in tokenizer.special_ids]
        if unknown:
            raise ValueError(f"{smiles_with_masks!r}: token(s) {', '.join(map(repr, unknown))} "
                             f"are not in the model's vocabulary (only {MASK_TEXT} may appear "
                             "as a special token)")
        ids.extend(piece_ids)
        tokens.extend(piece_tokens)
    if len(ids) == len(pieces):  # BOS + masks only: no context at all
        raise ValueError(f"{smiles_with_masks!r} has no SMILES tokens besides {MASK_TEXT}")
    ids.append(tokenizer.eos_id)
    tokens.append(tokenizer.convert_ids_to_tokens(tokenizer.eos_id))
    return MaskedInput(np.asarray(ids, dtype=np.int64), pieces, tokens)


def _state_infos(masked: MaskedInput, pos_original: np.ndarray, pos_copy: np.ndarray,
                 state_index: np.ndarray, bos_id: int, eos_id: int) -> list[StateInfo]:
    mask_number = {int(p): i + 1 for i, p in enumerate(
        np.flatnonzero([t == MASK_TEXT for t in masked.tokens]))}
    infos = []
    for s, x in enumerate(state_index.tolist()):
        orig = int(pos_original[x])
        copy = int(pos_copy[x])
        token_id = int(masked.ids[orig])
        if token_id == bos_id and orig == 0:
            kind, number, label = "BOS", None, f"BOS·{copy}"
        elif token_id == eos_id and orig == len(masked.ids) - 1:
            kind, number, label = "EOS", None, f"EOS·{copy}"
        else:
            number = mask_number[orig]
            kind, label = "MASK", f"M{number}·{copy}"
        infos.append(StateInfo(s, kind, number, copy, int(x), orig, label))
    return infos


def _rdkit_valid(smiles: str) -> bool | None:
    try:
        from rdkit import Chem, rdBase
    except ImportError:  # pragma: no cover - rdkit is a dependency
        return None
    with rdBase.BlockLogs():  # restores the user's log settings, whatever they were
        return bool(smiles) and Chem.MolFromSmiles(smiles) is not None


def explain(
    smiles_with_masks: str,
    model: str | os.PathLike[str] = "default",
    top_k: int = 3,
    device: str = "cpu",
) -> Explanation:
    """Transition matrix, top tokens, visit probabilities and best path for one input.

    Parameters
    ----------
    smiles_with_masks : str
        A SMILES with one or more literal ``[MASK]`` placeholders.
    model : str or PathLike
        ExLM checkpoint directory, or ``"default"``.
    top_k : int
        Tokens listed per state.
    device : str
        Torch device.

    Returns
    -------
    Explanation
        See the module docstring for exactly what each number is.

    Raises
    ------
    ValueError
        Input without ``[MASK]`` or with unknown tokens; an MLM checkpoint (it has no
        transition matrix); ``top_k`` < 1.
    """
    import torch

    from exlm_chem.analysis import load_model
    from exlm_chem.data.collate import SpecialIds, expand_states

    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    loaded = load_model(model, device=device)
    net, config, tokenizer = loaded.model, loaded.config, loaded.tokenizer
    if config.objective != "exlm" or net.transition_head is None:
        raise ValueError(f"{loaded.path} is an '{config.objective}' checkpoint: it has no "
                         "expanded states or transition matrix to explain; use an ExLM one")
    masked = parse_masked_smiles(smiles_with_masks, tokenizer)
    special = SpecialIds(config.bos_id, config.pad_id, config.eos_id, config.mask_id)
    mask_positions = np.flatnonzero(masked.ids == config.mask_id)
    expansion = expand_states(masked.ids, np.array([masked.ids.size]), config.k_states, special)
    expanded, pos_original, pos_copy, _, state_index, _ = (row[0].numpy() for row in expansion)

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=torch.long, device=device)[None]  # [1, ...]

    with torch.inference_mode():
        hidden = net(tensor(expanded), tensor(pos_original), tensor(pos_copy),
                     torch.ones(1, len(expanded), dtype=torch.bool, device=device))
        states_hidden = hidden[0, tensor(state_index)[0]]  # [S, d]
        probs = torch.softmax(net.lm_head(states_hidden).float(), dim=-1)  # [S, V]
        log_e = net.transition_head(hidden, tensor(state_index),
                                    torch.tensor([len(state_index)], device=device))[0]
    probs_np = probs.double().cpu().numpy()
    log_e_np = log_e.double().cpu().numpy()  # [S, S]
    k_shown = min(top_k, probs_np.shape[1])
    order = np.argsort(-probs_np, axis=1, kind="stable")[:, :k_shown]  # [S, top_k]
    top_probs = np.take_along_axis(probs_np, order, axis=1)
    top_tokens = [tokenizer.convert_ids_to_tokens(row.tolist()) for row in order]

    transitions = np.where(np.isfinite(log_e_np), np.exp(log_e_np), 0.0)
    visit, log_z = visit_probabilities(log_e_np)
    with np.errstate(divide="ignore"):
        log_node = np.log(probs_np.max(axis=1))
    path, log_score = transition_viterbi(log_e_np, log_node)

    states = _state_infos(masked, pos_original, pos_copy, state_index,
                          config.bos_id, config.eos_id)
    n_masks = len(mask_positions)
    fill_in: list[list[str]] = [[] for _ in range(n_masks)]
    fill_text = [""] * n_masks  # fill_in without special tokens
    unattributed: list[dict[str, Any]] = []
    for s in path[1:-1]:
        info, token = states[s], top_tokens[s][0]
        if info.kind == "MASK":
            fill_in[info.mask_index - 1].append(token)
            if int(order[s, 0]) not in tokenizer.special_ids:
                fill_text[info.mask_index - 1] += token
        else:
            unattributed.append({"state": s, "label": info.label, "token": token})
    fixed_path, _ = fixed_length_viterbi(log_e_np, log_node, n_masks + 2)
    fixed_fill = [top_tokens[s][0] for s in fixed_path[1:-1]]
    filled = masked.pieces[0] + "".join(
        t + piece for t, piece in zip(fill_text, masked.pieces[1:], strict=True))
    return Explanation(
        smiles=smiles_with_masks, model=str(loaded.path), k=config.k_states,
        tokens=masked.tokens, states=states, top_tokens=top_tokens, top_probs=top_probs,
        transitions=transitions, visit_probability=visit, log_partition=log_z,
        viterbi_path=path, viterbi_log_score=log_score, fill_in=fill_in,
        unattributed=unattributed, filled_smiles=filled,
        filled_smiles_valid=_rdkit_valid(filled),
        one_per_mask_path=fixed_path,
        one_per_mask_fill=fixed_fill,
        one_per_mask_smiles=masked.pieces[0] + "".join(
            t + piece for t, piece in zip(fixed_fill, masked.pieces[1:], strict=True)),
    )


def explanation_from_dict(data: dict[str, Any]) -> Explanation:
    """Rebuild an :class:`Explanation` from :meth:`Explanation.to_dict` output."""
    states = data["states"]
    return Explanation(**{
        **{f: data[f] for f in Explanation._fields if f in data},
        "states": [StateInfo(**{f: s[f] for f in StateInfo._fields}) for s in states],
        "top_tokens": [s["top_tokens"] for s in states],
        "top_probs": np.asarray([s["top_probs"] for s in states], dtype=float),
        "transitions": np.asarray(data["transitions"], dtype=float),
        "visit_probability": np.asarray(data["visit_probability"], dtype=float),
    })
