"""MoleculeNet regression sets (ESOL, FreeSolv, Lipophilicity): registry entries as plain
data (:func:`exlm_chem.data.moleculenet.regression_specs` builds their ``DatasetSpec``).

They load through :func:`exlm_chem.data.moleculenet.load_moleculenet` like the classification
sets (same search order, checksums, invalid-row records); what differs is that labels
are real numbers (empty = missing, anything else that is not a finite number is an error
naming the row) and that a data folder may keep them in a ``regression/`` folder, also
found next to a ``$EXLM_CHEM_DATA`` that points at the ``moleculenet/`` folder.

Checksums are the sha256 of the decompressed DeepChem CSVs; provenance in
``../shared/data/regression/SOURCES.md``. The md5 of the S3 files is not known.
"""

from __future__ import annotations

_S3 = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/"

#: name -> (url, cache file name, accepted local names, SMILES column, target column,
#: content sha256, revision note)
REGRESSION_SETS = {
    "esol": (_S3 + "delaney-processed.csv", "delaney-processed.csv",
             ("esol.csv.gz", "esol.csv", "delaney-processed.csv", "delaney-processed.csv.gz"),
             "smiles", "measured log solubility in mols per litre",
             "8c06a76f0c6487d29ab0f903e6a7a7139f189ab3c1178f159c8be8964602f189",
             "DeepChem delaney-processed.csv (LF), 1128 rows"),
    "freesolv": (_S3 + "SAMPL.csv", "SAMPL.csv",
                 ("freesolv.csv.gz", "freesolv.csv", "SAMPL.csv", "SAMPL.csv.gz"),
                 "smiles", "expt",
                 "ab5895d914ee87cb563bd7b9611e869527bba45bec6b014d34dc495a0f9dcb72",
                 "DeepChem SAMPL.csv (CRLF), 642 rows (the MoleculeNet count)"),
    "lipo": (_S3 + "Lipophilicity.csv", "Lipophilicity.csv",
             ("lipo.csv.gz", "lipo.csv", "Lipophilicity.csv", "Lipophilicity.csv.gz"),
             "smiles", "exp",
             "aed41590cb30609d51d8e08ad3ff06495a76e80e211358801f596b10da69bacd",
             "DeepChem Lipophilicity.csv (CRLF), 4200 rows"),
}


REGRESSION_NAMES: tuple[str, ...] = tuple(REGRESSION_SETS)
