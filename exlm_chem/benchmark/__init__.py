"""The MoleculeNet benchmark runner: methods side by side, cell by cell, resumable.

Data flow: :mod:`.methods` turns the asked rows into :class:`~.runner.MethodSpec` objects;
:mod:`.runner` lists the (method, task, seed) cells not yet in ``results.jsonl``, loads
and splits each task once (:mod:`.tasks`), asks the method (:mod:`.rf`,
:mod:`.attentivefp`, :mod:`.encoders`) for test-set scores, scores them and appends one
:class:`~.records.CellRecord` per cell; :mod:`.report` turns that file into markdown and
CSV, :mod:`.report_plot` into the PNG chart.
Nothing here is imported by ``import exlm_chem``.
"""
