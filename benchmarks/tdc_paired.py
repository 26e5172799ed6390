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

Usage::

    python benchmarks/tdc_paired.py BASE.jsonl LEVER.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

LOWER_IS_BETTER = {"mae"}


def _cells(path: Path) -> dict[tuple[str, int], dict]:
    cells = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            cells[(record["task"], record["seed"])] = record  # the newest wins
    return cells


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
    args = parser.parse_args()
    print("\n".join(paired_table(_cells(args.base), _cells(args.lever))))


if __name__ == "__main__":
    main()
