"""PEP 562 lazy attributes, so package imports stay cheap (no torch/RDKit until used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(
    package: str, modules: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], dict[str, str]]:
    """``__getattr__``, ``__dir__`` and the name -> module map for ``package``.

    ``modules`` maps each defining module to its public names, space-separated. A resolved
    attribute is cached in ``namespace`` (the package's ``globals()``). No public name may be
    the name of one of the package's submodules: importing a submodule binds it as an
    attribute of its package and would replace the public name
    (``tests/unit/test_lazy.py`` checks this).
    """
    names = {name: module for module, listed in modules.items() for name in listed.split()}

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", names))

    return __getattr__, __dir__, names
