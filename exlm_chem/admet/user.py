"""A user's own endpoint added to a copy of the panel.

:func:`add_endpoint` reads an in-house assay (a table with a SMILES and a label column),
fits it exactly as a shipped endpoint is fitted (:func:`~exlm_chem.admet.build.build_endpoint`:
the same member, held-out parts, calibration or intervals, domain and drug percentiles)
into a copy of a panel, and assembles that copy. The shipped panel is never changed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from exlm_chem.admet.endpoints import ENDPOINTS, Endpoint, EndpointData, merged_labels

__all__ = ["add_endpoint", "read_labels"]

_TASKS = ("auto", "classification", "regression")


def read_labels(path: str | os.PathLike[str], smiles_column: str = "smiles",
                target_column: str | None = None) -> tuple[list[str], np.ndarray, str]:
    """SMILES, labels [n] float64 and the target column's name from a table the package's
    reader takes (CSV, ``.smi``, Parquet, SDF).

    A row whose SMILES RDKit cannot read, or whose label is not a number, is an error
    naming every such row and why (nothing is dropped silently). Rows with an empty label
    are left out: they carry no label.
    """
    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.data.tables import open_table, read_table
    from exlm_chem.errors import InvalidRow, InvalidSmilesError

    columns = open_table(path).columns
    if target_column is None:
        others = [c for c in columns if c not in (smiles_column, "name")]
        if len(others) != 1:
            raise ValueError(f"{path}: name the label column with --target-column (columns: "
                             f"{', '.join(columns)})")
        target_column = others[0]
    table = open_table(path, {"--smiles-column": [smiles_column],
                              "--target-column": [target_column]})
    frame = read_table(table, [smiles_column, target_column], as_written=[smiles_column])
    labelled = frame[frame[target_column].notna()]
    bad: list[InvalidRow] = []
    labels = np.full(len(labelled), np.nan)
    for i, (row, cell) in enumerate(labelled[target_column].items()):
        try:
            labels[i] = float(cell)
        except ValueError:
            bad.append(InvalidRow(int(row), str(cell), f"label {cell!r} is not a number"))
    smiles = ["" if s is None else s for s in labelled[smiles_column]]
    checked = check_smiles(smiles)
    bad += [InvalidRow(int(row), smiles[i], checked.reasons[i])
            for i, row in enumerate(labelled.index) if not checked.valid[i]]
    if bad:
        raise InvalidSmilesError(sorted(bad), action=f"in {path}")
    return smiles, labels, target_column


def add_endpoint(name: str, path: str | os.PathLike[str], out: str | os.PathLike[str],
                 panel: str | os.PathLike[str] | None = None, smiles_column: str = "smiles",
                 target_column: str | None = None, task: str = "auto",
                 unit: str | None = None, direction: str | None = None,
                 group: str = "user") -> Path:
    """Fit endpoint ``name`` from the table at ``path`` into a copy of ``panel`` at ``out``.

    Parameters
    ----------
    name : str
        The new column's name: letters, digits and underscores, not a shipped endpoint's.
    path : path
        The assay: a SMILES column and a label column (0/1 or values).
    out : path
        The copy to write. A new folder gets a copy of ``panel``; an existing panel
        folder (an earlier ``add_endpoint``) gets the endpoint added or refitted.
    panel : path, optional
        The panel to copy (default :func:`~exlm_chem.admet.panel.default_panel_dir`).
    smiles_column, target_column : str
        The table's columns (``target_column``: the only other column by default).
    task : {"auto", "classification", "regression"}
        ``"auto"``: classification when every label is 0 or 1.
    unit, direction, group : str
        What the report and the units table say of the column.

    Returns
    -------
    Path
        ``out``, assembled (:func:`~exlm_chem.admet.assemble.assemble_panel`).
    """
    from exlm_chem.admet.assemble import assemble_panel
    from exlm_chem.admet.build import ENDPOINTS_DIR, build_endpoint
    from exlm_chem.admet.panel import default_panel_dir, is_panel
    from exlm_chem.files.checksums import file_sha256

    if not name.isidentifier() or name != name.lower():
        raise ValueError(f"endpoint name {name!r}: use lower-case letters, digits and "
                         "underscores (it becomes the table's column)")
    if name in {e.name for e in ENDPOINTS}:
        raise ValueError(f"{name!r} is a shipped endpoint; give yours another name")
    if task not in _TASKS:
        raise ValueError(f"task must be one of {_TASKS}, got {task!r}")
    source = Path(panel).expanduser() if panel is not None else default_panel_dir()
    out = Path(out).expanduser()
    if out.resolve() == source.resolve():
        raise ValueError(f"--out {out} is the panel itself; an endpoint is added to a copy")
    if not out.exists():
        if not is_panel(source):
            raise FileNotFoundError(f"no ADMET panel at {source} to copy")
        shutil.copytree(source, out)
    elif not is_panel(out):
        raise ValueError(f"{out} exists and is not a panel folder; give a new folder")
    smiles, labels, column = read_labels(path, smiles_column, target_column)
    if task == "auto":
        task = "classification" if np.isin(labels, (0.0, 1.0)).all() else "regression"
    if task == "classification" and not np.isin(labels, (0.0, 1.0)).all():
        raise ValueError(f"{path}: a classification endpoint's labels are 0 or 1")
    kept, merged = merged_labels(smiles, labels, task)
    endpoint = Endpoint(name, task, group,
                        unit or ("probability" if task == "classification" else "as in the file"),
                        direction or f"higher: {column} higher", f"user:{Path(path).name}",
                        f"your endpoint {name} ({column} of {Path(path).name})")
    data = EndpointData(kept, merged, file_sha256(path), frozenset())
    build_endpoint(endpoint, data, out / ENDPOINTS_DIR / name)
    assemble_panel(out)
    return out
