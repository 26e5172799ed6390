"""The command line answers ``--help`` and argument errors at once (no heavy imports).

How long that takes, against a bare interpreter, is measured by
``benchmarks/speed/cli_startup.py``; these tests check the cause.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from exlm_chem.cli import COMMANDS

# seconds each to import; numpy (~0.1 s) is allowed where a subcommand's choices need it
HEAVY = ("torch", "pandas", "rdkit", "sklearn", "matplotlib", "pyarrow", "triton", "deepchem",
         "torch_geometric", "transformers", "tokenizers")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def _loaded_heavy(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    proc = _python(code + f"\nimport sys\nprint([m for m in {heavy!r} if m in sys.modules])")
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1])


def test_building_the_parser_imports_nothing_heavy():
    code = "from exlm_chem.cli import build_parser\nbuild_parser()"
    assert _loaded_heavy(code, (*HEAVY, "numpy")) == []


def test_help_and_argument_errors_import_nothing_heavy():
    run_main = "from exlm_chem.cli import main\ntry:\n    main({})\nexcept SystemExit:\n    pass"
    for argv in (["--help"], ["nope"], ["text", "--help"]):
        assert _loaded_heavy(run_main.format(argv), (*HEAVY, "numpy")) == [], argv
    for argv in (["fit"], ["predict", "--help"], ["embed", "--bad"], ["benchmark", "--bad"]):
        assert _loaded_heavy(run_main.format(argv)) == [], argv


def _command_ids() -> list:
    words = [f"{c.group} {c.name}" if c.group else c.name for c in COMMANDS]
    return [pytest.param(w, id=w.replace(" ", "-")) for w in words]


@pytest.mark.parametrize("words", _command_ids())
def test_subcommand_help_imports_nothing_heavy(words: str):
    code = (f"from exlm_chem.cli import main\ntry:\n    main({words.split()!r} + ['--help'])\n"
            "except SystemExit:\n    pass")
    assert _loaded_heavy(code) == []


def test_pretrain_help_documents_each_option_from_its_field_comment():
    proc = subprocess.run([sys.executable, "-m", "exlm_chem.cli", "pretrain", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # argparse wraps lines
    for words in ("share of tokens masked", "weight of the descriptor-regression loss",
                  "keep the weights every N CPU-minutes"):
        assert words in text
