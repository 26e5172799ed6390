"""ARCHITECTURE.md matches the code: the layer rule, no import cycle, every module listed.

Imports are read by parsing the source (function-level imports count too), so the check
needs no torch and sees imports that run only on some paths.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "exlm_chem"
ARCHITECTURE = REPO / "ARCHITECTURE.md"


def layer_table(text: str) -> dict[str, int]:
    """``{module or package prefix: layer}`` from the ```layers block of ARCHITECTURE.md."""
    block = re.search(r"```layers\n(.*?)```", text, flags=re.S)
    assert block, "ARCHITECTURE.md has no ```layers block"
    table = {}
    for line in block.group(1).splitlines():
        number, names = line.split(":", 1)
        for name in names.split():
            table[name] = int(number)
    return table


def layer_of(module: str, table: dict[str, int]) -> int | None:
    """The layer of the longest table entry that is ``module`` or a package above it.

    The root ``exlm_chem`` stands for its ``__init__`` only: a new top-level module must
    be placed in the table, not fall into layer 0 unseen.
    """
    matches = [name for name in table if module == name
               or (name != "exlm_chem" and module.startswith(name + "."))]
    return table[max(matches, key=len)] if matches else None


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_imports() -> dict[str, set[str]]:
    """``{module: exlm_chem modules it imports}`` over every file of the package."""
    imports = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                if node.module == "exlm_chem":  # from exlm_chem import files
                    names |= {f"exlm_chem.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        imports[module_name(path)] = {n for n in names if n.split(".")[0] == "exlm_chem"}
    return imports


@pytest.fixture(scope="module")
def table() -> dict[str, int]:
    return layer_table(ARCHITECTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imports() -> dict[str, set[str]]:
    return package_imports()


def test_every_module_has_a_layer(table, imports):
    assert [m for m in imports if layer_of(m, table) is None] == []


def test_no_module_imports_from_a_layer_above_its_own(table, imports):
    upward = [f"{module} (layer {layer_of(module, table)}) imports {target} "
              f"(layer {layer_of(target, table)})"
              for module, targets in imports.items() for target in sorted(targets)
              if target in imports and layer_of(target, table) > layer_of(module, table)]
    assert upward == []


def test_imports_name_modules_that_exist(imports):
    known = set(imports)
    missing = [f"{module} -> {target}" for module, targets in imports.items()
               for target in targets
               if target not in known and target.rsplit(".", 1)[0] not in known]
    assert missing == []


def test_no_import_cycle(imports):
    graph = {m: {t for t in targets if t in imports and t != m} for m, targets in imports.items()}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            cycle = visit(nxt, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    cycles = [c for m in sorted(graph) if (c := visit(m, []))]
    assert cycles == []


def test_every_module_file_is_listed_in_architecture_md():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    listed = set(re.findall(r"`([\w/]+\.py)`", text))
    unlisted = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" and path.parent != PACKAGE:
            continue  # a subpackage is described by its folder's line
        if relative not in listed:
            unlisted.append(relative)
    assert unlisted == []
    assert sorted(p for p in listed if not p.startswith("tests/")
                  and not (PACKAGE / p).is_file()) == []


def test_layer_rule_catches_an_upward_import(table):
    """The check itself can fail: a data module importing the CLI is an upward import."""
    assert layer_of("exlm_chem.data.tokenizer", table) < layer_of("exlm_chem.cli.predict", table)
    assert layer_of("exlm_chem.files.safe_write", table) == 0
    assert layer_of("exlm_chem.nonexistent", table) is None
