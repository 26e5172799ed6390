"""The model card's frozen-feature section (scripts/ship_checkpoint.py) from fake records.

Tiny probes.jsonl / results.jsonl files in the formats the study
(``benchmarks/pretraining/pretrain_cpu_study.py``) and the benchmark runner write; no model runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_scripts import load_script

SHA = "a" * 64  # the "shipped" weights' sha256
TASKS = ("bbbp", "bace", "clintox", "sider", "tox21")
ship = load_script("scripts/ship_checkpoint.py")


def _auc(**values: float) -> dict[str, float]:
    """A study record's roc_auc: the five tasks, "mean" and the study's "mean4" (BBBP,
    BACE, ClinTox, SIDER: not the card's mean without ClinTox)."""
    row = dict(values)
    row["mean"] = sum(row[t] for t in TASKS) / 5
    row["mean4"] = sum(row[t] for t in ("bbbp", "bace", "clintox", "sider")) / 4
    return row


def _study_record(arm: str, pooling: str, auc: dict, sha: str | None, d_model: int | None = 256,
                  **extra: object) -> dict:
    """A line of probes.jsonl, as pretrain_cpu_study._records writes it."""
    return {"arm": arm, "checkpoint": f"/runs/{arm}", "weights_sha256": sha, "step": 10,
            "tokens_seen": 1000, "cpu_seconds": 60.0, "recipe": None, "d_model": d_model,
            "objective": "exlm" if d_model else None, "probe_seconds": 1.0,
            "commit": "abc1234", "machine": "AMD EPYC, 2 cores, CPU only, torch threads 1",
            "load_average": "1 1 1", "split": "scaffold (paper), canonical SMILES",
            **extra, "pooling": pooling, "roc_auc": auc}


MODEL_MEAN = _auc(bbbp=0.70, bace=0.80, clintox=0.90, sider=0.60, tox21=0.74)
MODEL_BOS = _auc(bbbp=0.66, bace=0.76, clintox=0.86, sider=0.56, tox21=0.70)
CONTROL_0 = _auc(bbbp=0.70, bace=0.70, clintox=0.80, sider=0.60, tox21=0.70)
CONTROL_1 = _auc(bbbp=0.74, bace=0.74, clintox=0.90, sider=0.60, tox21=0.74)
DESCRIPTORS = _auc(bbbp=0.88, bace=0.82, clintox=0.66, sider=0.62, tox21=0.78)


def _study_file(path: Path, with_model: bool = True, with_descriptors: bool = True) -> Path:
    records = []
    if with_model:
        records += [_study_record("new-model", "mean", MODEL_MEAN, SHA),
                    _study_record("new-model", "bos", MODEL_BOS, SHA)]
    for seed, auc in ((0, CONTROL_0), (1, CONTROL_1)):
        records += [
            _study_record("random-init d256 exlm", "mean", auc, f"{seed}" * 64,
                          control_seed=seed),
            # another pooling and another width: never part of the d256 mean column
            _study_record("random-init d256 exlm", "bos", _auc(**dict.fromkeys(TASKS, 0.5)),
                          f"{seed}" * 64, control_seed=seed),
            _study_record("random-init d128 exlm", "mean", _auc(**dict.fromkeys(TASKS, 0.1)),
                          f"{seed + 5}" * 64, d_model=128, control_seed=seed),
        ]
    # a checkpoint of another arm: not this model's weights
    records.append(_study_record("other", "mean", _auc(**dict.fromkeys(TASKS, 0.99)), "b" * 64))
    if with_descriptors:
        records.append(_study_record(
            "rdkit2d descriptors (LR)", "none", DESCRIPTORS, None, d_model=None,
            features_sha256="c" * 64, n_features=217,
            feature_settings={"features": ["rdkit2d"], "rdkit_version": "2026.09.1",
                              "feature_scaling": "robust"}))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _rf_record(task: str, seed: int, roc_auc: float, split: str = "scaffold") -> dict:
    """A line of the runner's results.jsonl, as the committed rf_ecfp4 cells read."""
    return {"method": "rf_ecfp4", "label": "RF on ECFP4", "model": None, "mode": "supervised",
            "task": task, "seed": seed, "split": split, "roc_auc": roc_auc,
            "prc_auc": 0.5, "n_tasks_scored": 1, "per_task_roc_auc": [roc_auc],
            "n_train": 80, "n_valid": 10, "n_test": 10, "epochs": None, "best_epoch": None,
            "stopped_early": False, "budget": {"max_epochs": None, "max_minutes": None},
            "settings": {"n_estimators": 100, "radius": 2, "n_bits": 2048,
                         "min_samples_leaf": 1, "class_weight": "balanced", "n_jobs": 1},
            "wall_s": 1.0, "commit": "39f2dd1",
            "machine": "AMD EPYC, 2 cores, CPU only, torch threads 1",
            "finished_at": "2026-11-22T07:30:58+00:00"}


RF = {0: dict(bbbp=0.70, bace=0.84, clintox=0.80, sider=0.64, tox21=0.72),
      1: dict(bbbp=0.72, bace=0.86, clintox=0.76, sider=0.66, tox21=0.74)}


def _results_file(path: Path) -> Path:
    records = [_rf_record(t, seed, auc) for seed, row in RF.items() for t, auc in row.items()]
    records += [
        _rf_record("bbbp", 2, 0.10),  # seed 2 lacks the other tasks: left out
        _rf_record("muv", 0, 0.10),  # not a study task
        _rf_record("bbbp", 0, 0.10, split="scaffold_balanced"),  # another split
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _section(tmp_path: Path, pooling: str = "mean", **files: bool) -> str:
    sources = ship.StudySources(SHA, _study_file(tmp_path / "probes.jsonl", **files),
                                _results_file(tmp_path / "results.jsonl"), pooling)
    return "\n".join(ship._frozen_probe_section("new-model", {"d_model": 256,
                                                               "objective": "exlm"}, sources))


def _row(text: str, label: str) -> list[str]:
    """The cells of the table row ``label`` (after the label)."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"| {label} |")]
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


def test_section_numbers(tmp_path: Path) -> None:
    text = _section(tmp_path)
    assert "## Frozen-feature probe (issue 30's study protocol)" in text
    header = _row(text, "task")
    assert header[0] == "new-model, mean pooling (default)"
    assert header[1] == "new-model, bos pooling"
    assert header[2] == "random-init control, d 256, mean pooling (2 seeds)"
    assert header[3] == "RF on ECFP4 (2 seeds)"
    # bbbp: model mean / bos; control 70, 74 -> 72.0 ± 2.8 (sample sd); RF 70, 72;
    # descriptors
    assert _row(text, "bbbp") == ["70.0", "66.0", "72.0 ± 2.8", "71.0 ± 1.4", "88.0"]
    # mean of the five tasks, per seed first: model 74.8; control seeds 70.0 and 74.4
    # -> 72.2 ± 3.1; RF seeds 74.0 and 74.8 -> 74.4 ± 0.6
    assert _row(text, "**mean (5)**") == ["74.8", "70.8", "72.2 ± 3.1", "74.4 ± 0.6",
                                          "75.2"]
    # without ClinTox (BBBP, BACE, SIDER, Tox21), not the record's "mean4" (75.0): 71.0;
    # control seeds 67.5 and 70.5 -> 69.0 ± 2.1; RF 72.5 and 74.5 -> 73.5 ± 1.4
    assert _row(text, "**mean without ClinTox**") == ["71.0", "67.0", "69.0 ± 2.1",
                                                      "73.5 ± 1.4", "77.5"]
    assert "n/a" not in text


def test_section_provenance(tmp_path: Path) -> None:
    text = _section(tmp_path)
    lines = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert len(lines) == 5  # one per column
    assert all("commit" in ln and "command:" in ln for ln in lines)
    assert "pretrain_cpu_study.py probe models/new-model --arm new-model" in lines[0]
    assert "seeds 0, 1" in lines[2] and "same config" in lines[2]
    assert "random-init d256 exlm" in lines[2]
    assert "39f2dd1" in lines[3] and "--methods rf" in lines[3]
    assert "pretrain_cpu_study.py descriptors" in lines[4] and "2026.09.1" in lines[4]


def test_section_missing_columns_read_na(tmp_path: Path) -> None:
    sources = ship.StudySources(SHA, _study_file(tmp_path / "probes.jsonl", with_model=False,
                                                 with_descriptors=False),
                                tmp_path / "absent.jsonl", "mean")
    text = "\n".join(ship._frozen_probe_section("new-model", {"d_model": 256,
                                                              "objective": "exlm"}, sources))
    for label in (*TASKS, "**mean (5)**", "**mean without ClinTox**"):
        cells = _row(text, label)
        # model (both poolings), RF and descriptors: no records, no figure
        assert cells[0] == cells[1] == cells[3] == cells[4] == "n/a", label
        assert cells[2] != "n/a"  # the control is still there
    note = next(ln for ln in text.splitlines() if ln.startswith("n/a: no records"))
    assert "new-model, mean pooling" in note and "RF on ECFP4" in note
    assert "LR on RDKit 2D descriptors" in note
    assert "no record of these weights" in text and "no `rf_ecfp4`" in text


def test_control_of_another_width_is_not_used(tmp_path: Path) -> None:
    text = "\n".join(ship._frozen_probe_section(
        "small", {"d_model": 64, "objective": "exlm"},
        ship.StudySources(SHA, _study_file(tmp_path / "probes.jsonl"),
                          _results_file(tmp_path / "results.jsonl"))))
    assert _row(text, "bbbp")[2] == "n/a"
    assert "d_model 64" in text


def test_heading_names_the_pooling(tmp_path: Path) -> None:
    text = _section(tmp_path, pooling="bos")
    assert "Default pooling of this card: **bos**" in text
    header = _row(text, "task")
    assert header[0] == "new-model, bos pooling (default)"
    assert header[2] == "random-init control, d 256, bos pooling (2 seeds)"
    assert _row(text, "bbbp")[:3] == ["66.0", "70.0", "50.0 ± 0.0"]


def _meta(**extra: object) -> dict:
    """The metadata fields card() reads."""
    return {"objective": "exlm", "num_parameters": 10, "dtype": "float16",
            "corpus_sha256": {"a.smi": "0" * 64}, "steps": 5, "tokens_seen": 100,
            "wall_seconds": 60.0, "device": "cpu", "package_version": "0.1.0", **extra}


CONFIG = {"n_layers": 2, "d_model": 256, "n_heads": 4, "d_ffn": 512, "k_states": 2,
          "objective": "exlm"}
PROBE = {"bace": {"roc_auc": 0.7, "prc_auc": 0.6, "n_train": 8, "n_test": 2},
         "mean_roc_auc": 0.7}


def _source(inputs: str) -> dict:
    return {"where": "results.jsonl", "commit": "c", "machine": "m", "inputs": inputs,
            "version": 2, "command": "exlm-chem benchmark"}


@pytest.mark.parametrize(("meta", "heading"), [
    (_meta(probe_source=_source('{"expansion_k": 2, "pooling": "mean", "max_length": 256}')),
     "frozen mean-pooled embedding"),
    (_meta(probe_source=_source('{"expansion_k": 2, "pooling": "bos", "max_length": 256}')),
     "frozen BOS embedding"),
    (_meta(probe_source=_source('{"expansion_k": 2, "max_length": 256}')),
     "frozen BOS embedding"),  # records before the field: BOS, the only pooling then
    (_meta(probe_pooling="mean"), "frozen mean-pooled embedding"),  # --probe's figures
])
def test_runner_heading_takes_the_records_pooling(meta: dict, heading: str) -> None:
    text = ship.card("m", meta, CONFIG, PROBE)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("## Probe-mode benchmark")]
    assert heading in line


def test_card_carries_both_sections(tmp_path: Path) -> None:
    sources = ship.StudySources(SHA, _study_file(tmp_path / "probes.jsonl"),
                                _results_file(tmp_path / "results.jsonl"))
    text = ship.card("new-model", _meta(), CONFIG, PROBE, sources=sources)
    assert text.index("## Frozen-feature probe") < text.index("## Probe-mode benchmark")
    assert "| **mean (5)** | 74.8 |" in text
    assert "## Frozen-feature probe" not in ship.card("new-model", _meta(), CONFIG, PROBE)


def test_recipe_names_the_targets_and_their_handling() -> None:
    recipe = {"objective": "exlm", "mask_ratio": 0.3, "d_model": 256, "k_states": 2,
              "dropout": 0.1, "aux_weight": 5.0, "aux_clip": 3.0, "aux_share": 0.15}
    line = ship._recipe({"recipe": recipe, "descriptors": {"kind": "morgan", "count": 2048}})
    assert ("descriptor auxiliary loss x5.0 (2048 Morgan counts, targets clipped at ±3, "
            "0.15 of the columns per step; scaler in metadata.json)") in line
    plain = {**recipe, "aux_clip": None, "aux_share": 1.0}
    line = ship._recipe({"recipe": plain, "descriptors": {"kind": "rdkit2d", "count": 217}})
    assert "(217 RDKit 2D descriptors; scaler in metadata.json)" in line
    assert "no auxiliary loss" in ship._recipe({"recipe": {**recipe, "aux_weight": 0.0}})
    assert "objective exlm, " in line  # recipes from before token_weight: weight 1
    assert "objective exlm x0, " in ship._recipe({"recipe": {**recipe, "token_weight": 0.0}})
    assert "equivalence" not in line  # recipes from before contrast_weight: none
    both = {**plain, "contrast_weight": 1.0, "contrast_temperature": 0.1}
    assert ("scaler in metadata.json), SMILES-equivalence loss x1 (temperature 0.1), "
            in ship._recipe({"recipe": both, "descriptors": {"kind": "rdkit2d", "count": 217}}))
    assert "translation" not in line  # recipes from before translate_weight: none
    translated = ship._recipe({"recipe": {**plain, "translate_weight": 0.5},
                               "descriptors": {"kind": "rdkit2d", "count": 217}})
    assert ("scaler in metadata.json), translation to the canonical SMILES x0.5 (GRU decoder "
            "from the pooled states of a randomised SMILES)") in translated


def test_constants_match_the_study_script() -> None:
    """The card reads what the study writes: same tasks, same descriptor arm."""
    study = load_script("benchmarks/pretraining/pretrain_cpu_study.py")
    assert ship.STUDY_TASKS == study.TASKS
    assert ship.DESCRIPTOR_ARM == study.DESCRIPTOR_ARM
    assert set(ship.POOLINGS) == set(study.POOLINGS)


def test_preparation_row_names_what_preparation_removed() -> None:
    counts = {"lines": 200000, "unparsable_removed": 3, "duplicates_removed": 1204,
              "hygiene_removed": 8660, "molecules": 190133, "train": 188133, "valid": 2000}
    (row,) = ship._preparation_row(counts)
    assert row.startswith("| corpus preparation | 200,000 lines: 3 unparsable and 1,204 "
                          "duplicates")
    assert "8,660 benchmark molecules; 190,133 molecules (188,133 train / 2,000 valid)" in row
    assert ship._preparation_row(None) == []  # checkpoints from before corpus_counts
