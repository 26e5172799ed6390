"""exlm_chem: molecular property prediction from SMILES with ExLM.

Importing the package is cheap: torch, RDKit, deepchem, torch_geometric and triton are
imported only when the object that needs them is first used (PEP 562 lazy attributes).
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

__version__ = "0.5.5"

# defining module -> its public names
_MODULES = {
    "exlm_chem.data.tokenizer": "SmilesTokenizer",
    "exlm_chem.data.moleculenet": "load_moleculenet MoleculeDataset DATASETS dataset_names",
    "exlm_chem.data.splits": "scaffold_split scaffold_balanced_split random_split SplitIndices",
    "exlm_chem.model.config": "ExLMConfig",
    "exlm_chem.dag": "dag_logprob dag_best_alignment",
    "exlm_chem.errors": "InvalidSmilesError",
    "exlm_chem.sklearn.estimator": "ExLMMoleculeClassifier ExLMMoleculeRegressor",
    "exlm_chem.sklearn.embedder": "ExLMEmbedder",
    "exlm_chem.presets": "FinetuneSettings finetune_preset",
    "exlm_chem.metrics": "mean_roc_auc mean_prc_auc",
    "exlm_chem.embedding": "embed iter_embeddings",
    "exlm_chem.model.molecule_model": "MoleculeModel",
    "exlm_chem.analysis": "explain masked_entropy",
    "exlm_chem.screening.run": "screen",
}
__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem", _MODULES, globals())

__all__ = ["__version__", *_LAZY]
