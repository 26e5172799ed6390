"""chemprop v2 (D-MPNN) trained from scratch on our split: the baseline users already run.

The model is what ``chemprop train`` builds with its defaults (bond message passing,
hidden 300, depth 3, no dropout, "norm" aggregation, one 300-wide FFN layer, Noam-like
schedule 1e-4 -> 1e-3 -> 1e-4 with 2 warm-up epochs, batch 64, 50 epochs), built through
chemprop's Python API so that it sees exactly our train/valid/test indices and our seed,
never its own splitter. As in the CLI, the epoch with the lowest validation loss scores
the test set, all tasks share one model and NaN labels are masked out by chemprop itself;
regression targets are standardised on the training rows and predictions unscaled.

With ``features="rdkit2d"`` every molecule also gets chemprop's RDKit descriptor
featurizer as extra descriptors (``x_d``) beside the learned fingerprint, as
``chemprop train --molecule-featurizers`` does (:mod:`exlm_chem.benchmark.chemprop_features`:
which featurizer, computed once per task); scaled by a StandardScaler fitted on the
training rows (the CLI's default ``X_d_transform``).

A split without a valid part (``--split cluster``, the cross-source pairs: the estimators
hold out their own share) leaves chemprop to hold out its own too, as its CLI does on one
data file: a random share of the train part, seeded by the cell's seed, in the CLI's
default ratio of train to validation (0.8 : 0.1, :data:`OWN_VALID_SHARE`); the CLI's test
share is not taken, the suite gives the test part.

``Budget.max_epochs`` caps the 50 epochs (the schedule is fitted to the cap, as the CLI's
``--epochs`` would); ``Budget.max_minutes`` stops training through Lightning's
``max_time``. Records carry ``chemprop_version`` in their settings.

Resuming: with ``state_dir`` a cell writes its whole training state after every epoch to
one file there (:mod:`exlm_chem.benchmark.chemprop_state`: where, what it must match,
when it is written). A cell that finds its file continues after the saved epoch, in
another process or on another machine, and ends as an uninterrupted run would: chemprop's
seeded sampler shuffles its index array in place with one generator, so a fresh sampler
would replay epoch 1's order; its generator and array travel in the file instead, as do
the kept epoch's weights and loss (the callbacks here). The file goes once the cell is
scored.
"""

from __future__ import annotations

import datetime
import logging
import math
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from exlm_chem.benchmark.chemprop_features import (
    descriptor_featurizer,
    require_chemprop,
    task_descriptors,
)
from exlm_chem.benchmark.chemprop_state import SaveState, cell_state
from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.tasks import TaskData

if TYPE_CHECKING:
    import torch

__all__ = ["ChempropSettings", "chemprop_method"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChempropSettings:
    # chemprop 2.x `chemprop train` defaults (chemprop/cli/train.py, cli/common.py)
    message_hidden_dim: int = 300
    depth: int = 3
    dropout: float = 0.0
    aggregation_norm: float = 100.0  # "norm" aggregation: sum / 100
    ffn_hidden_dim: int = 300
    ffn_num_layers: int = 1
    batch_size: int = 64
    epochs: int = 50  # before Budget.max_epochs; the lowest validation loss epoch is kept
    warmup_epochs: int = 2
    init_lr: float = 1e-4
    max_lr: float = 1e-3
    final_lr: float = 1e-4


def _dataset(smiles: list[str], labels: np.ndarray, rows: np.ndarray,
             x_d: np.ndarray | None = None):
    from chemprop import data

    points = [data.MoleculeDatapoint.from_smi(smiles[i], labels[i],
                                              x_d=None if x_d is None else x_d[i])
              for i in rows]
    dataset = data.MoleculeDataset(points)
    dataset.cache = True  # featurize once, as `chemprop train` does unless --no-cache
    return dataset


def _build(n_tasks: int, regression: bool, settings: ChempropSettings, output_transform,
           n_descriptors: int = 0, descriptor_transform=None):
    from chemprop import models, nn

    message = nn.BondMessagePassing(d_h=settings.message_hidden_dim, depth=settings.depth,
                                    dropout=settings.dropout)
    aggregation = nn.NormAggregation(norm=settings.aggregation_norm)
    head = nn.RegressionFFN if regression else nn.BinaryClassificationFFN
    kwargs = {"output_transform": output_transform} if regression else {}
    predictor = head(n_tasks=n_tasks, input_dim=message.output_dim + n_descriptors,
                     hidden_dim=settings.ffn_hidden_dim, n_layers=settings.ffn_num_layers,
                     dropout=settings.dropout, **kwargs)
    return models.MPNN(message, aggregation, predictor, batch_norm=False,
                       warmup_epochs=settings.warmup_epochs, init_lr=settings.init_lr,
                       max_lr=settings.max_lr, final_lr=settings.final_lr,
                       X_d_transform=descriptor_transform)


# _KeepBest and _RandomState keep their names: Lightning files a callback's state under its
# qualified class name (Callback.state_key), so a rename would orphan the state in the
# files of cells killed before it.
class _KeepBest:
    """Lightning callback: a copy of the weights of the lowest ``val_loss`` epoch, in memory
    (the CLI's ModelCheckpoint on val_loss, without writing checkpoints); its state rides
    in a resumable cell's checkpoint."""

    def __new__(cls):
        import lightning.pytorch as pl

        class KeepBest(pl.Callback):
            def __init__(self) -> None:
                self.best_loss, self.best_epoch, self.state = math.inf, 0, None

            def on_validation_epoch_end(self, trainer, module) -> None:
                if trainer.sanity_checking:
                    return
                loss = trainer.callback_metrics.get("val_loss")
                value = float(loss) if loss is not None else math.nan
                if math.isfinite(value) and value < self.best_loss:
                    self.best_loss, self.best_epoch = value, trainer.current_epoch + 1
                    self.state = {k: v.detach().clone() for k, v in module.state_dict().items()}

            def state_dict(self) -> dict:
                return {"best_loss": self.best_loss, "best_epoch": self.best_epoch,
                        "state": self.state}

            def load_state_dict(self, state_dict: dict) -> None:
                self.best_loss = float(state_dict["best_loss"])
                self.best_epoch = int(state_dict["best_epoch"])
                self.state = state_dict["state"]

        return KeepBest()


class _RandomState:
    """Lightning callback that carries the train sampler's and torch's random state through
    a checkpoint.

    chemprop's ``SeededSampler`` shuffles one index array in place with one generator, each
    epoch continuing from the last; rebuilt from its seed in a new process it would replay
    epoch 1's order. Saving the generator and the array (and torch's generator, for
    dropout) makes a resumed epoch draw what the uninterrupted run drew, without touching
    how that run draws.
    """

    def __new__(cls, sampler):
        import lightning.pytorch as pl

        class RandomState(pl.Callback):
            def __init__(self, sampler) -> None:
                self.sampler = sampler

            def state_dict(self) -> dict:
                import torch

                return {"sampler_rng": self.sampler.rg.bit_generator.state,
                        "sampler_idxs": torch.from_numpy(self.sampler.idxs.copy()),
                        "torch_rng": torch.get_rng_state()}

            def load_state_dict(self, state_dict: dict) -> None:
                import torch

                self.sampler.rg.bit_generator.state = state_dict["sampler_rng"]
                self.sampler.idxs = state_dict["sampler_idxs"].numpy().copy()
                torch.set_rng_state(state_dict["torch_rng"])

        return RandomState(sampler)


#: the share of the train part held out for the epoch choice where a split has no valid
#: part: ``chemprop train``'s default split sizes (0.8, 0.1, 0.1), train to validation
OWN_VALID_SHARE = 0.1 / 0.9


def own_valid(data: TaskData, seed: int) -> TaskData:
    """``data`` with :data:`OWN_VALID_SHARE` of its train rows, drawn at random with
    ``seed``, as its valid part (chemprop's CLI splits one data file at random)."""
    order = np.random.default_rng(seed).permutation(data.train)
    n_valid = max(1, round(OWN_VALID_SHARE * len(order)))
    return data._replace(train=np.sort(order[n_valid:]), valid=np.sort(order[:n_valid]))


def _predict(model, loader) -> torch.Tensor:
    import torch

    model.eval()
    outputs = []
    with torch.no_grad():
        for batch in loader:
            bmg, v_d, x_d, *_ = batch
            outputs.append(model(bmg, v_d, x_d))  # [B, T], probabilities or unscaled values
    return torch.cat(outputs)


def chemprop_method(data: TaskData, seed: int, budget: Budget, progress: bool = False,
                    settings: ChempropSettings | None = None,
                    features: str | None = None,
                    state_dir: str | os.PathLike[str] | None = None,
                    feature_cache: str | os.PathLike[str] | None = None) -> MethodOutput:
    """Train chemprop on ``data.train``, keep the best ``data.valid`` epoch, score ``data.test``.

    Parameters
    ----------
    data : TaskData
        Labels [N, T] with NaN for missing entries; ``data.task_type`` picks the head
        (binary classification: sigmoid probabilities; regression: unscaled values).
    seed : int
        Seeds initial weights (torch) and batch order (chemprop's seeded sampler).
    budget : Budget
        ``max_epochs`` caps ``settings.epochs``; ``max_minutes`` caps training wall time.
    progress : bool
        Show Lightning's progress bar.
    settings : ChempropSettings, optional
        Defaults to the CLI's defaults.
    features : {None, "rdkit2d"}
        Extra molecule descriptors beside the fingerprint (see the module docstring).
    state_dir : path, optional
        Folder of the cell's training state, written after every epoch and resumed from
        when present (see the module docstring); removed once the cell is scored.
    feature_cache : path, optional
        Folder that keeps chemprop's computed descriptors (``features="rdkit2d"``) between
        runs (:func:`exlm_chem.benchmark.features.cached_task_values`).

    Returns
    -------
    MethodOutput
        ``test_scores`` [len(test), T]; settings include ``chemprop_version``.

    Raises
    ------
    ValueError
        When ``state_dir`` holds a file under this cell's name written for other settings,
        data or split.
    """
    require_chemprop()
    import chemprop
    import lightning.pytorch as pl
    import torch
    from chemprop import data as cdata
    from chemprop import nn

    settings = settings or ChempropSettings()
    if len(data.train) == 0:
        raise ValueError(f"{data.name}: the training split is empty")
    own = len(data.valid) == 0 and len(data.train) > 1
    if own:  # the epoch choice needs a validation part: chemprop's CLI draws its own
        data = own_valid(data, seed)
    regression = data.task_type == "regression"
    labels = np.asarray(data.labels, dtype=np.float64)  # [N, T]
    n_tasks = labels.shape[1]
    if features not in (None, "rdkit2d"):
        raise ValueError(f"chemprop features must be None or 'rdkit2d', got {features!r}")
    x_d = task_descriptors(data, feature_cache) if features else None
    train = _dataset(data.smiles, labels, data.train, x_d)
    valid = _dataset(data.smiles, labels, data.valid, x_d)
    test = _dataset(data.smiles, labels, data.test, x_d)
    descriptor_transform = None
    if x_d is not None:  # as `chemprop train`: train and valid scaled, test by the model
        x_scaler = train.normalize_inputs("X_d")
        valid.normalize_inputs("X_d", x_scaler)
        descriptor_transform = nn.ScaleTransform.from_standard_scaler(x_scaler)
    output_transform = None
    if regression:
        scaler = train.normalize_targets()
        valid.normalize_targets(scaler)  # val_loss on the training scale, as the CLI does
        output_transform = nn.UnscaleTransform.from_standard_scaler(scaler)
    n_epochs = settings.epochs if budget.max_epochs is None else min(settings.epochs,
                                                                      budget.max_epochs)
    train_loader = cdata.build_dataloader(train, batch_size=settings.batch_size, seed=seed,
                                          shuffle=True)
    # drop_last=None would drop a last batch of one molecule (for batch norm), and with
    # it a test prediction; evaluation loaders keep every row
    valid_loader, test_loader = (
        cdata.build_dataloader(part, batch_size=settings.batch_size, shuffle=False,
                               drop_last=False) for part in (valid, test))

    keep = _KeepBest()
    callbacks = [keep]
    cell = resume = None
    if state_dir is not None:
        cell = cell_state(Path(state_dir), data, seed, asdict(settings), n_epochs, budget,
                          features)
        done = cell.saved_epochs()
        resume = None if done is None else cell.path
        callbacks += [_RandomState(train_loader.sampler), SaveState(cell)]
    max_time = (None if budget.max_minutes is None
                else datetime.timedelta(minutes=budget.max_minutes))
    lightning_log = logging.getLogger("lightning.pytorch")
    level = lightning_log.level
    lightning_log.setLevel(logging.WARNING)  # "GPU available: False" and tips, per cell
    try:
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.filterwarnings("ignore", module="lightning")  # num_workers, loggers
            torch.manual_seed(seed)
            model = _build(n_tasks, regression, settings, output_transform,
                           0 if x_d is None else x_d.shape[1], descriptor_transform)
            trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=n_epochs,
                                 max_time=max_time, logger=False, enable_checkpointing=False,
                                 enable_progress_bar=progress, enable_model_summary=False,
                                 deterministic=True, callbacks=callbacks)
            if resume is not None:
                logger.info("%s: resumed after epoch %d of %d from %s", cell.label, done,
                            n_epochs, resume)
            # the state holds tensors and plain values only (_read_state loaded it so), which
            # Lightning's default load takes on any torch
            trainer.fit(model, train_loader, valid_loader, ckpt_path=resume)
            epochs_run = trainer.current_epoch
            if keep.state is not None:
                model.load_state_dict(keep.state)
            scores = _predict(model, test_loader).double().numpy()  # [n_test, T]
            # the kept epoch's unscaled validation predictions calibrate conformal intervals
            # (and are scored where the valid part is a suite's held-out part, as TDC's; there
            # chemprop chose its epoch on them, as its CLI does)
            valid_scores = None
            # (a part chemprop drew itself is not the suite's: nothing to report)
            if (regression or data.held_out_valid) and len(data.valid) and not own:
                if x_d is not None:  # in eval mode the model scales x_d itself
                    valid.reset()
                valid_scores = _predict(model, valid_loader).double().numpy()  # [n_valid, T]
    finally:
        lightning_log.setLevel(level)
    if cell is not None:
        cell.remove()
    stopped = budget.max_minutes is not None and epochs_run < n_epochs
    return MethodOutput(
        test_scores=scores, valid_scores=valid_scores, epochs=int(epochs_run),
        best_epoch=int(keep.best_epoch),
        stopped_early=bool(stopped),
        settings={**asdict(settings), "chemprop_version": str(chemprop.__version__),
                  **({"descriptors": descriptor_featurizer()[0]} if features else {}),
                  **({"own_valid": f"random {len(data.valid)} of the train part"}
                     if own else {})},
    )
