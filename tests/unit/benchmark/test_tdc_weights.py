"""benchmarks/tdc/tdc_weights.py: weighting rules scored on the members' kept outputs."""

from __future__ import annotations

import numpy as np
from repo_scripts import load_script


def _parts(path, network, trees, labels, chosen):
    held = np.array([[0.2], [0.9], [0.6], [0.1]]), np.array([[0.4], [0.6], [0.3], [0.5]])
    np.savez(path, chosen_weight=np.array(chosen), valid_network=network, valid_trees=trees,
             valid_labels=labels, test_network=network, test_trees=trees, test_labels=labels,
             held_out_network=held[0], held_out_trees=held[1],
             held_out_labels=np.array([[0.0], [1.0], [1.0], [0.0]]))


def test_rules_are_scored_on_the_valid_part_and_ranked(tmp_path):
    script = load_script("benchmarks/tdc/tdc_weights.py")
    (tmp_path / "parts").mkdir()
    labels = np.array([[0.0], [1.0], [0.0], [1.0]])
    # the network ranks the molecules right, the trees mostly wrong: AUROC 1 and 0.25
    network, trees = np.array([[0.1], [0.9], [0.2], [0.8]]), np.array([[0.9], [0.1], [0.2], [0.8]])
    _parts(tmp_path / "parts" / "herg_seed1.npz", network, trees, labels, 0.25)
    scores = script.score_cells(tmp_path)
    assert scores["herg"]["network"][1] == 1.0 and scores["herg"]["trees"][1] == 0.25
    assert scores["herg"]["w=0.5"][1] == 0.875 and scores["herg"]["w=0.75"][1] == 0.75
    assert scores["herg"]["chosen"][1] == 1.0  # 0.75 * network + 0.25 * trees keeps the order
    # log-odds 0.25 * network + 0.75 * trees: 1.10, -1.10, -1.39, 1.39 -> 3 of 4 pairs
    assert scores["herg"]["w=0.75, logits"][1] == 0.75
    # held out: the network's AUROC is 1 (0.6, 0.9 above 0.1, 0.2), the trees' 0.25
    assert script.rule_weights(dict(np.load(tmp_path / "parts" / "herg_seed1.npz")),
                               True)["chosen, AUC"] == 0.0
    # held out, by log loss: the quarter (2.32) ahead of the trees alone (2.92)
    assert scores["herg"]["chosen of 0.75, 1"][1] == scores["herg"]["w=0.75"][1]
    lines = script.table(scores)
    assert lines[2].startswith("| herg | roc_auc | 1 | 1.000 | 0.250 | 0.875 | 0.750 | 1.000 |")
    # network, chosen and chosen by AUC share ranks 1-3; gains over the trees alone, over
    # w=0.75, over w=0.75 in log-odds
    assert ("| network | 2.00 | +300.00 %, 1 / 0 of 1 | – | +33.33 %, 1 / 0 of 1 |"
            " +33.33 %, 1 / 0 of 1 |") in lines
    assert ("| trees | 10.00 | +0.00 %, 0 / 0 of 1 | – | -66.67 %, 0 / 1 of 1 |"
            " -66.67 %, 0 / 1 of 1 |") in lines
    level = " | +200.00 %, 1 / 0 of 1 | – | +0.00 %, 0 / 0 of 1 | +0.00 %, 0 / 0 of 1 |"
    for rule in ("w=0.75", "w=0.75, logits", "chosen of 0.75, 1",
                 "chosen of 0.75, 1 past 400, logits", "auto"):  # 4 held out: no choice
        assert f"| {rule} | 7.00{level}" in lines
    test = script.score_cells(tmp_path, "test")  # the same arrays in the test part here
    assert test["herg"]["trees"][1] == 0.25


def test_auto_chooses_only_on_enough_held_out_molecules_beside_catboost(tmp_path):
    script = load_script("benchmarks/tdc/tdc_weights.py")
    labels = np.array([[0.0], [1.0], [1.0], [0.0]] * 100)  # 400 held out
    sure = np.where(labels == 1, 0.9, 0.1)  # the trees: right, sure
    arrays = {"chosen_weight": np.array(0.75), "held_out_network": 1 - sure,
              "held_out_trees": sure, "held_out_labels": labels}
    weights = script.rule_weights(arrays, True)
    assert weights["auto"] == weights["chosen of 0.75, 1 past 400, logits"] == 1.0
    many = {k: np.repeat(v, 13, axis=1) if v.ndim == 2 else v for k, v in arrays.items()}
    weights = script.rule_weights(many, True)  # 13 tasks: histogram boosting, no choice
    assert weights["auto"] == 0.75 and weights["chosen of 0.75, 1 past 400, logits"] == 1.0
    few = {k: v[:399] if v.ndim == 2 else v for k, v in arrays.items()}
    assert script.rule_weights(few, True)["auto"] == 0.75
