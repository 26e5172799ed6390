"""Old flat import paths keep working: user scripts and pickles written before the layout."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

from exlm_chem._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_imports_the_module_that_holds_the_code(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_from_import_of_an_old_name():
    from exlm_chem.estimator import ExLMMoleculeClassifier

    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier as moved

    assert ExLMMoleculeClassifier is moved


def test_a_pickle_that_names_an_old_module_loads():
    """Pickles store the class's module path; one written before the move names the old one."""
    import numpy as np

    from exlm_chem.data.splits import SplitIndices

    data = pickle.dumps(SplitIndices(np.arange(2), np.arange(1), np.arange(1)), protocol=0)
    old = data.replace(b"exlm_chem.data.splits", b"exlm_chem.splits")
    assert old != data
    assert pickle.loads(old).train.tolist() == [0, 1]


def test_unknown_old_names_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("exlm_chem.no_such_module")


def test_old_paths_cost_nothing_at_package_import():
    code = ("import sys, exlm_chem; "
            "print(sorted(m for m in sys.modules if m.startswith('exlm_chem.')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "['exlm_chem._lazy', 'exlm_chem._moved']"
