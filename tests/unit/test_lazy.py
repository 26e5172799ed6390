"""Public names stay what they are, however the package's submodules get imported."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import types


def _fresh(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_public_function_stays_a_function_after_its_module_is_imported():
    # importing a submodule binds it on its package: a module named like a public function
    # (exlm_chem/embed.py once) would replace the function, and `embed(smiles, ...)` fail
    out = _fresh(
        "import exlm_chem\n"
        "exlm_chem.MoleculeModel\n"
        "import exlm_chem.embedding, exlm_chem.analysis.explanation\n"
        "from exlm_chem import embed, explain\n"
        "from exlm_chem.analysis import explain as explain2\n"
        "print(type(embed).__name__, type(explain).__name__, type(explain2).__name__,\n"
        "      type(exlm_chem.embed).__name__)\n"
    )
    assert out == "function function function function"


def test_no_public_name_is_the_name_of_a_submodule():
    import exlm_chem
    import exlm_chem.analysis

    for package in (exlm_chem, exlm_chem.analysis):
        submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
        assert not submodules & set(package._LAZY), package.__name__


def test_every_public_name_resolves_to_what_its_module_defines():
    import exlm_chem
    import exlm_chem.analysis
    import exlm_chem.model

    for package in (exlm_chem, exlm_chem.analysis, exlm_chem.model):
        for name, module in package._LAZY.items():
            value = getattr(package, name)
            assert value is getattr(sys.modules[module], name), f"{package.__name__}.{name}"
            assert not isinstance(value, types.ModuleType), f"{package.__name__}.{name}"


def test_package_import_loads_no_submodule_but_the_lazy_helper():
    out = _fresh("import sys, exlm_chem\n"
                 "print(sorted(m for m in sys.modules if m.startswith('exlm_chem.')))")
    assert out == "['exlm_chem._lazy']"
