"""Files shipped inside the package: the SMILES vocabulary (``vocab.txt``), the paper's
fine-tuning settings (``finetune_settings.json``, its Table 8) and its Table 1
(``paper_table1.json``). Read them with ``importlib.resources``."""
