"""benchmarks/README.md, the index of the benchmark scripts: it names every script, and every
path it links to exists.

A script nobody can find from the index is one whose result nobody can reproduce; a link
that points nowhere is an index that has drifted from the tree (a script or result moved).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BENCHMARKS = REPO / "benchmarks"
INDEX = BENCHMARKS / "README.md"
# [text](target), [text](<target with spaces>) and [text](target "title"); images too
LINK = re.compile(r'!?\[[^\]]*\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)')


def _scripts() -> list[Path]:
    """Every benchmark script (``*.py``, ``*.sh``) outside ``results/``."""
    return sorted(path for pattern in ("*.py", "*.sh") for path in BENCHMARKS.rglob(pattern)
                  if "results" not in path.relative_to(BENCHMARKS).parts)


def _is_helper(path: Path) -> bool:
    """A ``_name.py`` imported by a script of its own folder (``import _name`` or ``from
    _name import``): the scripts that import it are what the index names."""
    if not path.name.startswith("_") or path.suffix != ".py":
        return False
    imported = re.compile(rf"^\s*(?:import|from)\s+{re.escape(path.stem)}\b", re.MULTILINE)
    return any(imported.search(other.read_text(encoding="utf-8"))
               for other in path.parent.glob("*.py") if other != path)


def _links(text: str) -> list[str]:
    """The local targets the index links to: no URLs, no in-page anchors, fragment cut."""
    targets = []
    for bracketed, bare in LINK.findall(text):
        target = bracketed or bare
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_index_names_every_script():
    text = INDEX.read_text(encoding="utf-8")
    scripts = [path for path in _scripts() if not _is_helper(path)]
    assert len(scripts) > 10, "benchmarks/ lost its scripts, or the glob its way"
    unnamed = [path.relative_to(REPO).as_posix() for path in scripts
               if path.relative_to(REPO).as_posix() not in text]
    assert not unnamed, f"benchmarks/README.md does not name {unnamed}"


def test_every_underscore_file_is_a_helper_its_folder_imports():
    # the exemption above covers imported helpers only: a lone _script.py is named too
    lone = [path.relative_to(REPO).as_posix() for path in _scripts()
            if path.name.startswith("_") and not _is_helper(path)]
    assert not lone, f"not imported by a script of its folder: {lone}"


def test_every_link_of_the_index_exists():
    links = _links(INDEX.read_text(encoding="utf-8"))
    assert len(links) > 10, "the index links to its results"
    missing = [target for target in links if not (BENCHMARKS / target).exists()]
    assert not missing, f"benchmarks/README.md links to missing paths: {missing}"


def test_links_are_read_as_written():
    text = ('[a](results/x.md) [b](<results/y z.md>) ![c](results/p.png "title") '
            "[d](https://example.org/x) [e](#anchor) [f](results/r.md#section)")
    assert _links(text) == ["results/x.md", "results/y z.md", "results/p.png", "results/r.md"]
