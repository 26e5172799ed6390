"""Running the fenced examples of README.md and of the docs site (``docs/**/*.md``).

Shared by ``test_readme.py`` and ``test_site.py``; the blocks are found by
``scripts/readme_blocks.py``, so one marker rule holds for both:

- a block right after ``<!-- readme-test: skip: REASON -->`` is not run, for that reason;
- a ``python`` block runs in the namespace of its page (earlier blocks' names included),
  seeded by :func:`seed_namespace` with small real inputs;
- a ``bash`` block runs command by command (``exlm-chem`` in this process through
  ``exlm_chem.cli.main``, ``torchrun`` as a subprocess) in a scratch folder made by
  :func:`make_scratch`; ``...`` stands for the arguments of the previous command of the same
  kind on the page, as a reader would take it. Where an example would take minutes it runs
  as printed with options appended (argparse keeps an option's last value): :data:`SHORTEN`
  lists them with the reason.
- The ADMET panel's examples (the README's ``## ADMET panel`` section, the page
  ``guide/admet.md``, any block that names ``exlm_chem.admet`` or ``exlm-chem admet``) run
  only once the panel is built (:data:`ADMET_MANIFEST` exists); until then they are skipped
  with that reason (:func:`admet_skip_reason`).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from repo_scripts import load_script

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
ADMET_MANIFEST = REPO / "models" / "admet" / "manifest.json"
readme_blocks = load_script("scripts/readme_blocks.py")

TINY_PRETRAIN = ["--preset", "tiny", "--max-steps", "3", "--corpus-limit", "300",
                 "--valid-size", "20", "--max-tokens", "1024", "--warmup-steps", "1",
                 "--no-hygiene", "--no-progress"]
# (command pattern, options appended, why); "{tiny}" = the test checkpoint
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
RUNNABLE = ("exlm-chem", "torchrun")  # what a bash block may hold to run here
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


# ----------------------------------------------------------------------------- blocks
def headings(path: Path) -> list[tuple[int, str]]:
    """(1-based line, text) of every Markdown heading of ``path``, outside code fences."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            found.append((number, match.group(2)))
    return found


def section_of(path: Path, line: int) -> str:
    """The heading a block at ``line`` stands under ("" before the first one)."""
    above = [text for number, text in headings(path) if number < line]
    return above[-1] if above else ""


def is_admet(path: Path, block: Any) -> bool:
    """Whether ``block`` shows the ADMET panel (see the module docstring)."""
    return (path.resolve() == (DOCS / "guide" / "admet.md").resolve()
            or "ADMET panel" in section_of(path, block.line)
            or "exlm_chem.admet" in block.code or "exlm-chem admet" in block.code)


def admet_skip_reason() -> str | None:
    """Why the ADMET panel's examples cannot run yet, or None once they can."""
    if ADMET_MANIFEST.is_file():
        return None
    return (f"the ADMET panel is not built yet ({ADMET_MANIFEST.relative_to(REPO)} does not "
            "exist): its examples run once it does")


def runnable(blocks: list) -> list:
    """The blocks a docs test runs: not between ci markers, not marked skip."""
    return [b for b in blocks if b.ci is None and b.skip is None]


# ----------------------------------------------------------------------------- python
def seed_namespace(bbbp: pd.DataFrame) -> dict[str, Any]:
    """The names the Python examples take as given: 60 BBBP molecules of both classes, a
    continuous target, and a few DAG tensors for the loss example."""
    import torch

    smiles = bbbp["smiles"].tolist()
    generator = torch.Generator().manual_seed(0)
    emissions = torch.randn(2, 4, 8, generator=generator).log_softmax(-1)
    transitions = torch.randn(2, 8, 8, generator=generator).log_softmax(-1)  # v <= u ignored
    return {"train_smiles": smiles[:40], "y_train": bbbp["p_np"].to_numpy()[:40],
            "test_smiles": smiles[40:50], "y_test": bbbp["p_np"].to_numpy()[40:50],
            "smiles": smiles[:20],
            # a continuous target for the regressor examples: SMILES length is learnable
            "logs_train": np.array([len(s) for s in smiles[:40]], dtype=float),
            "emissions": emissions, "log_transitions": transitions,
            "target_lengths": torch.tensor([4, 3]), "state_lengths": torch.tensor([8, 6])}


def run_python(block: Any, where: str, namespace: dict[str, Any]) -> None:
    code = compile(block.code, where, "exec")
    exec(code, namespace)  # a failure's traceback names the page and line


# ----------------------------------------------------------------------------- bash
def commands(block: Any) -> list[list[str]]:
    """Shell words of each command line (continuations joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", block.code)
    return [words for line in text.splitlines() if (words := shlex.split(line, comments=True))]


def subcommand(words: list[str]) -> tuple[str, int]:
    """What a command runs ("fit", "text glue", "pretrain") and where its options start."""
    if words[0] == "torchrun":
        return "pretrain", words.index("pretrain") + 1
    if words[0] != "exlm-chem":
        pytest.fail(f"no rule to run `{words[0]}` here; teach tests/docs/doc_examples.py")
    n = 3 if words[1] in ("text", "data", "corpus") else 2
    return " ".join(words[1:n]), n


def shorten(words: list[str], tiny: dict[str, str]) -> list[str]:
    line = " ".join(words)
    for old, new in SUBSTITUTE:
        line = line.replace(old, new)
    words = shlex.split(line)
    for pattern, extra, _why in SHORTEN:
        if re.search(pattern, line):
            words += [e.format(**tiny) for e in extra]
    return words


def run_bash(block: Any, where: str, previous: dict[str, list[str]], tiny: Path) -> None:
    """Run each command of ``block``; ``previous`` holds the last arguments of each kind of
    command on the page (for ``...``) and is updated."""
    from exlm_chem.cli import main

    for words in commands(block):
        kind, at = subcommand(words)
        if "..." in words:  # "the previous command of this kind", then the new options
            dots = words.index("...")
            words = [*words[:dots], *previous[kind], *words[dots + 1:]]
        previous[kind] = words[at:]
        here = f"{where}: {' '.join(words)[:120]}"
        words = shorten(words, {"tiny": str(tiny)})
        if words[0] == "exlm-chem":
            assert main(words[1:]) == 0, here
        else:  # torchrun
            torchrun = Path(sys.executable).with_name("torchrun")
            proc = subprocess.run([str(torchrun), *words[1:]], capture_output=True, text=True,
                                  timeout=600, env={**os.environ})
            assert proc.returncode == 0, f"{here}\n{proc.stderr[-3000:]}"


def make_scratch(root: Path, moleculenet_dir: Path, bbbp: pd.DataFrame) -> Path:
    """A folder holding every file the examples name (``mols.csv``, ``train.csv``, ``assay.csv``,
    ``glue_data/`` ...), with ``models/`` and ``../shared`` linked to the real ones."""
    work = root / "work"
    work.mkdir(parents=True)
    (root / "shared").symlink_to(moleculenet_dir.parent.parent, target_is_directory=True)
    (work / "models").symlink_to(REPO / "models", target_is_directory=True)
    bbbp.iloc[:20][["name", "smiles", "p_np"]].to_csv(work / "mols.csv", index=False)
    bbbp.iloc[:5][["name", "smiles"]].to_csv(work / "molecules.csv", index=False)  # ADMET
    bbbp.iloc[:60][["smiles", "p_np"]].to_csv(work / "assay.csv", index=False)  # its --add
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
