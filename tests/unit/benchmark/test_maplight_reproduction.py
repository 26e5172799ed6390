"""benchmarks/tdc/maplight_reproduction.py: the catboost_maplight row against MapLight's
published figures, task by task, within the published sd or 0.02."""

from __future__ import annotations

import json

from repo_scripts import load_script

LEADERBOARD = {"tasks": {
    "herg": {"metric": "AUROC", "entries": [{"model": "MapLight", "mean": 0.871, "sd": 0.004},
                                            {"model": "Other", "mean": 0.9, "sd": 0.0}]},
    "ppbr_az": {"metric": "MAE", "entries": [{"model": "MapLight", "mean": 7.66, "sd": 0.058}]},
    "dili": {"metric": "AUROC", "entries": [{"model": "Other", "mean": 0.9, "sd": 0.0}]},
}}


def _records(path, cells):
    path.write_text("".join(json.dumps({"method": method, "split": split, "task": task,
                                        "seed": seed, "score": score}) + "\n"
                            for method, split, task, seed, score in cells))
    return path


def test_counts_the_tasks_within_the_published_sd_or_002(tmp_path):
    script = load_script("benchmarks/tdc/maplight_reproduction.py")
    path = _records(tmp_path / "r.jsonl", [
        ("catboost_maplight", "tdc_train_val", "herg", 1, 0.90),  # +0.029: outside 0.02
        ("catboost_maplight", "tdc_train_val", "herg", 2, 0.90),
        ("catboost_maplight", "tdc_scaffold", "herg", 3, 0.871),  # a held-out cell: not read
        ("gbt", "tdc_train_val", "herg", 4, 0.871),  # another row: not read
        ("catboost_maplight", "tdc_train_val", "ppbr_az", 1, 7.70),  # +0.04 < sd 0.058
        ("catboost_maplight", "tdc_train_val", "dili", 1, 0.9)])  # no MapLight entry
    lines = script.reproduction_table(script.row_cells(path), LEADERBOARD)
    rows = {line.split(" | ")[0][2:]: line for line in lines[2:-2]}
    assert set(rows) == {"herg", "ppbr_az"}
    assert "| 2 | 0.900 ± 0.000 |" in rows["herg"] and rows["herg"].endswith("| **no** |")
    assert "| +0.040 | 0.058 | yes |" in rows["ppbr_az"]
    assert lines[-1] == "Within tolerance on 1 of 2 tasks."
