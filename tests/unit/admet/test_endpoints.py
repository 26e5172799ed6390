"""The panel's endpoint table and its data."""

from __future__ import annotations

import numpy as np

from exlm_chem.admet.endpoints import (
    ENDPOINTS,
    GROUPS,
    endpoint_data,
    get_endpoint,
    merged_labels,
    units_table,
)
from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS


def test_every_source_the_issue_names_is_an_endpoint_with_a_unit_and_a_direction():
    names = [e.name for e in ENDPOINTS]
    assert len(names) == len(set(names)) >= 37
    assert {e.source.removeprefix("tdc:") for e in ENDPOINTS if e.source.startswith("tdc:")} \
        == set(TDC_ADMET_TASKS)
    assert sum(e.source.startswith("moleculenet:tox21:") for e in ENDPOINTS) == 12
    for e in ENDPOINTS:
        assert e.group in GROUPS and e.unit and e.direction.startswith("higher: "), e
        assert (e.unit == "probability") == (e.task == "classification"), e
        if e.source.startswith("tdc:"):
            assert TDC_ADMET_TASKS[e.name].task_type == e.task
            assert TDC_ADMET_TASKS[e.name].group == e.group


def test_the_units_table_has_one_row_per_endpoint_naming_its_unit():
    lines = units_table().splitlines()[2:]
    assert len(lines) == len(ENDPOINTS)
    for line, e in zip(lines, ENDPOINTS, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == f"`{e.name}`" and cells[2] == e.unit


def test_duplicates_merge_to_one_row_per_canonical_molecule():
    smiles, y = merged_labels(["OCC", "CCO", "c1ccccc1", "C1=CC=CC=C1", "CCN", "bad("],
                              np.array([1.0, 3.0, 0.0, 1.0, 5.0, 7.0]), "regression")
    assert smiles == ["CCO", "c1ccccc1", "CCN"] and y.tolist() == [2.0, 0.5, 5.0]
    smiles, y = merged_labels(["CCO", "OCC", "OCC", "c1ccccc1", "C1=CC=CC=C1"],
                              np.array([1.0, 1.0, 0.0, 0.0, 1.0]), "classification")
    assert smiles == ["CCO"] and y.tolist() == [1.0]  # benzene: labelled both ways, left out


def test_a_tdc_endpoint_reads_train_val_and_test_together():
    data = endpoint_data(get_endpoint("hia_hou"))
    assert len(data.smiles) == len(set(data.smiles)) > 500
    assert set(np.unique(data.y)) == {0.0, 1.0}
    assert 100 < len(data.test_smiles) < 130 and data.test_smiles <= set(data.smiles)
    assert len(data.sha256) == 64


def test_the_guides_units_table_is_the_packages():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "guide" / "admet.md").read_text()
    shown = text.split("<!-- units-table -->\n")[1].split("<!-- /units-table -->")[0]
    assert shown == units_table()
