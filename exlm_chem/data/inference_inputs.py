"""The encoder input of fine-tuning, probing and embedding, decided by the checkpoint.

Nothing is masked there, so the input is ``[BOS] SMILES [EOS]``. How BOS and EOS look
must match what the checkpoint saw in pre-training:

* ``objective: exlm``: BOS and EOS expanded to ``k = config.k_states`` copies with copy
  indices 1..k (:func:`~exlm_chem.data.collate.expand_states`).
* ``objective: mlm`` (the twin): nothing expanded, one BOS and one EOS, copy index 0
  everywhere, exactly the twin's pre-training input (:func:`~exlm_chem.data.collate.collate_mlm`),
  whatever ``k_states`` its config carries.

:func:`inference_expansion` is the one place that decision is made; every path that feeds
an encoder without masking (fine-tuning, estimators, probe, embed, GLUE) goes through
:func:`inference_inputs` with its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from exlm_chem.data.collate import SpecialIds, expand_states

__all__ = ["UNEXPANDED", "inference_expansion", "inference_inputs"]

#: ``k`` meaning "not expanded": one BOS/EOS, copy index 0 (the MLM twin's input).
UNEXPANDED = 1


def inference_expansion(config: Any) -> int:
    """Copies of BOS and EOS in an unmasked input for this checkpoint's ``config``.

    Parameters
    ----------
    config : ExLMConfig or mapping
        Needs ``objective`` and ``k_states`` (attributes or keys, e.g. a config.json dict).

    Returns
    -------
    int
        ``config.k_states`` for ``objective == "exlm"``; :data:`UNEXPANDED` (1) for
        ``"mlm"``.

    Examples
    --------
    >>> inference_expansion({"objective": "mlm", "k_states": 2})
    1
    >>> inference_expansion({"objective": "exlm", "k_states": 2})
    2
    """
    get = config.get if isinstance(config, dict) else lambda name: getattr(config, name)
    objective, k = get("objective"), int(get("k_states"))
    if objective == "mlm":
        return UNEXPANDED
    if objective != "exlm":
        raise ValueError(f"unknown objective {objective!r}; expected 'exlm' or 'mlm'")
    if k == UNEXPANDED:
        # an ExLM with one copy saw copy index 1 on BOS/EOS; k=1 here would mean index 0
        raise ValueError(
            "an 'exlm' checkpoint with k_states=1 has no unambiguous "
            "unexpanded input; pre-train ExLM with k_states >= 2"
        )
    return k


def inference_inputs(
    ids_list: Sequence[np.ndarray], k: int, special: SpecialIds
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, pos_original, pos_copy, padding_mask)``, each [B, X], pad-filled.

    ``k`` comes from :func:`inference_expansion`. With ``k == 1`` nothing is expanded and
    ``pos_copy`` is all zeros; otherwise BOS and EOS get ``k`` copies (indices 1..k). The
    first BOS copy sits at position 0 of every row either way.
    """
    rows = [np.asarray(ids, dtype=np.int64) for ids in ids_list]
    input_ids, pos_original, pos_copy, padding_mask, _, _ = expand_states(
        np.concatenate(rows), np.array([row.size for row in rows]), k, special)
    if k == UNEXPANDED:
        pos_copy = torch.zeros_like(pos_copy)  # the twin never saw a copy index
    return input_ids, pos_original, pos_copy, padding_mask
