"""The estimators' ensemble: its members, the molecules held out to weigh them, and how
their outputs combine into one prediction.

Members
    The networks: ``n_models`` members fine-tuned from one loaded checkpoint, differing in
    their seed (head initialisation, dropout, batch order) and, with ``bootstrap``, in
    their training rows (:func:`~exlm_chem.uncertainty.ensemble.member_seeds`,
    :func:`~exlm_chem.uncertainty.ensemble.bootstrap_rows`). A prediction runs every
    member over every SMILES view, the canonical SMILES and, with ``tta``, randomized
    ones: members x views outputs per molecule. Beside them, the tree head
    (:class:`~exlm_chem.model.frozen_trees.FrozenTrees`): boosted trees, CatBoost or
    histogram boosting, on molecule features and optionally the pre-trained encoder's
    pooled states (kept frozen, :func:`.members.frozen_encoder`), with a random forest beside
    histogram boosting in the classifier (:func:`uses_forest`).

Held-out molecules
    ``fit`` draws one seed from ``random_state`` and holds out whole scaffold groups
    (Bemis-Murcko) in an order drawn from it, about ``validation_fraction`` of the
    molecules (:func:`~exlm_chem.data.splits.held_out_split`): scaffolds training never
    saw, as a scaffold split and most real use ask. They choose each member's best epoch;
    the tree head is first fitted without them, so that its outputs on them are honest.

The trees' weight
    Given (``tree_weight`` a number), or chosen by the held-out molecules from the weights
    ``tree_weight`` lists (None: all of :data:`TREE_WEIGHTS`, which include the trees alone
    and the network alone): the weight whose average scores them best, by log loss of the
    probabilities (classifier) or squared error of the values on the scale fit learns
    (regressor) (:func:`tree_weight_choices`, :func:`choose_tree_weight`,
    :func:`held_out_tree_weight`). The default, ``"auto"``, is 0.75 (what TDC's valid parts
    chose), and for a classifier with CatBoost trees and at least
    :data:`AUTO_MIN_HELD_OUT` held-out molecules the choice of 0.75 or the trees alone
    (:func:`resolve_tree_weight`): where that many molecules choose, the choice is ahead
    of 0.75 on TDC's valid parts; where fewer do, or the trees are the many-task
    histogram boosting, it is behind (benchmarks/results/tdc_admet/weights.md).

The kept trees
    CatBoost's trees are fitted again on every molecule once their first fit has scored
    the held-out ones; histogram boosting (many tasks) keeps its fit on the training
    molecules, as in 0.4.x: a second would double a ToxCast fit (:func:`fit_tree_head`).

Combination
    The members x views outputs are averaged on the output scale (probabilities for the
    classifier, values on y's scale for the regressor, undoing ``target_transform``:
    :func:`output_scale`), then mixed with the tree head's, the trees weighing the weight
    (:func:`mix`, :func:`average`, :func:`combined`): the regressor averages values, the
    classifier log-odds, so that a member sure of a molecule moves the mix more than one
    that is not (ahead of averaging probabilities on the valid parts of TDC's and
    MoleculeNet's classification tasks: benchmarks/results/tdc_admet/weights.md). The
    classifier's one output is the logit of the mixed probability, calibrated when
    ``calibrate`` is set (:func:`classifier_logits`, :func:`aggregate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from exlm_chem.data.feature_spec import raw_features
from exlm_chem.data.splits import HeldOutSplit
from exlm_chem.model.frozen_trees import DEFAULT_TREE_WEIGHT, STATES_KIND, FrozenTrees
from exlm_chem.model.molecule_model import MoleculeModel
from exlm_chem.sklearn.target_transform import inverse
from exlm_chem.threads import resolve_threads
from exlm_chem.uncertainty.calibration import fit_calibrator, logit
from exlm_chem.uncertainty.conformal import conformity_scores

if TYPE_CHECKING:
    from exlm_chem.uncertainty.calibration import Calibrator

#: the estimators' ``tree_weight``: the trees' share, the shares the held-out molecules
#: choose from (None: :data:`TREE_WEIGHTS`), or ``"auto"`` (:func:`resolve_tree_weight`)
TreeWeight = float | Sequence[float] | str | None

__all__ = ["AUTO_CHOICES", "AUTO_MIN_HELD_OUT", "AUTO_TREE_WEIGHT", "TREE_WEIGHTS",
           "HeldOutDecisions", "TreeHeadFit", "WeightChoice", "aggregate",
           "average", "choose_tree_weight", "classifier_logits", "combined",
           "decide_on_held_out", "fit_tree_head", "held_out_tree_weight",
           "mix", "output_scale", "reads_held_out_trees",
           "resolve_tree_weight", "tree_weight_choices", "uses_forest"]


# ---- the members: the networks (:mod:`.members`), the tree head's settings ---------
def uses_forest(task: str, tree_head: bool, tree_forest: bool | None, booster: str) -> bool:
    """Whether the tree head of ``booster`` has a random forest beside its boosted trees:
    ``tree_forest``, where None is the measured default (beside the classifier's histogram
    boosting; not beside CatBoost, which MapLight uses alone, nor in the regressor)."""
    return (task == "classification" and bool(tree_head) and booster == "hist"
            if tree_forest is None else bool(tree_forest))


# ---- the tree head: scored on the held-out molecules, then kept by a fixed rule -----------
def reads_held_out_trees(task: str, tree_weight: TreeWeight, calibrate: str | None) -> bool:
    """Whether the held-out molecules need the tree head's outputs: to choose its weight
    (:func:`tree_weight_choices`), for the regressor's conformity scores or the
    classifier's calibration, all of which read the prediction the trees are part of."""
    return (tree_weight_choices(tree_weight) is not None or task == "regression"
            or calibrate is not None)


class TreeHeadFit(NamedTuple):
    """What :func:`fit_tree_head` fits."""

    head: FrozenTrees  # the tree head the estimator keeps (``tree_head_``)
    held_out: np.ndarray | None  # [n_valid, T] raw outputs of a fit that never saw them


def fit_tree_head(kinds: Sequence[str], frozen: MoleculeModel | None,
                  states: np.ndarray | None, smiles: Sequence[str],
                  molecules: Sequence[Any] | None, labels: np.ndarray, split: HeldOutSplit,
                  task: str, booster: str, *, forest: bool,
                  tree_params: dict[str, Any] | None, score_held_out: bool,
                  n_jobs: int | None) -> TreeHeadFit:
    """The tree head the estimator keeps, and its outputs on the held-out molecules.

    Parameters
    ----------
    kinds : sequence of str
        What the trees read (:func:`~exlm_chem.model.frozen_trees.tree_kinds`): computed
        feature kinds, and ``"exlm"`` for the pre-trained encoder's pooled states.
    frozen : MoleculeModel or None
        The pre-trained encoder (:func:`.members.frozen_encoder`), kept in the head when it reads
        states.
    states : ndarray [n, d] or None
        ``frozen``'s pooled states of the n molecules (None when not computed).
    smiles, molecules : sequence
        The n valid canonical SMILES and their RDKit molecules from fit's check, which the
        descriptors read.
    labels : ndarray [n, T]
        As fit learns them (transformed targets; NaN: missing).
    split : HeldOutSplit
        The fit's seed (the trees') and its training and held-out rows.
    task : {"classification", "regression"}
    booster : {"catboost", "hist"}
    forest : bool
        A random forest beside the boosted trees (:func:`uses_forest`).
    tree_params : dict or None
        CatBoost's settings beside MapLight's; histogram boosting reads none.
    score_held_out : bool
        Whether the held-out molecules need the trees' outputs
        (:func:`reads_held_out_trees`).
    n_jobs : int or None
        Processes computing the descriptors.

    Returns
    -------
    TreeHeadFit
        ``held_out``: the outputs on the held-out molecules of a first fit on the training
        molecules alone (None when none are held out or nothing reads them). ``head``:
        CatBoost's trees fitted again on every molecule; histogram boosting's fit on the
        training molecules (that first fit, when there was one).
    """
    computed = tuple(k for k in kinds if k != STATES_KIND)
    tree_states = states if STATES_KIND in kinds else None
    # the network's kinds are computed already (RowMemo)
    raw = raw_features(computed, smiles, None, n_jobs, molecules)  # [n, F]

    def fit(rows: np.ndarray) -> FrozenTrees:
        return FrozenTrees.fit(frozen, tree_states, raw, labels, rows, task, split.seed,
                               kinds=computed, forest=forest, booster=booster,
                               threads=resolve_threads(),
                               booster_params=tree_params if booster == "catboost" else None)

    first, held_out = None, None
    valid_rows = split.valid_rows
    if len(valid_rows) and score_held_out:
        # first without the held-out molecules, which then score them
        first = fit(split.train_rows)
        held_out = first.decision_of(None if tree_states is None else tree_states[valid_rows],
                                     raw[valid_rows])  # [n_valid, T]
    if booster == "hist":  # a second fit would double a ToxCast fit
        return TreeHeadFit(first if first is not None else fit(split.train_rows), held_out)
    # no weight decides this: CatBoost learns the held-out molecules too, whatever they chose
    return TreeHeadFit(fit(np.arange(len(smiles))), held_out)


# ---- the trees' weight, chosen on the held-out molecules -----------------------------------
#: the weights the held-out molecules choose from with ``tree_weight=None``: the trees' share
TREE_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


#: ``tree_weight="auto"``: the trees' share where nothing chooses it
AUTO_TREE_WEIGHT = 0.75
#: ``"auto"``: what a classifier's CatBoost trees choose from with enough held-out molecules
AUTO_CHOICES = (0.75, 1.0)
#: ``"auto"``: the held-out molecules a choice needs. TDC's and MoleculeNet's classification
#: sets hold out either under 330 (where choosing loses: MoleculeNet's BACE) or over 460
#: (Ames, the CYP inhibition sets, where it wins), so the figures place it only in between.
AUTO_MIN_HELD_OUT = 400


def resolve_tree_weight(tree_weight: TreeWeight, task: str, booster: str,
                        n_held_out: int) -> float | tuple[float, ...] | None:
    """What ``tree_weight`` asks of this fit: ``"auto"`` becomes :data:`AUTO_CHOICES` for a
    classifier whose trees are CatBoost's with at least :data:`AUTO_MIN_HELD_OUT` held-out
    molecules, :data:`AUTO_TREE_WEIGHT` otherwise; any other value stays as given."""
    if not isinstance(tree_weight, str):
        return tree_weight
    chooses = (task == "classification" and booster == "catboost"
               and n_held_out >= AUTO_MIN_HELD_OUT)
    return AUTO_CHOICES if chooses else AUTO_TREE_WEIGHT


def tree_weight_choices(tree_weight: TreeWeight) -> tuple[float, ...] | None:
    """The weights the held-out molecules choose from: ``tree_weight``'s list, all of
    :data:`TREE_WEIGHTS` for None, or None where ``tree_weight`` is a number (given, not
    chosen). :func:`~exlm_chem.sklearn.params.fit_settings` has validated it and
    :func:`resolve_tree_weight` resolved ``"auto"``."""
    if isinstance(tree_weight, str):
        raise TypeError(f"resolve tree_weight={tree_weight!r} first (resolve_tree_weight)")
    if tree_weight is None:
        return TREE_WEIGHTS
    if isinstance(tree_weight, Sequence):
        return tuple(float(w) for w in tree_weight)
    return None


def held_out_tree_weight(network: np.ndarray, trees: np.ndarray, labels: np.ndarray,
                         task: str = "regression",
                         weights: Sequence[float] = TREE_WEIGHTS) -> float:
    """The weight of ``weights`` whose mix (:func:`mix`) of ``network`` and ``trees``
    [n, T] scores best on ``labels`` [n, T] (NaN: missing), summed over the tasks; the
    first of equals.

    Regression: values, squared error. Classification: probabilities mixed as the
    classifier mixes them (:func:`mix`), log loss (clipped to [1e-7, 1 - 1e-7]), which
    reads every molecule's probability where a rank metric on a few dozen held-out
    molecules would move in steps.
    """
    known = ~np.isnan(labels)
    y = labels[known]
    errors = []
    for w in weights:
        mixed = mix(network, trees, w, task)[known]
        if task == "classification":
            p = np.clip(mixed, 1e-7, 1 - 1e-7)
            errors.append(-(y * np.log(p) + (1 - y) * np.log1p(-p)).sum())
        else:
            errors.append(np.square(mixed - y).sum())
    return float(weights[int(np.argmin(errors))])


class WeightChoice(NamedTuple):
    """What :func:`choose_tree_weight` chose, and what it chose on (diagnostics)."""

    weight: float
    network: np.ndarray  # [n_valid, T] the members' mean over views, as averaged
    trees: np.ndarray  # [n_valid, T] the tree head's first fit, as averaged
    labels: np.ndarray  # [n_valid, T]


def choose_tree_weight(samples: np.ndarray, trees: np.ndarray, labels: np.ndarray,
                       task: str, weights: Sequence[float] = TREE_WEIGHTS) -> WeightChoice:
    """The trees' weight the held-out molecules choose from ``weights``
    (:func:`held_out_tree_weight`).

    Parameters
    ----------
    samples : ndarray [M, V, n_valid, T]
        The members' raw outputs (logits, values) on each SMILES view of the held-out
        molecules.
    trees : ndarray [n_valid, T]
        The raw outputs of the tree head's fit on the training molecules alone
        (:attr:`TreeHeadFit.held_out`).
    labels : ndarray [n_valid, T]
        As fit learns them (transformed targets; NaN: missing).
    task : {"classification", "regression"}
    weights : sequence of float
        The trees' shares to choose from (:func:`tree_weight_choices`).

    Returns
    -------
    WeightChoice
        The weight, and the network's and trees' outputs it was chosen on: the
        classifier's probabilities, the regressor's values on the scale fit learns (log y
        for the logged tasks, where a few large values do not outweigh the rest:
        benchmarks/results/tdc_admet/).
    """
    if task == "classification":  # probabilities are what is averaged
        from scipy.special import expit

        network, trees = expit(samples).mean(axis=(0, 1)), expit(trees)
    else:
        network = samples.mean(axis=(0, 1))
    return WeightChoice(held_out_tree_weight(network, trees, labels, task, weights), network,
                        trees, labels)


class HeldOutDecisions(NamedTuple):
    """What the held-out molecules decide beside each member's best epoch."""

    tree_weight: float  # the trees' share of the average
    choice: WeightChoice | None  # what chose it (None: given, or no trees)
    calibrator: Calibrator | None  # the classifier's ``calibrate`` map
    conformity_scores: np.ndarray | None  # [n_valid, T] the regressor's, on y's scale


def decide_on_held_out(task: str, tree_weight: TreeWeight, calibrate: str | None,
                       target_log: np.ndarray | None, trees: np.ndarray | None,
                       labels: np.ndarray | None,
                       samples_of: Callable[[], np.ndarray]) -> HeldOutDecisions:
    """The trees' weight (chosen from :func:`tree_weight_choices` where ``tree_weight``
    lists weights: :func:`choose_tree_weight`), the classifier's calibration map and the
    regressor's conformity scores.

    ``trees`` [n_valid, T]: the held-out molecules' outputs of the tree head's fit
    without them (None: no tree head); ``labels`` [n_valid, T] as fit learns them (None:
    nothing held out); ``samples_of()`` gives the members' raw outputs [M, V, n_valid, T],
    called only when something reads them. Without held-out molecules a weight left to
    choose is the first listed, or for None
    :data:`~exlm_chem.model.frozen_trees.DEFAULT_TREE_WEIGHT`.
    """
    choices = tree_weight_choices(tree_weight)
    weight = (float(tree_weight) if choices is None
              else DEFAULT_TREE_WEIGHT if tree_weight is None else choices[0])
    chooses = choices is not None and trees is not None
    if labels is None or not (chooses or task == "regression" or calibrate is not None):
        return HeldOutDecisions(weight, None, None, None)
    samples = samples_of()  # [M, V, n_valid, T]
    choice = choose_tree_weight(samples, trees, labels, task, choices) if chooses else None
    weight = weight if choice is None else choice.weight
    if task == "regression":
        values = aggregate(samples, trees, weight, task, target_log, None)  # on y's scale
        return HeldOutDecisions(weight, choice, None,
                                conformity_scores(inverse(labels, target_log), values))
    calibrator = None if calibrate is None else fit_calibrator(
        calibrate, labels, combined(samples, trees, weight, task, target_log))
    return HeldOutDecisions(weight, choice, calibrator, None)


# ---- how the outputs combine ---------------------------------------------------------------
def output_scale(values: np.ndarray, task: str, target_log: np.ndarray | None) -> np.ndarray:
    """Raw outputs (any shape, tasks last) on the scale they are averaged and their spread
    reported on: probabilities (classifier), values on y's scale (regressor: undoing
    ``target_transform``, ``target_log`` [T] or None)."""
    if task == "regression":
        return inverse(values, target_log)
    from scipy.special import expit

    return expit(values)


def mix(network: np.ndarray, trees: np.ndarray, tree_weight: float, task: str) -> np.ndarray:
    """The network's and the trees' outputs (same shape, on the output scale:
    probabilities, values) mixed, the trees weighing ``tree_weight``: the regressor's
    weighted mean of values, the classifier's probability whose log-odds are the weighted
    mean of the two log-odds (probabilities clipped as :func:`~exlm_chem.uncertainty.
    calibration.logit` clips them)."""
    if task == "regression":
        return (1 - tree_weight) * network + tree_weight * trees
    from scipy.special import expit

    return expit((1 - tree_weight) * logit(network) + tree_weight * logit(trees))


def average(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float,
            task: str) -> np.ndarray:
    """One output [N, T] per molecule: the mean of ``samples`` [M, V, N, T] over members
    and views, mixed with the tree head's outputs ``trees`` [N, T] (None: no tree head)
    that weigh ``tree_weight`` (:func:`mix`).

    Both are on the output scale (probabilities, values); without trees this is the mean
    :func:`~exlm_chem.uncertainty.ensemble.combine` reports beside the spreads.
    """
    mean = samples.mean(axis=(0, 1))  # [N, T]
    if trees is None:
        return mean
    return mix(mean, trees, tree_weight, task)


def combined(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float, task: str,
             target_log: np.ndarray | None) -> np.ndarray:
    """[N, T] on the output scale (:func:`output_scale`): the mean of the networks' raw
    ``samples`` [M, V, N, T] averaged with the tree head's raw outputs ``trees`` [N, T]
    (None: no tree head) that weigh ``tree_weight`` (:func:`average`)."""
    return average(output_scale(samples, task, target_log),
                   None if trees is None else output_scale(trees, task, target_log),
                   tree_weight, task)


def classifier_logits(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float,
                      calibrator: Calibrator | None) -> np.ndarray:
    """A classifier's one output [N, T] per molecule, as logits.

    Parameters
    ----------
    samples : ndarray [M, V, N, T]
        The members' logits on each SMILES view.
    trees : ndarray [N, T] or None
        The tree head's logits (None: no tree head).
    tree_weight : float
        The trees' share of the mix (:func:`mix`: of the log-odds).
    calibrator : Calibrator or None
        Maps the average probability (the classifier's ``calibrate``).

    Returns
    -------
    ndarray [N, T]
        The logit of the (calibrated) :func:`average` probability; one member on
        one view, with no trees and no calibrator, its own logits unchanged (no round trip
        through a probability, which would round them).
    """
    if samples.shape[:2] == (1, 1) and calibrator is None and trees is None:
        return samples[0, 0]
    from scipy.special import expit

    proba = average(expit(samples), None if trees is None else expit(trees), tree_weight,
                    "classification")
    if calibrator is not None:
        proba = calibrator.apply(proba)
    return logit(proba)


def aggregate(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float, task: str,
              target_log: np.ndarray | None, calibrator: Calibrator | None) -> np.ndarray:
    """One output [N, T] per molecule of the networks' raw ``samples`` [M, V, N, T] and the
    tree head's raw ``trees`` [N, T] (None: no tree head): the regressor's value on y's
    scale (:func:`combined`), the classifier's logit (:func:`classifier_logits`)."""
    if task == "regression":
        return combined(samples, trees, tree_weight, task, target_log)
    return classifier_logits(samples, trees, tree_weight, calibrator)
