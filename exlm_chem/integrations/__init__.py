"""Adapters to other cheminformatics libraries (:mod:`exlm_chem.integrations.deepchem`).

Importing this package imports none of them; each submodule imports its library.
"""
