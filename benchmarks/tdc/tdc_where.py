"""Where the default row stands on each TDC ADMET task, and what the records say of why.

Reads the cell records of ``benchmarks/results/tdc_admet/records/*/results.jsonl`` (each
folder's :meth:`~exlm_chem.benchmark.records.ResultsFile.latest`), the members' kept
outputs of lane 9 (``records/default-050-valid/parts``: the estimators fitted on the train
part, their network and trees apart, :mod:`tdc_weights`) and the lever study's
``levers/results.jsonl``, and prints one markdown table, the default row's worst rank
first. The default row is the reported one, fitted on all of train_val as the
leaderboard fits; it has no valid part of its own, so its valid figure is what its mix
(the regressor's trees at 0.75; the classifier's ``tree_weight="auto"``, in log-odds) gives
on lane 9's kept outputs of the same tasks and seeds 1-3. Per task:

- the default row's TDC figure (test mean over its seeds) and its rank among the
  published entries, beside MapLight's recipe measured here under the same protocol
  (``catboost_maplight`` fitted on train_val: what the network's share changes on the
  test parts), MapLight's published rank and the best published entry;
- what the network's share adds on the valid parts: the default's mix over the trees alone
  (0 where ``"auto"`` chose the trees alone);
- the measured row that is best on the **held-out valid parts**, on the seeds it shares
  with the default's valid figure, its valid margin over the default (positive: better,
  whatever the metric's direction) and its own test figure and rank (fitted on the train
  part alone). chemprop's rows are left out of this choice: its CLI picks its epoch on
  the valid part, which is then not held out;
- what the pre-trained encoder bought the 0.4.0 estimators (the last version measured from
  random weights): their valid margin over ``pretrained=None`` on their shared seeds;
- from the lever study (the 0.4.0 tree head alone, fitted on the train part, scored on the
  same valid parts): what the encoder's frozen states add to the trees,
  ``trees(emb+rdkit2d) - trees(rdkit2d)``, and what MapLight's features would add,
  ``trees(emb+maplight) - trees(emb+rdkit2d)``, on their shared seeds.

Below the table: the default row's mean rank, and the mean rank it would have if on each
task it scored what the row best on the valid parts scored on the test part (a choice a
user could make from the valid parts alone, without reading a test part). Last, how far
the rows fitted as the default is (on all of train_val: its earlier versions, its
``pretrained=None`` row, MapLight's recipe) spread on the test parts: the mean rank of
the best of them on each task. That one is read off the test parts, so it is a bound and
no rule: it says how much of the distance between the default and a bar lies within the
spread of its own variants, which the valid parts cannot tell apart.

Usage::

    python benchmarks/tdc/tdc_where.py > benchmarks/results/tdc_admet/where.md
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tdc_weights import score_cells

RESULTS = Path(__file__).resolve().parents[1] / "results" / "tdc_admet"  # from benchmarks/tdc/
DEFAULT = "ExLM exlm-small (estimator 0.5.5 defaults) [fit on train_val]"
#: the trees alone (MapLight's recipe) under the default row's protocol
RECIPE = "CatBoost on MapLight's features (MapLight's recipe) [fit on train_val]"
#: the lane whose kept outputs give the default's valid figure, and the rules that are
#: it: the classifier's mix (log-odds, tree_weight="auto"), the regressor's (values, 0.75)
PARTS = RESULTS / "records" / "default-050-valid"
WEIGHT_RULES = {"classification": "auto", "regression": "w=0.75"}
#: the last defaults measured from random weights, and that row
PRETRAINED = "ExLM exlm-small (estimator 0.4.0 defaults)"
RANDOM = "ExLM exlm-small (estimator 0.4.0 defaults, pretrained=None)"
#: rows whose valid part is not held out (the valid part chose their epoch)
NOT_HELD_OUT = ("chemprop",)
#: the label suffix of the rows fitted on all of train_val, as the default row is
SAME_FIT = "[fit on train_val]"

Cells = dict[int, tuple[float, float | None]]  # seed -> (test, valid)


def measured_cells(records_dir: Path = RESULTS / "records") -> dict[tuple[str, str], Cells]:
    """(row label, task) -> {seed: (test metric, valid metric)} of every TDC record, a
    record counting in each row :func:`~exlm_chem.benchmark.report_tdc.row_labels` gives."""
    from exlm_chem.benchmark.records import ResultsFile
    from exlm_chem.benchmark.report_tdc import row_labels

    cells: dict[tuple[str, str], Cells] = defaultdict(dict)
    for path in sorted(records_dir.glob("*/results.jsonl")):
        for record in ResultsFile(path).latest():
            if record.metric and record.score is not None:
                for label in row_labels(record):
                    cells[label, record.task][record.seed] = (record.score,
                                                              record.valid_score)
    return cells


def lever_cells(path: Path = RESULTS / "levers" / "results.jsonl"
                ) -> dict[tuple[str, str], dict[int, float]]:
    """(head, task) -> {seed: valid metric} of the lever study."""
    cells: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            cells[row["head"], row["task"]][row["seed"]] = row["valid_score"]
    return cells


def margin(a: dict[int, float], b: dict[int, float], sign: float) -> tuple[float, int] | None:
    """Mean of ``sign * (a - b)`` over the seeds both have, and how many; None: none."""
    seeds = sorted(s for s in set(a) & set(b) if a[s] is not None and b[s] is not None)
    if not seeds:
        return None
    return sign * float(np.mean([a[s] - b[s] for s in seeds])), len(seeds)


def _valid(cells: Cells) -> dict[int, float]:
    return {seed: valid for seed, (_, valid) in cells.items() if valid is not None}


def _test_figure(cells: Cells) -> float:
    """TDC's figure: the mean test metric over the seeds, rounded to 3 decimals."""
    return round(float(np.mean([test for test, _ in cells.values()])), 3)


def _fmt_margin(found: tuple[float, int] | None) -> str:
    return "–" if found is None else f"{found[0]:+.3f} ({found[1]})"


def parts_valid(folder: Path = PARTS) -> dict[str, dict[str, dict[int, float]]]:
    """task -> rule -> {seed: valid metric} of the kept outputs under ``folder``
    (:func:`tdc_weights.score_cells`); empty without them."""
    return score_cells(folder) if folder.is_dir() else {}


def where(cells: dict[tuple[str, str], Cells],
          levers: dict[tuple[str, str], dict[int, float]],
          parts: dict[str, dict[str, dict[int, float]]]) -> list[str]:
    """The markdown lines: the per-task table and the two mean ranks below it. ``parts``:
    task -> rule -> {seed: valid metric} (:func:`parts_valid`), whose rule in
    :data:`WEIGHT_RULES` is the default's valid figure."""
    from exlm_chem.benchmark.report_tdc import leaderboard, published_rank
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    board = leaderboard()["tasks"]
    rows, mine, chosen, spread = [], [], [], []
    for task in [t for t in board if (DEFAULT, t) in cells]:
        higher = board[task]["higher_is_better"]
        sign = 1.0 if higher else -1.0
        default = cells[DEFAULT, task]
        rules = parts.get(task, {})
        default_valid = rules.get(WEIGHT_RULES[TDC_ADMET_TASKS[task].task_type], {})
        figure = _test_figure(default)
        rank, n = published_rank(task, figure)
        maplight = next((e for e in board[task]["entries"] if e["model"] == "MapLight"), None)
        best = board[task]["entries"][0]
        peers = []
        for (label, peer_task), peer in cells.items():
            if (peer_task != task or label.startswith("ExLM")
                    or any(label.startswith(x) for x in NOT_HELD_OUT)):
                continue
            found = margin(_valid(peer), default_valid, sign)
            if found is not None:
                peers.append((found, label, peer))
        top = max(peers, default=None, key=lambda p: p[0][0])
        if top is not None and top[0][0] > 0:
            peer_figure = _test_figure(top[2])
            peer_text = (f"{top[1]}: {_fmt_margin(top[0])}, test {peer_figure:.3f} "
                         f"(#{published_rank(task, peer_figure)[0]})")
            chosen.append(published_rank(task, peer_figure)[0])
        else:
            peer_text = "none ahead"
            chosen.append(rank)
        random, pretrained = cells.get((RANDOM, task)), cells.get((PRETRAINED, task))
        encoder = (None if random is None or pretrained is None
                   else margin(_valid(pretrained), _valid(random), sign))
        network = margin(default_valid, rules.get("trees", {}), sign)
        recipe = cells.get((RECIPE, task))
        recipe_text = "–"
        if recipe is not None:
            recipe_figure = _test_figure(recipe)
            recipe_text = (f"{recipe_figure:.3f} (#{published_rank(task, recipe_figure)[0]}, "
                           f"n={len(recipe)})")
        states = margin(levers.get(("trees(emb+rdkit2d)", task), {}),
                        levers.get(("trees(rdkit2d)", task), {}), sign)
        maplight_features = margin(levers.get(("trees(emb+maplight)", task), {}),
                                   levers.get(("trees(emb+rdkit2d)", task), {}), sign)
        mine.append(rank)
        spread.append(min(published_rank(task, _test_figure(c))[0]
                          for (label, t), c in cells.items()
                          if t == task and label.endswith(SAME_FIT)))
        maplight_text = "–" if maplight is None else (
            f"{maplight['mean']:.3f} (#{published_rank(task, maplight['mean'])[0]})")
        rows.append((rank, [task, board[task]["metric"], f"{figure:.3f} (#{rank}/{n}, "
                            f"n={len(default)})", recipe_text, maplight_text,
                            f"{best['mean']:.3f} ({best['model']})", _fmt_margin(network),
                            peer_text, _fmt_margin(encoder), _fmt_margin(states),
                            _fmt_margin(maplight_features)]))
    header = ["task", "metric", "default: test (rank, seeds)",
              "MapLight's recipe here: test (rank, seeds)", "MapLight (published)",
              "best (published)", "the network's share adds, valid (seeds)",
              "best on the valid parts: margin over the default (seeds), its test",
              "0.4.0: pre-trained over random weights, valid (seeds)",
              "trees: the encoder's states add, valid (seeds)",
              "trees: MapLight's features add, valid (seeds)"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cols) + " |" for _, cols in sorted(rows, key=lambda r: -r[0])]
    lines += ["", f"The default row: mean rank {np.mean(mine):.2f} over {len(mine)} tasks. "
              f"Taking on each task the row best on its valid parts: mean rank "
              f"{np.mean(chosen):.2f}.",
              "", f"The best on each task of the rows fitted on all of train_val as the "
              f"default is, read off the test parts (a bound, not a rule: nothing may choose "
              f"on a test part): mean rank {np.mean(spread):.2f}."]
    return lines


TITLE = ["# Where the default row stands per task, and what the records say of why", "",
         "Written by `python benchmarks/tdc/tdc_where.py` from the records of this folder (the "
         "script's docstring says what each column is); rebuilt whenever the records change.",
         ""]


def main(argv: Sequence[str] | None = None) -> int:
    print("\n".join([*TITLE, *where(measured_cells(), lever_cells(), parts_valid())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
