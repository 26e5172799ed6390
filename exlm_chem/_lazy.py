"""PEP 562 lazy attributes, so package imports stay cheap (no torch/RDKit until used)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any


class _Package(types.ModuleType):
    """A package with a public function named like the submodule that defines it.

    ``exlm_chem.embed`` is the function ``embed`` of the module ``exlm_chem/embed.py``.
    Importing a submodule binds it as an attribute of its package, which would replace
    the function by the module (``from exlm_chem import embed`` then gives a module);
    this class refuses that one binding. The submodule stays in ``sys.modules``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in self.__dict__.get(
            "_FUNCTIONS_NAMED_LIKE_SUBMODULES", ()
        ):
            return
        super().__setattr__(name, value)


def lazy_attributes(
    package: str, names: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` resolving ``names`` (name -> module).

    A resolved attribute is cached in ``namespace`` (the package's ``globals()``).
    Call it while the package is being imported (its module is in ``sys.modules``).
    """
    shadowed = frozenset(name for name, module in names.items() if module == f"{package}.{name}")
    if shadowed:
        namespace["_FUNCTIONS_NAMED_LIKE_SUBMODULES"] = shadowed
        sys.modules[package].__class__ = _Package

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
