"""What the pre-trained encoder buys on TDC ADMET: the default estimators against the same
estimators from random weights (``pretrained=None``), per task, on the seeds both rows have.

Reads the records of ``benchmarks/results/tdc_admet/records/*/results.jsonl`` and prints a
markdown table: the mean test metric and the mean held-out valid metric of each row over
the shared seeds (the report's rows average all of each row's seeds, 5 against 3). The
default row is the 0.4.0 regressor's cells and the classifier's (0.3.0 and 0.4.0 share
it: :data:`exlm_chem.benchmark.report_tdc.SAME_CLASSIFIER`).

Usage::

    python benchmarks/tdc_pretrained_vs_random.py
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

RECORDS = Path(__file__).resolve().parent / "results" / "tdc_admet" / "records"


def _row(record: dict) -> str | None:
    """"random", "shipped" (the newest default row, with the classifier cells the report
    counts in it) or None."""
    from exlm_chem.benchmark.report_tdc import SAME_CLASSIFIER

    label, newest = record["label"], list(SAME_CLASSIFIER.values())[-1]
    if label.endswith("pretrained=None)"):
        return "random"
    if label.endswith(newest) or (record["task_type"] == "classification"
                                  and any(label.endswith(old) for old in SAME_CLASSIFIER)):
        return "shipped"
    return None


def main() -> int:
    cells: dict[tuple[str, str], dict[int, tuple[float, float, str]]] = defaultdict(dict)
    for path in sorted(RECORDS.glob("*/results.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            row = _row(record) if record["method"] == "exlm_defaults" else None
            if row is not None and record.get("score") is not None:
                # a cell run twice: the later record stands, as in the report
                cells[record["task"], row][record["seed"]] = (
                    record["score"], record["valid_score"], record["metric"])
    print("| task | metric | seeds | test: shipped | test: random | valid: shipped | "
          "valid: random |")
    print("|---|---|---|---:|---:|---:|---:|")
    for task in sorted({task for task, _ in cells}):
        shipped, random = cells.get((task, "shipped"), {}), cells.get((task, "random"), {})
        seeds = sorted(set(shipped) & set(random))
        if not seeds:
            continue

        def mean(row: dict, i: int, seeds: list[int] = seeds) -> float:
            return sum(row[s][i] for s in seeds) / len(seeds)

        print(f"| {task} | {shipped[seeds[0]][2]} | {' '.join(map(str, seeds))} | "
              f"{mean(shipped, 0):.3f} | {mean(random, 0):.3f} | {mean(shipped, 1):.3f} | "
              f"{mean(random, 1):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
