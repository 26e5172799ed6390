"""MoleculeNet regression sets (ESOL, FreeSolv, Lipophilicity), as registry data.

They are :class:`~exlm_chem.data.moleculenet_sets.DatasetSpec` entries like the
classification sets and load through :func:`exlm_chem.data.moleculenet.load_moleculenet`
the same way (same search order, checksums, invalid-row records); what differs is that
labels are real numbers (empty = missing, anything else that is not a finite number is an
error naming the row) and that a data folder may keep them in a ``regression/`` folder,
also found next to a ``$EXLM_CHEM_DATA`` that points at the ``moleculenet/`` folder.

Checksums are the sha256 of the decompressed DeepChem CSVs; provenance in
``../shared/data/regression/SOURCES.md``. The md5 of the S3 files is not known.
"""

from __future__ import annotations

from exlm_chem.data.download import Revision
from exlm_chem.data.moleculenet_sets import DatasetSpec

__all__ = ["REGRESSION_NAMES", "REGRESSION_SETS"]

_S3 = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/"


def _regression(name: str, filename: str, local_names: tuple[str, ...], target: str,
                sha256_content: str, note: str) -> DatasetSpec:
    """A regression set on DeepChem's S3: one target column, one known revision."""
    return DatasetSpec(name, _S3 + filename, filename, local_names, "smiles", (target,),
                       (Revision("s3", sha256_content, None, note),),
                       task_type="regression", folder="regression")


REGRESSION_SETS: dict[str, DatasetSpec] = {
    "esol": _regression(
        "esol", "delaney-processed.csv",
        ("esol.csv.gz", "esol.csv", "delaney-processed.csv", "delaney-processed.csv.gz"),
        "measured log solubility in mols per litre",
        "8c06a76f0c6487d29ab0f903e6a7a7139f189ab3c1178f159c8be8964602f189",
        "DeepChem delaney-processed.csv (LF), 1128 rows"),
    "freesolv": _regression(
        "freesolv", "SAMPL.csv", ("freesolv.csv.gz", "freesolv.csv", "SAMPL.csv", "SAMPL.csv.gz"),
        "expt", "ab5895d914ee87cb563bd7b9611e869527bba45bec6b014d34dc495a0f9dcb72",
        "DeepChem SAMPL.csv (CRLF), 642 rows (the MoleculeNet count)"),
    "lipo": _regression(
        "lipo", "Lipophilicity.csv",
        ("lipo.csv.gz", "lipo.csv", "Lipophilicity.csv", "Lipophilicity.csv.gz"),
        "exp", "aed41590cb30609d51d8e08ad3ff06495a76e80e211358801f596b10da69bacd",
        "DeepChem Lipophilicity.csv (CRLF), 4200 rows"),
}

REGRESSION_NAMES: tuple[str, ...] = tuple(REGRESSION_SETS)
