"""The seven MoleculeNet classification sets of the ExLM paper, as registry data.

Each :class:`DatasetSpec` says where a set comes from (DeepChem's S3 URL), which local
file names are accepted, which columns hold the SMILES and the labels, and the checksums
of every known published revision. :mod:`exlm_chem.data.moleculenet` finds, verifies and
loads the files; the regression sets' entries are in
:mod:`exlm_chem.data.moleculenet_regression`.
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

from exlm_chem.data.download import Revision

__all__ = ["DATASETS", "DatasetSpec"]

_S3 = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/"


class DatasetSpec(NamedTuple):
    """Where a MoleculeNet dataset comes from and how to read it.

    Attributes
    ----------
    name : str
        Registry key (lower case).
    url : str
        Canonical download URL (DeepChem's S3 bucket).
    filename : str
        Name the download is cached under.
    local_names : tuple of str
        File names accepted in a data directory, in the order they are tried.
    smiles_column : str
    task_columns : tuple of str
        Label columns, in file order (binary, or real values for regression).
    revisions : tuple of Revision
        Known published versions; a file must match one of them.
    task_type : str
        ``"classification"`` (labels 0/1) or ``"regression"`` (finite numbers).
    folder : str
        Sub-folder of a data directory that may hold the file.
    """

    name: str
    url: str
    filename: str
    local_names: tuple[str, ...]
    smiles_column: str
    task_columns: tuple[str, ...]
    revisions: tuple[Revision, ...]
    task_type: str = "classification"
    folder: str = "moleculenet"

    @property
    def n_tasks(self) -> int:
        return len(self.task_columns)


_TOX21_TASKS = (
    "NR-AR", "NR-AR-LBD", "NR-AhR", "NR-Aromatase", "NR-ER", "NR-ER-LBD", "NR-PPAR-gamma",
    "SR-ARE", "SR-ATAD5", "SR-HSE", "SR-MMP", "SR-p53",
)  # fmt: skip
_MUV_TASKS = (
    "MUV-466", "MUV-548", "MUV-600", "MUV-644", "MUV-652", "MUV-689", "MUV-692", "MUV-712",
    "MUV-713", "MUV-733", "MUV-737", "MUV-810", "MUV-832", "MUV-846", "MUV-852", "MUV-858",
    "MUV-859",
)  # fmt: skip

_SIDER_TASKS: tuple[str, ...] = (
    "Hepatobiliary disorders",
    "Metabolism and nutrition disorders",
    "Product issues",
    "Eye disorders",
    "Investigations",
    "Musculoskeletal and connective tissue disorders",
    "Gastrointestinal disorders",
    "Social circumstances",
    "Immune system disorders",
    "Reproductive system and breast disorders",
    "Neoplasms benign, malignant and unspecified (incl cysts and polyps)",
    "General disorders and administration site conditions",
    "Endocrine disorders",
    "Surgical and medical procedures",
    "Vascular disorders",
    "Blood and lymphatic system disorders",
    "Skin and subcutaneous tissue disorders",
    "Congenital, familial and genetic disorders",
    "Infections and infestations",
    "Respiratory, thoracic and mediastinal disorders",
    "Psychiatric disorders",
    "Renal and urinary disorders",
    "Pregnancy, puerperium and perinatal conditions",
    "Ear and labyrinth disorders",
    "Cardiac disorders",
    "Nervous system disorders",
    "Injury, poisoning and procedural complications",
)
# ToxCast's 617 assay columns, in the file's order, are data: one name per line in
# toxcast_tasks.txt beside this module (shipped as package data).
_TOXCAST_TASKS: tuple[str, ...] = tuple(
    resources.files("exlm_chem.data").joinpath("toxcast_tasks.txt")
    .read_text("utf-8").split())


def _s3(label_note: str, sha256_content: str | None, md5_file: str | None) -> Revision:
    return Revision("s3", sha256_content, md5_file, label_note)


# Checksums: md5 = DeepChem S3 file as published (TorchDrug's dataset classes), sha256 =
# decompressed content; provenance of each in ../shared/data/moleculenet/SOURCES.md.
DATASETS: dict[str, DatasetSpec] = {
    "bace": DatasetSpec(
        "bace", _S3 + "bace.csv", "bace.csv", ("bace.csv.gz", "bace.csv"), "mol", ("Class",),
        (_s3("DeepChem S3 bace.csv (CRLF), 1513 rows",
             "f3fb9ce90bada3e2bd6148b0df13f8f8145a357bf87df0dd5b391ede974fc737",
             "ba7f8fa3fdf463a811fa7edea8c982c2"),),
    ),
    "bbbp": DatasetSpec(
        "bbbp", _S3 + "BBBP.csv", "BBBP.csv",
        ("bbbp.csv.gz", "bbbp.csv", "BBBP.csv", "BBBP.csv.gz"), "smiles", ("p_np",),
        (_s3("DeepChem S3 BBBP.csv (CRLF), 2050 rows",
             "d07a38487aeac5cee5508413e468043ef3097451d2a112701c2d60be9ec6b662",
             "66286cb9e6b148bd75d80c870df580fb"),),
    ),
    "tox21": DatasetSpec(
        "tox21", _S3 + "tox21.csv.gz", "tox21.csv.gz", ("tox21.csv.gz", "tox21.csv"),
        "smiles", _TOX21_TASKS,
        (_s3("DeepChem S3 tox21.csv.gz, 7831 rows (content sha256 from three identical "
             "public copies; md5 of the S3 .gz)",
             "7d7e7facd853a63e79ddce4e9c3fcb7a0d83a1c300b603031c0f2c64fbe77761",
             "2882d69e70bba0fec14995f26787cc25"),),
    ),
    "toxcast": DatasetSpec(
        "toxcast", _S3 + "toxcast_data.csv.gz", "toxcast_data.csv.gz",
        ("toxcast.csv.gz", "toxcast.csv", "toxcast_data.csv.gz", "toxcast_data.csv"),
        "smiles", _TOXCAST_TASKS,
        (_s3("current DeepChem S3 toxcast_data.csv.gz: rows with duplicate SMILES merged; "
             "only the md5 of the .gz is known", None, "92911bbf9c1e2ad85231014859388cd6"),
         Revision("deepchem-2016",
                  "0598b33326818254fcb7ced0e039b8e40ed42a18e9063c27cacc1e43b2df0f7a",
                  "a8cc5b4eb185bf285bf2cfb8a6a8e1f9",
                  "older DeepChem git examples/toxcast/processing/toxcast_data.csv.gz "
                  "(2016-11-01), 8615 rows, duplicate SMILES rows kept")),
    ),
    "sider": DatasetSpec(
        "sider", _S3 + "sider.csv.gz", "sider.csv.gz", ("sider.csv.gz", "sider.csv"),
        "smiles", _SIDER_TASKS,
        (_s3("DeepChem S3 sider.csv.gz, 1427 rows",
             "71efc6ac4ca82d6545bc512509863281be0f17234afd7adaf71a71899988302e",
             "77c0ef421f7cc8ce963c5836c8761fd2"),),
    ),
    "clintox": DatasetSpec(
        "clintox", _S3 + "clintox.csv.gz", "clintox.csv.gz", ("clintox.csv.gz", "clintox.csv"),
        "smiles", ("FDA_APPROVED", "CT_TOX"),
        (_s3("DeepChem S3 clintox.csv.gz, 1484 rows",
             "9999816e760dd838358b5d88e81cea2fc062be4458ffa412ceecdba4f88a67b6",
             "db4f2df08be8ae92814e9d6a2d015284"),),
    ),
    "muv": DatasetSpec(
        "muv", _S3 + "muv.csv.gz", "muv.csv.gz", ("muv.csv.gz", "muv.csv"), "smiles",
        _MUV_TASKS,
        (_s3("current DeepChem S3 muv.csv.gz: 40 stereo-stripped duplicate pairs merged "
             "(93087 rows); only the md5 of the .gz is known",
             None, "9c40bd41310991efd40f4d4868fa3ddf"),
         Revision("deepchem-2016",
                  "feac9a780cb5f2e5e1c51e6ba61491a524da544ca1d6e4b542f9ad358fe0527b",
                  "48e9ec69793a7adb3497154a2ae756b6",
                  "older DeepChem git datasets/muv.csv.gz (2016-03-26), 93127 rows, "
                  "duplicate pairs kept")),
    ),
}  # fmt: skip
