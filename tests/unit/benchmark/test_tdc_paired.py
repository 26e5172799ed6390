"""benchmarks/tdc/tdc_paired.py: two rows' TDC cells paired by task and seed."""

from __future__ import annotations

import json

import pytest
from repo_scripts import load_script


def _write(path, cells):
    path.write_text("".join(json.dumps(dict(zip(("task", "seed", "metric", "valid_score",
                                                 "score"), c, strict=True))) + "\n"
                            for c in cells))
    return path


def test_pairs_by_task_and_seed_and_counts_who_is_ahead_on_valid(tmp_path):
    paired = load_script("benchmarks/tdc/tdc_paired.py")
    base = _write(tmp_path / "a.jsonl", [("vdss", 1, "spearman", 0.5, 0.6),
                                         ("vdss", 2, "spearman", 0.4, 0.6),
                                         ("vdss", 3, "spearman", 0.9, 0.9),  # no pair
                                         ("caco2", 1, "mae", 0.30, 0.30),
                                         ("caco2", 1, "mae", 0.40, 0.40)])  # the newest
    lever = _write(tmp_path / "b.jsonl", [("vdss", 1, "spearman", 0.6, 0.5),
                                          ("vdss", 2, "spearman", 0.4, 0.7),
                                          ("caco2", 1, "mae", 0.35, 0.20),
                                          ("herg", 1, "roc_auc", 0.8, 0.8)])  # no pair
    rows = paired.paired_table(paired._cells(base), paired._cells(lever))[2:]
    # caco2: MAE 0.40 -> 0.35 is +12.5 %; vdss: 0.45 -> 0.50 is +11.1 %
    assert rows[-2:] == ["", "Over 2 tasks the lever's mean valid metric is ahead on 2, "
                         "behind on 0, level on 0; mean relative change +11.8%."]
    assert rows[:-2] == [
        "| caco2 | mae | 1 | 0.400 | 0.350 | 0.400 | 0.200 | 1 of 1 (0 equal), valid |",
        "| vdss | spearman | 2 | 0.450 | 0.500 | 0.600 | 0.600 | 1 of 2 (1 equal), valid |",
    ]


def test_rows_without_a_valid_part_are_compared_on_test_and_say_so(tmp_path):
    paired = load_script("benchmarks/tdc/tdc_paired.py")
    base = _write(tmp_path / "a.jsonl", [("herg", 1, "roc_auc", None, 0.75),
                                         ("herg", 2, "roc_auc", None, 0.25),
                                         ("vdss", 1, "spearman", 0.5, 0.6)])
    lever = _write(tmp_path / "b.jsonl", [("herg", 1, "roc_auc", None, 0.5),
                                          ("herg", 2, "roc_auc", None, 0.5),
                                          ("vdss", 1, "spearman", 0.6, 0.5)])
    rows = paired.paired_table(paired._cells(base), paired._cells(lever))[2:]
    assert rows[0] == "| herg | roc_auc | 2 | – | – | 0.500 | 0.500 | 1 of 2 (0 equal), test |"
    assert rows[1].endswith("| 1 of 1 (0 equal), valid |")
    assert rows[2:] == ["", "Over 1 tasks the lever's mean valid metric is ahead on 1, behind "
                        "on 0, level on 0; mean relative change +20.0%.",
                        "", "Over 1 tasks the lever's mean test metric is ahead on 0, behind "
                        "on 0, level on 1; mean relative change +0.0%."]


def test_from_parts_scores_the_kept_members_under_the_default_mix(tmp_path):
    import numpy as np
    from scipy.special import expit, logit
    from sklearn.metrics import roc_auc_score

    paired = load_script("benchmarks/tdc/tdc_paired.py")
    results = _write(tmp_path / "results.jsonl", [("herg", 1, "roc_auc", 0.1, 0.1),
                                                  ("herg", 2, "roc_auc", 0.1, 0.1)])
    rng = np.random.default_rng(0)
    labels = np.array([0, 1, 0, 1, 1, 0, 1, 0], dtype=np.float64)[:, None]
    network, trees = rng.uniform(0.05, 0.95, (2, 8, 1))
    (tmp_path / "parts").mkdir()
    np.savez(tmp_path / "parts" / "herg_seed1.npz", test_network=network, test_trees=trees,
             test_labels=labels)  # fitted on train_val: no valid part
    cells = paired._cells(results)
    mixed = paired.from_parts(cells, results, "mix")
    expected = roc_auc_score(labels[:, 0], expit(0.25 * logit(network) + 0.75 * logit(trees))[:, 0])
    assert mixed[("herg", 1)]["score"] == expected
    assert mixed[("herg", 1)]["valid_score"] is None
    assert mixed[("herg", 2)]["score"] is None  # no parts file: nothing to score again
    alone = paired.from_parts(cells, results, "network")
    assert alone[("herg", 1)]["score"] == roc_auc_score(labels[:, 0], network[:, 0])


def test_from_parts_can_mix_a_network_with_another_rows_trees(tmp_path):
    import numpy as np
    from scipy.stats import spearmanr

    paired = load_script("benchmarks/tdc/tdc_paired.py")
    rng = np.random.default_rng(1)
    labels, network, own, other = rng.normal(size=(4, 9, 1))
    for row, trees in (("a", own), ("b", other)):
        (tmp_path / row / "parts").mkdir(parents=True)
        np.savez(tmp_path / row / "parts" / "vdss_lombardo_seed1.npz", test_network=network,
                 test_trees=trees, test_labels=labels)
    results = _write(tmp_path / "a" / "results.jsonl", [("vdss_lombardo", 1, "spearman",
                                                         None, 0.0)])
    _write(tmp_path / "b" / "results.jsonl", [("vdss_lombardo", 1, "spearman", None, 0.0)])
    cells = paired._cells(results)
    crossed = paired.from_parts(cells, results, "mix", tmp_path / "b" / "results.jsonl")
    expected = spearmanr(labels[:, 0], (0.25 * network + 0.75 * other)[:, 0]).statistic
    assert crossed[("vdss_lombardo", 1)]["score"] == pytest.approx(expected)
    own_mix = paired.from_parts(cells, results, "mix")[("vdss_lombardo", 1)]["score"]
    assert own_mix != pytest.approx(expected)


def test_from_parts_mixes_at_the_weight_asked_for(tmp_path):
    import numpy as np
    from scipy.stats import spearmanr

    paired = load_script("benchmarks/tdc/tdc_paired.py")
    rng = np.random.default_rng(2)
    labels, network, trees = rng.normal(size=(3, 11, 1))
    (tmp_path / "parts").mkdir()
    np.savez(tmp_path / "parts" / "vdss_lombardo_seed1.npz", test_network=network,
             test_trees=trees, test_labels=labels)
    results = _write(tmp_path / "results.jsonl", [("vdss_lombardo", 1, "spearman", None, 0.0)])
    cells = paired._cells(results)
    at = {w: paired.from_parts(cells, results, "mix", weight=w)[("vdss_lombardo", 1)]["score"]
          for w in (0.4, 1.0)}
    assert at[0.4] == pytest.approx(spearmanr(labels[:, 0],
                                              (0.6 * network + 0.4 * trees)[:, 0]).statistic)
    assert at[1.0] == pytest.approx(spearmanr(labels[:, 0], trees[:, 0]).statistic)
    assert at[0.4] != pytest.approx(at[1.0])
