"""exlm_chem: molecular property prediction from SMILES with ExLM.

Importing the package is cheap: torch, RDKit, deepchem, torch_geometric and triton are
imported only when the object that needs them is first used (PEP 562 lazy attributes).
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "SmilesTokenizer": "exlm_chem.data.tokenizer",
    "load_moleculenet": "exlm_chem.data.moleculenet",
    "MoleculeDataset": "exlm_chem.data.moleculenet",
    "DATASETS": "exlm_chem.data.moleculenet",
    "scaffold_split": "exlm_chem.data.splits",
    "scaffold_balanced_split": "exlm_chem.data.splits",
    "random_split": "exlm_chem.data.splits",
    "SplitIndices": "exlm_chem.data.splits",
    "ExLMConfig": "exlm_chem.model.config",
    "dag_logprob": "exlm_chem.dag",
    "dag_best_alignment": "exlm_chem.dag",
    "dataset_names": "exlm_chem.data.moleculenet",
    "InvalidSmilesError": "exlm_chem.errors",
    "ExLMMoleculeClassifier": "exlm_chem.sklearn.estimator",
    "ExLMMoleculeRegressor": "exlm_chem.sklearn.estimator",
    "ExLMEmbedder": "exlm_chem.sklearn.embedder",
    "FinetuneSettings": "exlm_chem.presets",
    "finetune_preset": "exlm_chem.presets",
    "mean_roc_auc": "exlm_chem.metrics",
    "mean_prc_auc": "exlm_chem.metrics",
    "embed": "exlm_chem.embedding",
    "iter_embeddings": "exlm_chem.embedding",
    "MoleculeModel": "exlm_chem.model.molecule_model",
    "explain": "exlm_chem.analysis",
    "masked_entropy": "exlm_chem.analysis",
    "screen": "exlm_chem.screening.run",
}

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = lazy_attributes("exlm_chem", _LAZY, globals())
