"""Fine-tuning inputs built once: every molecule tokenised and expanded before training.

Nothing is masked in fine-tuning, so a molecule's encoder input never changes between
epochs. :func:`encode_rows` builds it once for a whole set as padded [N, X] tensors that
can live on the training device; a batch is then a row gather plus a cut to the batch's
widest row, with no tokenising, no host-to-device copy and no host-device synchronisation
per step (the widths come from ``lengths``, kept on the host).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.inference_inputs import inference_inputs

__all__ = ["EncodedSet", "encode_rows"]


class EncodedSet(NamedTuple):
    """Encoder inputs of N molecules, padded to the widest; shapes [N, X]."""

    input_ids: torch.Tensor  # [N, X] expanded token ids, pad-filled
    pos_original: torch.Tensor  # [N, X]
    pos_copy: torch.Tensor  # [N, X]
    padding_mask: torch.Tensor  # [N, X] bool, True on real tokens
    lengths: np.ndarray  # [N] int64 real tokens per row, on the host (batch widths)
    # [N, F] float32 per-molecule features fed beside the pooled state (descriptors); None
    # when the network takes none
    features: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> EncodedSet:
        """The tensors on ``device`` (``lengths`` stay on the host)."""
        moved = {name: getattr(self, name).to(device)
                 for name in ("input_ids", "pos_original", "pos_copy", "padding_mask")}
        if self.features is not None:
            moved["features"] = self.features.to(device)
        return self._replace(**moved)

    def batch(
        self, rows: torch.Tensor, idx: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(input_ids, pos_original, pos_copy, padding_mask, features)`` of some rows:
        [B, W] each, features [B, F] or None.

        ``rows`` indexes on the tensors' device, ``idx`` holds the same indices on the
        host; W is the widest of those rows, read from the host-side ``lengths``.
        """
        width = int(self.lengths[idx].max())
        features = None if self.features is None else self.features[rows]
        return (*(t[rows, :width] for t in self[:4]), features)  # type: ignore[return-value]


def encode_rows(rows: Sequence[np.ndarray], k: int, special: SpecialIds,
                features: np.ndarray | None = None) -> EncodedSet:
    """Token id rows ``[BOS, ..., EOS]`` -> an :class:`EncodedSet` expanded to ``k``;
    ``features`` [N, F] (already scaled) travel with the rows."""
    if features is not None:
        features = torch.as_tensor(np.asarray(features, dtype=np.float32))
        if features.ndim != 2 or features.shape[0] != len(rows):
            raise ValueError(f"features must be [{len(rows)}, F], got "
                             f"{tuple(features.shape)}")
    if not len(rows):
        empty = torch.zeros((0, 0), dtype=torch.long)
        return EncodedSet(empty, empty, empty, empty.bool(), np.zeros(0, dtype=np.int64),
                          features)
    input_ids, pos_original, pos_copy, padding_mask = inference_inputs(rows, k, special)
    lengths = padding_mask.sum(1).numpy().astype(np.int64)  # [N]
    return EncodedSet(input_ids, pos_original, pos_copy, padding_mask, lengths, features)
