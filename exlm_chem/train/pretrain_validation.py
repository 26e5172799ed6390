"""The validation pass of a pre-training run: the held-out slice scored with fixed masks.

Every validation of a run (and of a resumed or a twin run) masks the same molecules the
same way: the masks and SMILES views come from one generator seeded by ``(seed, 10**6)``,
drawn afresh at each pass. The losses are those of the training step, read on the host
(validation is rare, so it may wait for the device).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.train.pretrain_data import BatchMaker, to_device

__all__ = ["eager", "validate"]


@torch.no_grad()
def validate(trainer: Any) -> dict:
    """Loss and masked-token accuracy of ``trainer``'s model on its held-out slice.

    Parameters
    ----------
    trainer : Pretrainer
        The run, its data loaded and its model built; the model is left in train mode.

    Returns
    -------
    dict
        ``valid_loss`` (over the molecules with a valid path), ``valid_accuracy``,
        ``valid_invalid_paths``, ``valid_molecules``; with their losses on,
        ``valid_aux_loss``, ``valid_contrast_loss`` and ``valid_translate_loss`` (means
        over the molecules).
    """
    args, device = trainer.args, trainer.device
    trainer.model.eval()
    rng = np.random.default_rng([args.seed, 10**6])
    maker = BatchMaker(trainer.valid, trainer.special, args, trainer.config.k_states,
                       trainer.tokenizer, trainer.split_targets("valid"))
    batches = BatchStream(trainer.valid.lengths(), args.max_tokens, args.seed)
    losses, invalid, predicted, correct, n = 0.0, 0, 0, 0, 0
    aux = contrast = translate = 0.0
    for _, _, idx in batches.iterate():
        if n >= len(trainer.valid):
            break
        targets, canonical = maker.targets(idx), maker.canonical(idx)
        batch = maker(idx, rng)
        views = maker.views(idx, rng)
        with trainer.autocast, eager(args.compile):
            out = trainer.objective(to_device(batch, device),
                                    None if targets is None else targets.to(device),
                                    with_accuracy=True,
                                    views=None if views is None else to_device(views, device),
                                    canonical=None if canonical is None else canonical.to(
                                        device))
        if out.aux_loss is not None:
            aux += float(out.aux_loss) * out.n_samples
        if out.contrast_loss is not None:
            contrast += float(out.contrast_loss) * out.n_samples
        if out.translate_loss is not None:
            translate += float(out.translate_loss) * out.n_samples
        n_invalid = int(out.n_invalid)
        losses += float(out.loss) * (out.n_samples - n_invalid)
        invalid += n_invalid
        predicted += out.n_predicted
        correct += out.n_correct
        n += out.n_samples
    trainer.model.train()
    record = {} if trainer.descriptors is None else {"valid_aux_loss": aux / max(1, n)}
    if args.contrast_weight > 0:  # batch-size dependent: compare runs of one size
        record["valid_contrast_loss"] = contrast / max(1, n)
    if args.translate_weight > 0:
        record["valid_translate_loss"] = translate / max(1, n)
    return {
        **record,
        "valid_loss": losses / max(1, n - invalid),
        "valid_accuracy": correct / max(1, predicted),
        "valid_invalid_paths": invalid,
        "valid_molecules": n,
    }


def eager(compiled: bool) -> contextlib.AbstractContextManager:
    """No compilation for validation: an eval/no-grad graph would be compiled anew, which
    costs more than a few eager batches (the compiled training graph stays cached).

    Parameters
    ----------
    compiled : bool
        Whether the run compiles its encoder (``PretrainArgs.compile``); False: nothing
        to switch off.
    """
    if compiled and hasattr(torch.compiler, "set_stance"):
        return torch.compiler.set_stance("force_eager")
    return contextlib.nullcontext()
