"""AttentiveFP trained from scratch: the graph neural network baseline.

Model: PyG's :class:`torch_geometric.nn.models.AttentiveFP` (Xiong et al., J. Med. Chem.
2020) on the graphs of :mod:`.graphs`, one output logit per task. Training mirrors
:func:`exlm_chem.train.finetune.finetune`: binary cross-entropy over labelled entries only
(NaN = missing); after every epoch the validation set is scored and the best epoch's
weights score the test set (highest mean ROC-AUC over validation tasks with both
classes; lowest validation loss when no task has both; the last epoch without a
validation set). Regression tasks train on targets standardised with the training rows'
mean and spread (mean squared error), select the lowest validation RMSE and predict in
the original units. ``Budget.max_epochs`` caps the epochs; ``Budget.max_minutes`` stops
training after the step that exhausts it, and that partial epoch is still validated.

Runs are reproducible: the seed fixes the initial weights, dropout (torch's generator,
forked so the caller's stream is left untouched) and the batch order (a NumPy generator).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from exlm_chem.benchmark.graphs import (
    ATOM_FEATURES,
    BOND_FEATURES,
    graphs_for,
    require_torch_geometric,
)
from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.metrics import mean_rmse, mean_roc_auc
from exlm_chem.train.epoch_loop import LoopSettings, Step, run_epochs, shuffled_batches
from exlm_chem.train.finetune import is_better, masked_loss, selection_metric, target_scaling

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Batch, Data

__all__ = ["AttentiveFPSettings", "attentivefp_method"]

_clock = time.monotonic  # module-level so tests can drive the max_minutes budget


@dataclass(frozen=True)
class AttentiveFPSettings:
    # Defaults: the AttentiveFP paper's search space centre, as in PyG's example script.
    hidden_channels: int = 200  # node and graph embedding width
    num_layers: int = 2  # atom-level attentive message passing layers ("radius")
    num_timesteps: int = 2  # molecule-level attention (GRU readout) iterations
    dropout: float = 0.2  # on every attention and GRU input
    lr: float = 10**-2.5  # Adam learning rate, constant (the paper uses no schedule)
    weight_decay: float = 10**-5  # Adam L2 penalty (coupled, as in the paper's code)
    # The paper's code and PyG's example both use 200; at MoleculeNet sizes (1.5k-7k
    # training molecules) that is 8-32 steps per epoch, and 200 epochs of it converge.
    batch_size: int = 200
    epochs: int = 200  # before Budget.max_epochs; the best validation epoch is kept
    eval_batch_size: int = 1000  # graphs per forward pass when scoring (no gradients)


def _chunks(graphs: list[Data], size: int) -> list[Batch]:
    from torch_geometric.data import Batch

    return [Batch.from_data_list(graphs[i : i + size]) for i in range(0, len(graphs), size)]


def _forward(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    return model(batch.x, batch.edge_index, batch.edge_attr, batch.batch)  # [B, T] logits


def _predict(model: torch.nn.Module, batches: list[Batch], n_tasks: int,
             device: torch.device) -> torch.Tensor:
    """Logits of every graph, [N, T], in order, in eval mode."""
    import torch

    model.eval()
    with torch.no_grad():
        outputs = [_forward(model, batch.to(device)).cpu() for batch in batches]
    return torch.cat(outputs) if outputs else torch.zeros(0, n_tasks)


def _valid_score(logits: torch.Tensor, labels: np.ndarray, metric: str,
                 scaling: tuple[np.ndarray, np.ndarray]) -> float:
    import torch

    if not torch.isfinite(logits).all():
        return float("nan")  # diverged: never selected
    if metric == "roc_auc":
        return mean_roc_auc(labels, logits.numpy()).mean
    if metric == "rmse":
        mean, scale = scaling
        return mean_rmse(labels, logits.double().numpy() * scale + mean).mean
    loss = masked_loss(logits, torch.as_tensor(labels, dtype=torch.float32), "classification")
    return float(loss) if loss is not None else float("nan")


def attentivefp_method(
    data: TaskData,
    seed: int,
    budget: Budget,
    progress: bool = False,
    settings: AttentiveFPSettings | None = None,
    device: str | torch.device = "cpu",
) -> MethodOutput:
    """Train AttentiveFP on ``data.train``, select on ``data.valid``, score ``data.test``.

    Parameters
    ----------
    data : TaskData
        Labels [N, T] with NaN for missing entries; one model predicts all T tasks.
    seed : int
        Fixes initial weights, dropout and batch order: equal seeds give equal scores
        (on CPU; CUDA scatter kernels are not deterministic).
    budget : Budget
        ``max_epochs`` caps ``settings.epochs``; ``max_minutes`` caps training wall time.
    progress : bool
        Show a tqdm bar over epochs (training loss and validation score).
    settings : AttentiveFPSettings, optional
        Defaults to ``AttentiveFPSettings()``.
    device : str or torch.device
        Where to train. Torch's thread count is left as the caller set it.

    Returns
    -------
    MethodOutput
        ``test_scores`` [len(test), T] sigmoid probabilities from the best epoch's weights;
        ``best_epoch`` 0 means no epoch beat the initial weights (e.g. all scores NaN);
        regression: predictions in the labels' units.
    """
    require_torch_geometric()
    import torch
    from torch_geometric.nn.models import AttentiveFP

    settings = settings or AttentiveFPSettings()
    if len(data.train) == 0:
        raise ValueError(f"{data.name}: the training split is empty")
    labels = np.asarray(data.labels, dtype=np.float64)
    if labels.ndim != 2 or labels.shape[0] != len(data.smiles):
        raise ValueError(f"{data.name}: labels must be [{len(data.smiles)}, T], got "
                         f"{labels.shape}")
    n_tasks = labels.shape[1]
    device = torch.device(device)
    task = data.task_type
    mean, scale = np.zeros(n_tasks), np.ones(n_tasks)
    if task == "regression":
        mean, scale = target_scaling(labels[data.train])  # [T] each, training rows only
    graphs = graphs_for(data.smiles, (labels - mean) / scale)  # featurize once, all splits
    train_graphs = [graphs[i] for i in data.train]
    valid_batches = _chunks([graphs[i] for i in data.valid], settings.eval_batch_size)
    test_batches = _chunks([graphs[i] for i in data.test], settings.eval_batch_size)
    valid_labels = labels[data.valid]  # [n_valid, T]
    metric = selection_metric(task, valid_labels)
    n_epochs = settings.epochs if budget.max_epochs is None else min(settings.epochs,
                                                                      budget.max_epochs)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AttentiveFP(
            in_channels=ATOM_FEATURES, hidden_channels=settings.hidden_channels,
            out_channels=n_tasks, edge_dim=BOND_FEATURES, num_layers=settings.num_layers,
            num_timesteps=settings.num_timesteps, dropout=settings.dropout,
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr,
                                     weight_decay=settings.weight_decay)
        order_rng = np.random.default_rng(seed)
        from torch_geometric.data import Batch

        def batches(epoch: int) -> Iterator[Batch]:
            order = shuffled_batches(order_rng, settings.batch_size, len(train_graphs))
            # collated lazily: a step that spends the time budget leaves the rest undone
            return (Batch.from_data_list([train_graphs[i] for i in idx]).to(device)
                    for idx in order)

        def step(batch: Batch) -> Step:
            loss = masked_loss(_forward(model, batch), batch.y, task)
            if loss is not None:  # a batch without labels changes nothing
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            return Step(loss, settings.lr)

        def validate() -> tuple[float, float]:
            logits = _predict(model, valid_batches, n_tasks, device)
            return float("nan"), _valid_score(logits, valid_labels, metric, (mean, scale))

        loop = LoopSettings(n_epochs, budget.max_minutes, progress=(
            f"attentivefp {data.name} ({metric})" if progress else None), leave=False,
            name=f"attentivefp {data.name}")
        # the budget covers training only, not featurization
        run = run_epochs(model, loop, batches, step,
                         None if metric == "last_epoch" else validate,
                         lambda score, best: is_better(score, best, metric), clock=_clock)

    test_logits = _predict(model, test_batches, n_tasks, device).double()  # [n_test, T]
    valid_scores = None
    if task == "regression":
        test_scores = test_logits.numpy() * scale + mean
        if len(data.valid):  # the best epoch's model: calibrates the conformal intervals
            valid_scores = _predict(model, valid_batches, n_tasks, device).double().numpy()
            valid_scores = valid_scores * scale + mean  # [n_valid, T], labels' units
    else:
        test_scores = torch.sigmoid(test_logits).numpy()
    return MethodOutput(
        test_scores=test_scores, valid_scores=valid_scores,
        epochs=len(run.history), best_epoch=run.best_epoch, stopped_early=run.stopped_early,
        settings=asdict(settings),
    )
