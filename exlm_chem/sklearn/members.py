"""The estimators' networks: members fine-tuned from one loaded checkpoint, run over views,
and the pre-trained encoder kept frozen beside them (the ensemble they join:
:mod:`exlm_chem.sklearn.ensemble`).

Members differ in their seed (head initialisation, dropout, batch order) and, with
``bootstrap``, in their training rows (:mod:`exlm_chem.uncertainty.ensemble` draws both).
A prediction runs every member over every SMILES view (the canonical SMILES, and with
``tta`` randomized ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from exlm_chem.data.feature_spec import FeatureSpec
from exlm_chem.device import resolve_device
from exlm_chem.model.molecule_model import PREDICT, MoleculeModel
from exlm_chem.presets import FinetuneSettings
from exlm_chem.uncertainty.ensemble import bootstrap_rows, member_seeds

if TYPE_CHECKING:  # fine-tuning is imported when a fit runs, not with the estimators
    from exlm_chem.train.finetune import FinetuneResult, LabelledSmiles

__all__ = ["fit_members", "frozen_encoder", "member_outputs"]


def fit_members(est: Any, task: str, backbone: Any, settings: FinetuneSettings,
                train: LabelledSmiles, valid: LabelledSmiles | None, spec: FeatureSpec | None,
                seed: int) -> list[tuple[MoleculeModel, FinetuneResult]]:
    """Each ensemble member fine-tuned from one loaded checkpoint, with its result.

    Parameters
    ----------
    est : ExLMMoleculeClassifier or ExLMMoleculeRegressor
        Read for its parameters (``n_models``, ``bootstrap``, ``device``, ``pooling``,
        ``max_length``, ``train_layers``, ``patience``, ``progress``, ``max_minutes``,
        ``augment``, ``head_first``); not changed.
    task : {"classification", "regression"}
    backbone : Backbone
        The loaded checkpoint (:func:`~exlm_chem.model.pretrained.load_backbone`).
    settings : FinetuneSettings
    train, valid : LabelledSmiles
        The training molecules and the held-out ones that choose the best epoch (None:
        none held out).
    spec : FeatureSpec or None
        The scaled features the heads read beside the pooled state.
    seed : int
        The fit's seed; the first member's is the seed itself.

    Returns
    -------
    list of (MoleculeModel, FinetuneResult)
        One per member, in the order of :func:`~exlm_chem.uncertainty.ensemble.member_seeds`.
    """
    import torch

    from exlm_chem.model.molecule_model import build_model
    from exlm_chem.train.finetune import finetune, freeze_lower_layers

    device = resolve_device(est.device)
    cuda = [device.index or 0] if device.type == "cuda" else []
    patience = None if est.patience is None else int(est.patience)
    members = []
    for member_seed in member_seeds(seed, int(est.n_models)):
        member_train = train
        if est.bootstrap:
            member_train = train.rows(bootstrap_rows(len(train.smiles), member_seed))
        with torch.random.fork_rng(devices=cuda):  # reproducible, global RNG untouched
            torch.manual_seed(member_seed)
            model = build_model(backbone.config, backbone.tokenizer, train.labels.shape[1],
                                backbone.encoder_state, settings.pooler_dropout,
                                est.pooling, int(est.max_length),
                                0 if spec is None else spec.n_features, spec).to(device)
            if est.train_layers is not None:
                freeze_lower_layers(model.encoder, int(est.train_layers))
            result = finetune(model, member_train, settings, task, valid,
                              bool(est.progress), est.max_minutes, member_seed,
                              int(est.augment), patience=patience,
                              head_first=bool(est.head_first))
        members.append((model, result))
    return members


def frozen_encoder(backbone: Any, seed: int, pooling: str, max_length: int) -> MoleculeModel:
    """The encoder of ``backbone`` as it is before fine-tuning, pooling as the estimator
    does, no head (on the CPU): its states train the head first (``head_first``) and feed
    the tree head. ``seed`` seeds a random encoder (``pretrained=None``)."""
    import torch

    from exlm_chem.model.molecule_model import build_model

    with torch.random.fork_rng(devices=[]):  # the global RNG stays untouched
        torch.manual_seed(seed)
        return build_model(backbone.config, backbone.tokenizer, 0, backbone.encoder_state,
                           pooling=pooling, max_length=max_length)


def member_outputs(models: Sequence[MoleculeModel], views: Sequence[Sequence[str]],
                   batch_size: int, n_tasks: int, features: np.ndarray | None) -> np.ndarray:
    """Raw outputs [members, views, n, T] float64 of every model on every view.

    ``views`` are the same n molecules written differently, so their ``features`` [n, F]
    (scaled; None without) serve every view. One view at a time: a prediction holds the
    memory of one view's run, and each view is tokenised once for all members.
    """
    out = np.empty((len(models), len(views), len(views[0]), n_tasks))
    for v, view in enumerate(views):
        rows = models[0].token_rows(view)
        for m, model in enumerate(models):
            out[m, v] = model.run(rows, PREDICT, batch_size, features)
    return out
