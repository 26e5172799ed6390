"""Every example in README.md runs, on tiny inputs.

How each fenced block is covered (``scripts/readme_blocks.py`` finds them):

- the two top commands, between ``<!-- ci:... -->`` markers, are run by ``.ci/run``;
- a block after ``<!-- readme-test: skip: REASON -->`` is not run here, for that reason;
- every ``python`` block runs, in README order, in one namespace seeded with small real
  inputs (BBBP molecules, a few DAG tensors);
- every ``bash`` block runs command by command in a scratch folder holding the files the
  examples name (``mols.csv``, ``train.csv``, ``glue_data/`` ...), with ``models/`` and
  ``../shared`` linked to the real ones. ``exlm-chem`` commands run in this process
  (``exlm_chem.cli.main``), ``torchrun`` as a subprocess; ``...`` stands for the
  arguments of the previous command of the same kind, as a reader would take it.

Where an example would take minutes, the command is run as printed with options appended
(argparse keeps an option's last value); :data:`SHORTEN` lists them with the reason. The
Python examples start from the tiny test checkpoint (``$EXLM_CHEM_MODEL``) instead of the
shipped one, because fine-tuning the shipped model for the example's 10 epochs takes
minutes on 2 CPU cores; the CLI examples use the shipped checkpoint (fewer epochs).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from repo_scripts import load_script

from exlm_chem.cli import main

REPO = Path(__file__).resolve().parents[2]
readme_blocks = load_script("scripts/readme_blocks.py")

BLOCKS = readme_blocks.readme_blocks(REPO / "README.md")
TINY_PRETRAIN = ["--preset", "tiny", "--max-steps", "3", "--corpus-limit", "300",
                 "--valid-size", "20", "--max-tokens", "1024", "--warmup-steps", "1",
                 "--no-hygiene", "--no-progress"]
# (README command pattern, options appended, why); "{tiny}" = the test checkpoint
SHORTEN = [
    (r"^exlm-chem fit ", ["--epochs", "2", "--no-progress"],
     "the default 30 epochs of the shipped model take minutes"),
    (r"^exlm-chem (embed|predict) ", ["--no-progress"], "quiet logs"),
    (r"^exlm-chem text pretrain ", ["--max-steps", "3", "--valid-size", "8", "--vocab-size",
                                    "300", "--min-frequency", "1", "--max-tokens", "512",
                                    "--warmup-steps", "1", "--no-progress"],
     "1000 steps and a 30k-piece vocabulary"),
    (r"^exlm-chem text glue ", ["--seeds", "0", "--epochs", "1", "--device", "cpu"],
     "5 seeds x 10 epochs"),
    (r"^exlm-chem pretrain ", TINY_PRETRAIN,
     "20000 steps of the small preset; corpus hygiene loads and splits all 7 sets"),
    (r"^torchrun ", [*TINY_PRETRAIN, "--out", "runs/ddp", "--log-every", "1"],
     "as above; its own folder, the previous run's is complete; every step logged"),
    (r"^exlm-chem benchmark (?!.*--report-only)(?!--tasks esol)",
     ["--tasks", "bbbp", "--seeds", "0", "--budget", "epochs=1", "--model", "{tiny}",
      "--methods", "exlm", "--no-progress"],
     "7 tasks x 3 seeds x 10 epochs of the shipped model take hours; one encoder row shows "
     "both modes (the MLM twin's cells are the same code, run in tests/cli; the forest on "
     "BBBP, seed 0, is CI's main job's own benchmark run)"),
    # the regression example: still regression (the classification rule above would make
    # it a second copy of the first example's BBBP run)
    (r"^exlm-chem benchmark --tasks esol ",
     ["--tasks", "freesolv", "--seeds", "0", "--methods", "rf", "--no-progress"],
     "chemprop's 50 epochs; the forest on the smallest of the three sets, one seed"),
]
SUBSTITUTE = [("--nproc_per_node 4", "--nproc_per_node 2")]  # 2 CPU cores in CI


def _blocks(lang: str) -> list:
    return [b for b in BLOCKS if b.lang == lang and b.ci is None and b.skip is None]


def test_every_block_is_run_somewhere():
    for block in BLOCKS:
        where = f"README.md:{block.line}"
        assert block.lang in ("bash", "python"), f"{where}: no test runs ```{block.lang}"
        if block.skip is not None:
            assert len(block.skip) > 20, f"{where}: say why the block is not run"
    assert [b.ci for b in BLOCKS if b.ci] == ["ci:main-job", "ci:test"]
    ci_script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/readme_blocks.py" in ci_script and "main-job test" in ci_script
    for name in ("ci:main-job", "ci:test"):
        command = readme_blocks.ci_block(name, REPO / "README.md").code.strip()
        assert "\n" not in command and "EXLM_CHEM_DATA=../shared/data/moleculenet" in command
    assert len(_blocks("python")) >= 5 and len(_blocks("bash")) >= 3


# ----------------------------------------------------------------------------- python
@pytest.fixture(scope="module")
def bbbp(moleculenet_dir) -> pd.DataFrame:
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz")
    return frame.iloc[300:360].reset_index(drop=True)  # valid rows, both classes


def _dag_inputs() -> dict:
    """Two samples for the loss example: emissions [2, 4, 8], transitions [2, 8, 8]."""
    import torch

    generator = torch.Generator().manual_seed(0)
    emissions = torch.randn(2, 4, 8, generator=generator).log_softmax(-1)
    transitions = torch.randn(2, 8, 8, generator=generator).log_softmax(-1)  # v <= u ignored
    return {"emissions": emissions, "log_transitions": transitions,
            "target_lengths": torch.tensor([4, 3]), "state_lengths": torch.tensor([8, 6])}


def test_python_examples_run_in_order(bbbp, tiny_checkpoint, monkeypatch, tmp_path):
    monkeypatch.setenv("EXLM_CHEM_MODEL", str(tiny_checkpoint))  # see the module docstring
    monkeypatch.chdir(tmp_path)
    smiles = bbbp["smiles"].tolist()
    bbbp[["smiles", "p_np"]].iloc[:20].to_csv(tmp_path / "mols.csv", index=False)  # DeepChem
    namespace = {"train_smiles": smiles[:40], "y_train": bbbp["p_np"].to_numpy()[:40],
                 "test_smiles": smiles[40:50], "y_test": bbbp["p_np"].to_numpy()[40:50],
                 "smiles": smiles[:20], **_dag_inputs(),
                 # a continuous target for the regressor example: SMILES length is learnable
                 "logs_train": np.array([len(s) for s in smiles[:40]], dtype=float)}
    for block in _blocks("python"):
        code = compile(block.code, f"README.md:{block.line}", "exec")
        exec(code, namespace)  # a failure's traceback names the README line
        if "predict_uncertainty" in block.code:  # later blocks name other models clf
            ensemble, ensemble_proba = namespace["clf"], namespace["proba"]
    assert namespace["proba"].shape == (10, 2) and namespace["vectors"].shape[0] == 20
    # the uncertainty one-liner (n_models=5, tta=8, calibrate="isotonic") does what it says
    spread = ensemble.predict_uncertainty(namespace["test_smiles"])
    np.testing.assert_array_equal(spread.total, namespace["spread"])
    assert ((ensemble_proba >= 0) & (ensemble_proba <= 1)).all()
    assert ensemble_proba.shape == (10, 2) and ensemble.calibrator_.method == "isotonic"
    assert len(ensemble.models_) == 5 and ensemble.tta == 8 and spread.total.shape == (10,)
    assert (spread.members > 0).all() and (spread.tta > 0).any()
    assert 0 <= namespace["accuracy"] <= 1 and namespace["dataset"].X.shape[0] == 20
    assert namespace["logp"].shape == (2,) and bool(namespace["logp"].isfinite().all())


# ----------------------------------------------------------------------------- bash
def _commands(block) -> list[list[str]]:
    """Shell words of each command line (continuations joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", block.code)
    return [words for line in text.splitlines() if (words := shlex.split(line, comments=True))]


def _subcommand(words: list[str]) -> tuple[str, int]:
    """What a command runs ("fit", "text glue", "pretrain") and where its options start."""
    if words[0] == "torchrun":
        return "pretrain", words.index("pretrain") + 1
    if words[0] != "exlm-chem":
        pytest.fail(f"no rule to run `{words[0]}` here; teach tests/docs/test_readme.py")
    n = 3 if words[1] in ("text", "data") else 2
    return " ".join(words[1:n]), n


def _shorten(words: list[str], tiny: dict[str, str]) -> list[str]:
    line = " ".join(words)
    for old, new in SUBSTITUTE:
        line = line.replace(old, new)
    words = shlex.split(line)
    for pattern, extra, _why in SHORTEN:
        if re.search(pattern, line):
            words += [e.format(**tiny) for e in extra]
    return words


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, moleculenet_dir, bbbp) -> Path:
    """A folder holding every file the bash examples name."""
    root = tmp_path_factory.mktemp("readme")
    work = root / "work"
    work.mkdir()
    (root / "shared").symlink_to(moleculenet_dir.parent.parent, target_is_directory=True)
    (work / "models").symlink_to(REPO / "models", target_is_directory=True)
    bbbp.iloc[:20][["name", "smiles"]].to_csv(work / "mols.csv", index=False)
    bbbp.iloc[:40][["smiles", "p_np"]].to_csv(work / "train.csv", index=False)
    bbbp.iloc[40:60][["smiles"]].to_csv(work / "new.csv", index=False)
    (work / "mols.smi").write_text("".join(f"{s}\n" for s in bbbp["smiles"][:12]))
    glue = moleculenet_dir.parent.parent / "data" / "glue" / "RTE"
    rte = {part: pd.read_csv(glue / f"{part}.tsv", sep="\t", quoting=3, nrows=n)
           for part, n in (("train", 40), ("dev", 16))}
    (work / "glue_data" / "RTE").mkdir(parents=True)
    for part, frame in rte.items():
        frame.to_csv(work / "glue_data" / "RTE" / f"{part}.tsv", sep="\t", index=False,
                     quoting=3)
    sentences = pd.concat([rte["train"]["sentence1"], rte["train"]["sentence2"]])
    (work / "corpus.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return work


@pytest.mark.slow  # ~1 min: every CLI example, the benchmark and DDP pre-training included
@pytest.mark.parametrize("block", _blocks("bash"), ids=lambda b: f"line{b.line}")
def test_bash_examples_run(block, scratch, tiny_checkpoint, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tiny = {"tiny": str(tiny_checkpoint)}
    previous: dict[str, list[str]] = {}  # arguments of the last command of each kind
    for words in _commands(block):
        kind, at = _subcommand(words)
        if "..." in words:  # "the previous command of this kind", then the new options
            dots = words.index("...")
            words = [*words[:dots], *previous[kind], *words[dots + 1:]]
        previous[kind] = words[at:]
        where = f"README.md:{block.line}: {' '.join(words)[:120]}"
        words = _shorten(words, tiny)
        if words[0] == "exlm-chem":
            assert main(words[1:]) == 0, where
        else:  # torchrun
            torchrun = Path(sys.executable).with_name("torchrun")
            proc = subprocess.run([str(torchrun), *words[1:]], capture_output=True, text=True,
                                  timeout=600, env={**os.environ})
            assert proc.returncode == 0, f"{where}\n{proc.stderr[-3000:]}"
    _check_outputs(block, scratch)


def _check_outputs(block, work: Path) -> None:
    """A glance at what each block leaves behind (the examples' own claims)."""
    if "exlm-chem embed" in block.code:
        assert len(pd.read_parquet(work / "mols.parquet")) == 20
        pred = pd.read_csv(work / "pred.csv")
        assert len(pred) == 20 and pred["p_np"].between(0, 1).all()
        assert (work / "fig.png").stat().st_size > 0 and (work / "entropy" / "entropy.md").exists()
    if "exlm-chem pretrain" in block.code:
        for run in ("exlm", "mlm", "ddp"):
            assert (work / "runs" / run / "checkpoint" / "model.safetensors").is_file(), run
        # torchrun's two CPU processes took each step together, logged once
        ddp = work / "runs" / "ddp"
        records = [json.loads(x) for x in (ddp / "log.jsonl").read_text().splitlines()]
        assert [r["step"] for r in records if "loss" in r] == [1, 2, 3]
        assert json.loads((ddp / "checkpoint" / "metadata.json").read_text())["steps"] == 3
    if "exlm-chem benchmark" in block.code:
        report = (work / "runs" / "bench" / "report.md").read_text(encoding="utf-8")
        assert "(probe)" in report and "(finetune)" in report
        assert np.isfinite(pd.read_csv(work / "runs" / "bench" / "summary.csv")["roc_auc_mean"]
                           ).all()
        regression = pd.read_csv(work / "runs" / "reg" / "summary.csv")
        assert regression["task"].tolist() == ["freesolv"]
        assert np.isfinite(regression["rmse_mean"]).all()
