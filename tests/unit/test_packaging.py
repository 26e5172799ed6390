"""setup.cfg and environment.yml ask for the same packages (conda-forge names)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
# pip name -> conda-forge name, where they differ
CONDA_NAMES = {"torch": "pytorch", "torch-geometric": "pytorch_geometric"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _setup_cfg_requirements() -> dict[str, str]:
    """conda-forge name -> version specifier, over install_requires and every extra."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    lines = cfg["options"]["install_requires"].splitlines()
    for extra in cfg["options.extras_require"].values():
        lines += extra.splitlines()
    wanted: dict[str, str] = {}
    for line in filter(None, (line.strip() for line in lines)):
        req = Requirement(line)
        name = CONDA_NAMES.get(_normal(req.name), _normal(req.name))
        spec = str(req.specifier)
        assert wanted.get(name, spec) == spec, f"{name}: two different pins in setup.cfg"
        wanted[name] = spec
    return wanted


def _environment_yml() -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(name -> version spec, name -> build string, pip lines) of environment.yml."""
    specs, builds, pip_lines = {}, {}, []
    in_pip = False
    for raw in (REPO / "environment.yml").read_text(encoding="utf-8").splitlines():
        line = raw.split("#")[0].rstrip()
        item = re.match(r"^(\s*)- (.+)$", line)
        if not item:
            continue
        indent, text = len(item.group(1)), item.group(2).strip()
        if in_pip and indent > 2:
            pip_lines.append(text)
            continue
        in_pip = text == "pip:"
        if in_pip or text == "conda-forge":  # the channel, not a package
            continue
        # conda MatchSpec forms used here: "name", "name>=1.2", "name=3.11", "name >=1 build*"
        parts = text.split()
        name = re.match(r"[A-Za-z0-9_.-]+", parts[0]).group(0)
        specs[name] = parts[0][len(name):] + "".join(parts[1:2])
        if len(parts) > 2:
            builds[name] = parts[2]
    return specs, builds, pip_lines


def _version_key(spec: str) -> str:
    """">=2023.09" and ">=2023.9" are the same bound (conda compares numbers)."""
    return re.sub(r"\b0+(\d)", r"\1", spec.replace(" ", ""))


def test_environment_yml_lists_what_setup_cfg_asks_for():
    wanted = _setup_cfg_requirements()
    specs, _, pip_lines = _environment_yml()
    conda = {name: spec for name, spec in specs.items() if name not in ("python", "pip")}
    assert sorted(conda) == sorted(wanted)
    for name, spec in wanted.items():
        assert _version_key(conda[name]) == _version_key(spec), name
    assert pip_lines == ["-e ."]  # the package itself; its dependencies all come from conda


def test_environment_yml_pins_the_cpu_build_and_a_supported_python():
    specs, builds, _ = _environment_yml()
    assert builds == {"pytorch": "cpu*"}
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    minimum = cfg["options"]["python_requires"].removeprefix(">=")
    assert specs["python"] == f"={minimum}"  # the interpreter CI tests with pip
