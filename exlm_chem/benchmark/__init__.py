"""The MoleculeNet benchmark runner: methods side by side, cell by cell, resumable.

Data flow: :mod:`.plan` lists the (method, task, seed) cells; :mod:`.runner` loads each
task once, asks a method (:mod:`.rf`, :mod:`.attentivefp`, :mod:`.encoders`) for test-set
scores, scores them and appends one :class:`~.records.CellRecord` per cell to
``results.jsonl``; :mod:`.report` turns that file into markdown and CSV,
:mod:`.report_plot` into the PNG chart.
Nothing here is imported by ``import exlm_chem``.
"""
