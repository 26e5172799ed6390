"""PEP 562 lazy attributes, so package imports stay cheap (no torch/RDKit until used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(
    package: str, names: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` resolving ``names`` (name -> module).

    A resolved attribute is cached in ``namespace`` (the package's ``globals()``). No public
    name may be the name of one of the package's submodules: importing a submodule binds it
    as an attribute of its package and would replace the public name
    (``tests/unit/test_lazy.py`` checks this).
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", names))

    return __getattr__, __dir__
