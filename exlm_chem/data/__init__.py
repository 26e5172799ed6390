"""Files shipped inside the package: the SMILES vocabulary (``vocab.txt``) and the paper's
Table 1 (``paper_table1.json``). Read them with ``importlib.resources``."""
