"""Shared fixtures: where the real data lives.

CI points ``$EXLM_CHEM_DATA`` at ``../shared/data/moleculenet``; the pre-training corpus
and the other shared sets sit beside it. A test that needs a file that is not there fails
loudly (it is never skipped silently), because CI always has the mirror.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Triton reads this when it is first imported: without a GPU, kernels run in its CPU
# interpreter (that is how CI checks them against the torch reference).
if not Path("/dev/nvidiactl").exists():
    os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The README's test command passes a relative EXLM_CHEM_DATA (../shared/...). Tests symlink
# to it, change directory and start subprocesses elsewhere, so pin it to an absolute path
# once, relative to where pytest was started, before any test reads it.
for _name in ("EXLM_CHEM_DATA", "EXLM_CHEM_PRETRAIN_DATA"):
    if os.environ.get(_name):
        os.environ[_name] = str(Path(os.environ[_name]).expanduser().resolve())


# The costliest test files (CPU seconds, measured in CI), run first. pytest-xdist hands out
# whole files (--dist loadfile) in collection order, so one of these collected last would
# keep a worker busy for minutes while the other one has nothing left to do.
HEAVY_FIRST = (
    "tests/unit/data/test_splits.py",
    "tests/unit/sklearn/test_estimator_uncertainty.py",
    "tests/integration/test_pretrain.py",
    "tests/integration/test_gpu_scripts.py",
    "tests/unit/sklearn/test_estimator.py",
    "tests/docs/test_readme.py",
    "tests/reliability/test_fuzz_inputs.py",
    "tests/cli/test_benchmark_cli.py",
)


def pytest_collection_modifyitems(config, items) -> None:
    """The files of :data:`HEAVY_FIRST` first, in that order; every other file, and the
    tests inside each file, keep their order (the sort is stable)."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}

    def file_rank(item) -> int:
        return rank.get(item.path.relative_to(REPO).as_posix(), len(rank))

    items.sort(key=file_rank)


def _moleculenet_dir() -> Path:
    env = os.environ.get("EXLM_CHEM_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data" / "moleculenet"


@pytest.fixture(scope="session")
def moleculenet_dir() -> Path:
    path = _moleculenet_dir()
    assert path.is_dir(), f"MoleculeNet mirror not found at {path}; set EXLM_CHEM_DATA"
    return path


@pytest.fixture(scope="session")
def moleculenet_dataset(moleculenet_dir):
    """``get(name)``: ``load_moleculenet(name, moleculenet_dir)``, each set parsed once per
    session (MUV's 93k molecules take ~20-30 s on 2 cores, and two modules read them).
    Callers treat the datasets as read-only."""
    from exlm_chem.data.moleculenet import load_moleculenet

    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = load_moleculenet(name, moleculenet_dir)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def pretrain_dir() -> Path:
    env = os.environ.get("EXLM_CHEM_PRETRAIN_DATA")
    path = Path(env) if env else _moleculenet_dir().parent / "pretrain"
    assert path.is_dir(), f"pre-training corpus not found at {path}; set EXLM_CHEM_PRETRAIN_DATA"
    return path


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """Every test computes on one thread: torch, scikit-learn's OpenMP pool and BLAS
    (:func:`exlm_chem.threads.set_threads`). Tiny test models run fastest on one thread,
    and at two threads each, two pytest workers on two cores only spin-wait. Commands the
    tests run in-process or as subprocesses read ``$EXLM_CHEM_THREADS`` first, so it is
    pinned too."""
    from exlm_chem.threads import THREADS_ENV, set_threads

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(THREADS_ENV, "1")
        set_threads(1)
        yield


@pytest.fixture(scope="module")
def few_catboost_trees():
    """CatBoost fits 30 trees instead of its 1000 for the module's tests: for tests of the
    command line and the benchmark's plumbing around a default fit, which read its outputs'
    shapes and routes, not the trees' quality (the regressor's default fits 2 CatBoost
    models per target, twice)."""
    from exlm_chem.model.catboost_fit import CATBOOST_SETTINGS

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(CATBOOST_SETTINGS, "iterations", 30)
        yield


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, pretrain_dir) -> Path:
    """A tiny-preset checkpoint pre-trained for a few seconds on real MOSES SMILES."""
    from tiny_checkpoint import make_tiny_checkpoint

    out = tmp_path_factory.mktemp("tiny_pretrain")
    return make_tiny_checkpoint(out, pretrain_dir / "moses_train.smi.gz")


@pytest.fixture(scope="session")
def tiny_mlm_checkpoint(tmp_path_factory, pretrain_dir) -> Path:
    """The MLM twin of :func:`tiny_checkpoint`: same corpus, steps and seed."""
    from tiny_checkpoint import make_tiny_checkpoint

    out = tmp_path_factory.mktemp("tiny_pretrain_mlm")
    return make_tiny_checkpoint(out, pretrain_dir / "moses_train.smi.gz", objective="mlm")


#: Lines appended to 40 MOSES lines by :func:`messy_corpus`: phenol written Kekulé (RDKit's
#: canonical form is aromatic), ethanol written around its middle atom, then ethanol again
#: canonically and an exact copy of MOSES line 3 (the two duplicates).
MESSY_TAIL = ["OC1=CC=CC=C1", "C(C)O", "CCO"]


@pytest.fixture(scope="session")
def messy_corpus(tmp_path_factory, pretrain_dir) -> tuple[Path, list[str]]:
    """A SMILES file with non-canonical lines and two duplicates, and the molecules that
    preparing it must keep: its first occurrences as RDKit canonical SMILES, in order."""
    from exlm_chem.data.corpus import read_smiles_file

    moses = read_smiles_file(pretrain_dir / "moses_train.smi.gz", limit=40)
    path = tmp_path_factory.mktemp("messy") / "messy.smi"
    path.write_text("\n".join([*moses, *MESSY_TAIL, moses[3]]) + "\n")
    return path, [*moses, "Oc1ccccc1", "CCO"]  # MOSES lines are canonical already
