"""Does the ``catboost_maplight`` row reproduce MapLight's published TDC figures?

Reads the row's records (fitted on all of ``train_val``, as MapLight fits: ``exlm-chem
benchmark --suite tdc-admet --methods catboost_maplight --fit-on train_val``) and the
published leaderboard shipped with the package, and prints a markdown table: per task the
row's mean and population sd over its seeds (TDC's way), MapLight's published mean and sd,
the difference, and whether it lies within the published sd or 0.02, whichever is larger
(the bar chemprop's row was held to). Ends with the count of tasks within it.

Usage::

    python benchmarks/tdc/maplight_reproduction.py \
        benchmarks/results/tdc_admet/records/maplight-fit/results.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

#: the published entry the row is compared with
PUBLISHED = "MapLight"
#: the least tolerance: published sds of a few thousandths are below TDC's rounding noise
MIN_TOLERANCE = 0.02


def row_cells(path: Path, split: str = "tdc_train_val") -> dict[str, dict[int, float]]:
    """task -> seed -> test metric of the newest ``catboost_maplight`` record per cell."""
    cells: dict[str, dict[int, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record["method"] == "catboost_maplight" and record["split"] == split:
            cells[record["task"]][int(record["seed"])] = float(record["score"])
    return dict(cells)


def reproduction_table(cells: dict[str, dict[int, float]], leaderboard: dict) -> list[str]:
    """Markdown lines: one row per task with cells and a published MapLight entry, then
    the count within tolerance."""
    lines = ["| task | metric | seeds | catboost_maplight (here) | MapLight (published) | "
             "difference | tolerance | within |", "|---|---|---:|---:|---:|---:|---:|---|"]
    within = compared = 0
    for task, seeds in sorted(cells.items()):
        entry = next((e for e in leaderboard["tasks"].get(task, {}).get("entries", [])
                      if e["model"] == PUBLISHED), None)
        if entry is None:
            continue
        values = np.array([seeds[s] for s in sorted(seeds)])
        mean, sd = float(np.round(values.mean(), 3)), float(np.round(values.std(), 3))
        difference = mean - entry["mean"]
        tolerance = max(float(entry.get("sd") or 0.0), MIN_TOLERANCE)
        ok = abs(difference) <= tolerance + 1e-9
        within += ok
        compared += 1
        lines.append(f"| {task} | {leaderboard['tasks'][task]['metric']} | {len(values)} | "
                     f"{mean:.3f} ± {sd:.3f} | {entry['mean']:.3f} ± {entry.get('sd', 0):.3f} "
                     f"| {difference:+.3f} | {tolerance:.3f} | {'yes' if ok else '**no**'} |")
    lines += ["", f"Within tolerance on {within} of {compared} tasks."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path, help="results.jsonl of the row")
    args = parser.parse_args(argv)
    from importlib.resources import files

    leaderboard = json.loads((files("exlm_chem.data") / "tdc_admet_leaderboard.json")
                             .read_text(encoding="utf-8"))
    print("\n".join(reproduction_table(row_cells(args.records), leaderboard)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
