"""Old import paths of modules that moved into subpackages, kept working for user code.

Before the layout of ARCHITECTURE.md, every stage sat flat in ``exlm_chem/``. Scripts and
pickled estimators written then name paths such as ``exlm_chem.estimator``; a meta path
finder makes each old name import the module that now holds the code (the very same
module object, so ``isinstance``, monkeypatching and unpickling see one class). Nothing is
imported until an old name is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

# old dotted path -> the module that holds that code now
MOVED = {
    "exlm_chem.atomic_files": "exlm_chem.files.atomic_files",
    "exlm_chem.batching": "exlm_chem.data.batching",
    "exlm_chem.benchmark.tasks": "exlm_chem.data.tasks",
    "exlm_chem.budget": "exlm_chem.train.budget",
    "exlm_chem.collate": "exlm_chem.data.collate",
    "exlm_chem.collate_flat": "exlm_chem.data.collate_flat",
    "exlm_chem.corpus": "exlm_chem.data.corpus",
    "exlm_chem.corpus_prepare": "exlm_chem.data.corpus_prepare",
    "exlm_chem.debris": "exlm_chem.files.debris",
    "exlm_chem.download": "exlm_chem.data.download",
    "exlm_chem.estimator": "exlm_chem.sklearn.estimator",
    "exlm_chem.estimator_base": "exlm_chem.sklearn.base",
    "exlm_chem.estimator_inputs": "exlm_chem.sklearn.inputs",
    "exlm_chem.estimator_io": "exlm_chem.sklearn.persistence",
    "exlm_chem.featurize": "exlm_chem.data.featurize",
    "exlm_chem.finetune": "exlm_chem.train.finetune",
    "exlm_chem.finetune_data": "exlm_chem.data.finetune_data",
    "exlm_chem.finetune_net": "exlm_chem.train.finetune_net",
    "exlm_chem.finetune_settings": "exlm_chem.train.finetune_settings",
    "exlm_chem.fragments": "exlm_chem.data.fragments",
    "exlm_chem.hygiene": "exlm_chem.data.hygiene",
    "exlm_chem.inference_inputs": "exlm_chem.data.inference_inputs",
    "exlm_chem.micro_batches": "exlm_chem.train.micro_batches",
    "exlm_chem.moleculenet": "exlm_chem.data.moleculenet",
    "exlm_chem.moleculenet_regression": "exlm_chem.data.moleculenet_regression",
    "exlm_chem.objectives": "exlm_chem.train.objectives",
    "exlm_chem.output_owner": "exlm_chem.files.output_owner",
    "exlm_chem.pretrain": "exlm_chem.train.pretrain",
    "exlm_chem.pretrain_data": "exlm_chem.train.pretrain_data",
    "exlm_chem.probe": "exlm_chem.train.probe",
    "exlm_chem.recipes": "exlm_chem.train.recipes",
    "exlm_chem.safe_write": "exlm_chem.files.safe_write",
    "exlm_chem.splits": "exlm_chem.data.splits",
    "exlm_chem.summary": "exlm_chem.data.summary",
    "exlm_chem.tokenizer": "exlm_chem.data.tokenizer",
    "exlm_chem.uncertainty.augment": "exlm_chem.data.augment",
    "exlm_chem.training_state": "exlm_chem.train.training_state",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        # the target ran its own code when it was imported; the old name only points at it
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old dotted paths of :data:`MOVED` and loads their new modules."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (package import calls this)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
