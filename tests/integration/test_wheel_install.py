"""The built wheel works on its own: package data inside, no setuptools warnings.

The wheel is built from a copy of the sources (offline: ``--no-build-isolation`` with the
setuptools of the running environment), installed with pip into a fresh venv and run
from a folder outside the repository, so neither the source tree nor the editable
install can stand in for it. The fresh venv sees the running environment's dependencies
through a folder of links that leaves out every ``exlm_chem`` entry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DATA = ("vocab.txt", "paper_table1.json", "toxcast_tasks.txt", "tdc_admet_leaderboard.json")


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _dependencies_without_exlm_chem(folder: Path) -> Path:
    """Links to every entry of this environment's site-packages but exlm_chem's own."""
    folder.mkdir()
    sites = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    for site in map(Path, sites):
        for entry in site.iterdir():
            name = entry.name.lower()
            if "exlm_chem" in name or name.endswith(".pth") or (folder / entry.name).exists():
                continue  # .pth files would re-install the editable finder
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from a copy of the sources, and the build's output."""
    root = tmp_path_factory.mktemp("wheel_build")
    src = root / "src"
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "exlm_chem", src / "exlm_chem",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = root / "dist"
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--no-index", "-w", str(out), str(src)])
    wheels = list(out.glob("exlm_chem-*.whl"))
    assert len(wheels) == 1, proc.stdout
    return wheels[0], proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel; returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel_venv")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; "
                      "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    deps = _dependencies_without_exlm_chem(root / "deps")
    (site / "deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", str(wheel[0])])
    return env_dir / "bin"


def test_build_has_no_setuptools_warnings(wheel):
    _, output = wheel
    for phrase in ("is absent from the `packages` configuration", "SetuptoolsDeprecation",
                   "********"):
        assert phrase not in output, output


def test_wheel_holds_the_package_data(wheel):
    names = zipfile.ZipFile(wheel[0]).namelist()
    assert {f"exlm_chem/data/{f}" for f in PACKAGE_DATA} <= set(names)


@pytest.mark.slow  # ~20 s idle: two venv interpreters import torch and RDKit
def test_installed_wheel_runs_outside_the_repo(installed, moleculenet_dir, tmp_path, bbbp_rows):
    env = {**os.environ, "EXLM_CHEM_DATA": str(moleculenet_dir), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)  # nothing may point back at the source tree
    run = {"cwd": tmp_path, "env": env}
    where = _run([str(installed / "python"), "-c", "import exlm_chem, json; "
                  "from exlm_chem.benchmark.report_summary import paper_table; "
                  "from exlm_chem.presets import finetune_preset; "
                  "finetune_preset('bbbp'); paper_table(); print(exlm_chem.__file__)"], **run)
    assert where.stdout.strip().startswith(str(installed.parent))

    summary = _run([str(installed / "exlm-chem"), "data", "summary", "--datasets", "bbbp"],
                   **run)
    assert "| bbbp | s3 | 2050 | 2039 | 11 | 1 |" in summary.stdout

    bbbp_rows.to_csv(tmp_path / "train.csv", index=False)
    fit = _run([str(installed / "exlm-chem"), "fit", "train.csv", "--target-columns", "p_np",
                "--out", "model", "--pretrained", "none", "--preset", "tiny", "--settings",
                "bbbp", "--epochs", "2", "--batch-size", "16", "--device", "cpu",
                "--no-progress"], **run)
    assert fit.stdout.startswith("fit: read 40 rows from train.csv; trained on 40 rows")
    predict = _run([str(installed / "exlm-chem"), "predict", "model", "train.csv", "--out",
                    "pred.parquet", "--no-progress"], **run)
    assert "wrote 40 rows (p_np) to pred.parquet; 0 invalid" in predict.stdout
    assert len(pd.read_parquet(tmp_path / "pred.parquet")) == 40


@pytest.fixture
def bbbp_rows(moleculenet_dir) -> pd.DataFrame:
    """40 valid BBBP rows with both classes."""
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz")[["smiles", "p_np"]]
    return frame.iloc[200:240].reset_index(drop=True)
