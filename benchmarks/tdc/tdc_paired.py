"""Two sets of TDC ADMET cells side by side, seed by seed: a lever against the row it would
change, on the held-out valid parts (what decides a default) and the test parts.

Each argument is a ``results.jsonl``; cells pair up by task and seed (the newest record of
each), and only pairs count. Prints a markdown table: per task, the seeds paired, the mean
valid and test metric of each, and on how many seeds the second is ahead on its valid part
(for MAE: lower); then a line over the tasks: on how many the lever's mean valid metric is
ahead, behind or level, and the mean over tasks of its relative change (positive: better).
Rows fitted on all of train_val (``--fit-on train_val``) have no valid part: a task where
either side lacks one is compared on its test part, and says so; a line over those tasks
follows (test parts are for reading a change, not for choosing one).

With ``--from-parts`` both sides are scored again from the members' outputs their cells
kept (``parts/TASK_seedS.npz`` beside each ``results.jsonl``): ``mix`` is what today's
default estimators predict from those members (:func:`exlm_chem.sklearn.ensemble.mix` at
the default ``tree_weight``), so a lever of the network is set against a row fitted under
an older mix without fitting it again; ``network`` and ``trees`` score one member alone.
``--lever-trees`` mixes the base's network with the lever's kept trees, for rows whose
trees differ (the regressor's since 0.5.3 against lane 9's). ``--weight W`` mixes both
sides at the trees' share W instead of the default, to ask whether a lever moves the weight.

Usage::

    python benchmarks/tdc/tdc_paired.py BASE.jsonl LEVER.jsonl [--from-parts mix|network|trees]
        [--lever-trees] [--weight W]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from tdc_weights import score

LOWER_IS_BETTER = {"mae"}
MEMBERS = ("mix", "network", "trees")


def _cells(path: Path) -> dict[tuple[str, int], dict]:
    cells = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            cells[(record["task"], record["seed"])] = record  # the newest wins
    return cells


def from_parts(cells: dict[tuple[str, int], dict], results: Path, member: str,
               trees_from: Path | None = None, weight: float | None = None
               ) -> dict[tuple[str, int], dict]:
    """``cells`` with ``valid_score`` and ``score`` read again from their kept parts beside
    ``results``: ``member`` (:data:`MEMBERS`) is the default estimators' mix of the two
    members, or one alone. ``trees_from``: another ``results.jsonl`` whose cells' kept
    trees stand in for these cells' own (the same molecules), so that two networks are
    mixed with the same trees. ``weight``: the trees' share in the mix, None for the
    default estimators' where they do not choose it (``tree_weight="auto"``: 0.75). A
    cell without a parts file (here or in ``trees_from``), or
    without a valid part there, keeps None."""
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS
    from exlm_chem.sklearn.ensemble import AUTO_TREE_WEIGHT, mix

    if member not in MEMBERS:
        raise ValueError(f"member must be one of {MEMBERS}, got {member!r}")
    if weight is None:
        weight = AUTO_TREE_WEIGHT
    out = {}
    for (task, seed), record in cells.items():
        name = f"{task}_seed{seed}.npz"
        path = results.parent / "parts" / name
        tree_path = path if trees_from is None else trees_from.parent / "parts" / name
        scores: dict[str, float | None] = {"valid_score": None, "score": None}
        if path.exists() and tree_path.exists():
            with np.load(path) as parts, np.load(tree_path) as tree_parts:
                for part, key in (("valid", "valid_score"), ("test", "score")):
                    if not {f"{part}_network", f"{part}_trees"} <= (set(parts.files)
                                                                    & set(tree_parts.files)):
                        continue
                    network, trees = parts[f"{part}_network"], tree_parts[f"{part}_trees"]
                    predicted = {"network": network, "trees": trees}.get(member)
                    if predicted is None:
                        predicted = mix(network, trees, weight,
                                        TDC_ADMET_TASKS[task].task_type)
                    scores[key] = score(task, parts[f"{part}_labels"], predicted)
        out[(task, seed)] = {**record, **scores}
    return out


def paired_table(base: dict[tuple[str, int], dict], lever: dict[tuple[str, int], dict]
                 ) -> list[str]:
    """Markdown lines: one row per task both have cells of, then the line over tasks."""
    lines = ["| task | metric | seeds | valid: base | valid: lever | test: base | test: lever "
             "| lever ahead on |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    # per part: sign * (lever - base) / |base| of each task's mean metric
    changes: dict[str, list[float]] = {"valid": [], "test": []}
    for task in sorted({t for t, _ in base} & {t for t, _ in lever}):
        seeds = sorted(s for t, s in base if t == task and (t, s) in lever)
        a, b = [base[(task, s)] for s in seeds], [lever[(task, s)] for s in seeds]
        metric = a[0]["metric"]
        sign = -1 if metric in LOWER_IS_BETTER else 1
        part = "valid" if all(c.get("valid_score") is not None for c in a + b) else "test"
        key = "valid_score" if part == "valid" else "score"
        gains = [sign * (y[key] - x[key]) for x, y in zip(a, b, strict=True)]
        ahead, ties = sum(g > 0 for g in gains), sum(g == 0 for g in gains)

        def mean(cells: list[dict], name: str) -> float:
            return sum(c[name] for c in cells) / len(cells)

        valid = (f"{mean(a, 'valid_score'):.3f} | {mean(b, 'valid_score'):.3f}"
                 if part == "valid" else "– | –")
        lines.append(f"| {task} | {metric} | {len(seeds)} | {valid} | {mean(a, 'score'):.3f} "
                     f"| {mean(b, 'score'):.3f} | {ahead} of {len(seeds)} ({ties} equal), "
                     f"{part} |")
        before = mean(a, key)
        changes[part].append(sign * (mean(b, key) - before) / abs(before))
    for part, found in changes.items():
        if found:
            lines += ["", f"Over {len(found)} tasks the lever's mean {part} metric is ahead on "
                      f"{sum(c > 0 for c in found)}, behind on {sum(c < 0 for c in found)}, "
                      f"level on {sum(c == 0 for c in found)}; mean relative change "
                      f"{100 * sum(found) / len(found):+.1f}%."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="results.jsonl of the row as it is")
    parser.add_argument("lever", type=Path, help="results.jsonl of the same with the lever")
    parser.add_argument("--from-parts", choices=MEMBERS, default=None,
                        help="score both sides again from their cells' kept members: the "
                             "default estimators' mix, or one member alone")
    parser.add_argument("--lever-trees", action="store_true",
                        help="with --from-parts: mix both networks with the lever's kept "
                             "trees (where the two rows' trees differ)")
    parser.add_argument("--weight", type=float, default=None,
                        help="with --from-parts mix: the trees' share (default: the "
                             "estimators')")
    args = parser.parse_args()
    base, lever = _cells(args.base), _cells(args.lever)
    if args.from_parts:
        base = from_parts(base, args.base, args.from_parts,
                          args.lever if args.lever_trees else None, args.weight)
        lever = from_parts(lever, args.lever, args.from_parts, weight=args.weight)
        # a cell without parts cannot be scored again: it leaves the pairing
        base = {k: c for k, c in base.items() if c["score"] is not None}
        lever = {k: c for k, c in lever.items() if c["score"] is not None}
    print("\n".join(paired_table(base, lever)))


if __name__ == "__main__":
    main()
