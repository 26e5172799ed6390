"""The ADMET panel end to end on a small panel built here: two endpoints of real data (HIA,
classification; FreeSolv, regression), CatBoost at 30 trees, 40 approved drugs as the
reference. The shipped panel's own checks are in test_shipped_panel.py."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from exlm_chem.admet.assemble import assemble_panel, reference_smiles
from exlm_chem.admet.build import ENDPOINTS_DIR, build_endpoint
from exlm_chem.admet.endpoints import endpoint_data, get_endpoint
from exlm_chem.admet.panel import Panel

# far from every training set: a perfluorinated silane and a platinum complex
FAR = ("FC(F)(F)C(F)(F)C(F)(F)C(F)(F)[Si](C(F)(F)F)(C(F)(F)F)C(F)(F)C(F)(F)C(F)(F)F",
       "N.N.Cl[Pt]Cl")


@pytest.fixture(scope="module")
def small_panel(tmp_path_factory, few_catboost_trees):
    out = tmp_path_factory.mktemp("panel")
    for name in ("hia_hou", "hydration_freesolv"):
        endpoint = get_endpoint(name)
        build_endpoint(endpoint, endpoint_data(endpoint), out / ENDPOINTS_DIR / name)
    drugs, sha = reference_smiles()
    assemble_panel(out, drugs[:40], sha)
    return out


def test_rows_stay_aligned_with_invalid_inputs_and_carry_their_reason(small_panel):
    smiles = ["CCO", "C1CC", "", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O"]
    table = Panel.load(small_panel).predict(smiles)
    assert list(table["smiles"]) == smiles
    assert list(table["valid"]) == [True, False, False, True, True]
    assert "unclosed ring" in table.loc[1, "invalid_reason"]
    assert table.loc[2, "invalid_reason"] == "empty SMILES"
    for column in ("hia_hou", "hydration_freesolv", "hydration_freesolv_lower90",
                   "molecular_weight", "hia_hou_drug_percentile"):
        assert table[column].isna().tolist() == [False, True, True, False, False], column
    # each valid row is scored as it is alone: the chunking does not mix rows
    alone = Panel.load(small_panel).predict(["c1ccccc1O"])
    assert alone.loc[0, "hia_hou"] == pytest.approx(table.loc[3, "hia_hou"])
    assert alone.loc[0, "hydration_freesolv"] == pytest.approx(table.loc[3, "hydration_freesolv"])


def test_probabilities_intervals_and_percentiles_are_in_range(small_panel):
    table = Panel.load(small_panel).predict(["CCO", "c1ccccc1O", "CCCCCCCCO", FAR[0]])
    assert table["hia_hou"].between(0, 1).all()
    lower80, upper80 = table["hydration_freesolv_lower80"], table["hydration_freesolv_upper80"]
    lower90, upper90 = table["hydration_freesolv_lower90"], table["hydration_freesolv_upper90"]
    assert (lower90 <= lower80).all() and (lower80 <= table["hydration_freesolv"]).all()
    assert (table["hydration_freesolv"] <= upper80).all() and (upper80 <= upper90).all()
    for column in ("hia_hou_drug_percentile", "hydration_freesolv_drug_percentile",
                   "molecular_weight_drug_percentile"):
        assert table[column].between(0, 100).all(), column
    # a heavier molecule sits higher among the drugs by weight
    assert (table.loc[2, "molecular_weight_drug_percentile"]
            > table.loc[0, "molecular_weight_drug_percentile"])


def test_a_molecule_far_from_every_training_set_is_flagged_out_of_domain(small_panel):
    panel = Panel.load(small_panel)
    cutoff = panel.manifest["domain"]["cutoff"]
    table = panel.predict(["CCO", *FAR])
    for endpoint in ("hia_hou", "hydration_freesolv"):
        assert table.loc[0, f"{endpoint}_similarity"] == pytest.approx(1.0)  # in both sets
        assert table.loc[0, f"{endpoint}_in_domain"] is True
        for row in (1, 2):
            assert table.loc[row, f"{endpoint}_similarity"] < cutoff
            assert table.loc[row, f"{endpoint}_in_domain"] is False
    # out of domain, the interval is the one the far held-out molecules gave
    conformal = next(e["conformal"] for e in panel.manifest["endpoints"]
                     if e["endpoint"]["name"] == "hydration_freesolv")
    half = table.loc[1, "hydration_freesolv_upper90"] - table.loc[1, "hydration_freesolv"]
    assert half == pytest.approx(conformal["out_of_domain"]["q90"])


def test_the_panel_loads_without_unpickling(small_panel, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the panel must not unpickle")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(np, "load", refuse)
    assert len(Panel.load(small_panel).members) == 2


def test_a_users_endpoint_is_added_to_a_copy_with_the_same_trust_columns(small_panel, tmp_path):
    from exlm_chem.admet.user import add_endpoint
    from exlm_chem.data.moleculenet import load_moleculenet

    esol = load_moleculenet("esol", download=False)
    assay = tmp_path / "assay.csv"
    pd.DataFrame({"smiles": esol.smiles[:150],
                  "soluble": (esol.labels[:150, 0] > -3).astype(int)}).to_csv(assay, index=False)
    copy = add_endpoint("inhouse_soluble", assay, tmp_path / "mine", panel=small_panel,
                        direction="higher: soluble in our buffer")
    table = Panel.load(copy).predict(["CCO", "bad(", FAR[1]])
    for column in ("inhouse_soluble", "inhouse_soluble_similarity", "inhouse_soluble_in_domain",
                   "inhouse_soluble_drug_percentile", "hia_hou", "hydration_freesolv"):
        assert column in table.columns
    assert table.loc[0, "inhouse_soluble"] > 0.5  # ethanol is soluble
    assert np.isnan(table.loc[1, "inhouse_soluble"])
    assert table.loc[2, "inhouse_soluble_in_domain"] is False
    assert "inhouse_soluble" not in Panel.load(small_panel).predict(["CCO"]).columns
    # a bad row of the user's file is named, not dropped
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"smiles": ["CCO", "C1CC", "CCN"], "y": [1.0, 2.0, "x"]}).to_csv(bad, index=False)
    from exlm_chem.errors import InvalidSmilesError

    with pytest.raises(InvalidSmilesError, match=r"row 1: 'C1CC'.*\n.*row 2: 'x': label"):
        add_endpoint("other", bad, tmp_path / "other", panel=small_panel)


def test_the_cli_scores_sdf_and_csv_and_writes_a_report(small_panel, tmp_path, capsys,
                                                       monkeypatch):
    from rdkit import Chem

    from exlm_chem.cli import main

    sdf = tmp_path / "in.sdf"
    with Chem.SDWriter(str(sdf)) as writer:
        for smiles in ("CCO", "c1ccccc1O"):
            mol = Chem.MolFromSmiles(smiles)
            mol.SetProp("_Name", smiles)
            writer.write(mol)
    with open(sdf, "a") as handle:  # a record RDKit cannot read, then a valid one
        handle.write("broken\n\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\n"
                     "    0.0    0.0    0.0 Xx  0  0\nM  END\n$$$$\n")
    with Chem.SDWriter(str(tmp_path / "tail.sdf")) as writer:
        writer.write(Chem.MolFromSmiles("CCCO"))
    sdf.write_text(sdf.read_text() + (tmp_path / "tail.sdf").read_text())
    monkeypatch.setenv("EXLM_CHEM_ADMET", str(small_panel))
    assert main(["admet", str(sdf), "--out", str(tmp_path / "p.csv"),
                 "--report", str(tmp_path / "r.html"), "--no-progress"]) == 0
    table = pd.read_csv(tmp_path / "p.csv")
    assert table["row"].tolist() == [0, 1, 2, 3]
    assert table["valid"].tolist() == [True, True, False, True]
    assert table.loc[3, "canonical_smiles"] == "CCCO"
    assert "2 invalid" not in capsys.readouterr().out
    html = (tmp_path / "r.html").read_text()
    assert html.count("<svg") >= 6 and "hydration_freesolv" in html
    assert "src=" not in html and "<link" not in html and "@import" not in html  # no network
    assert not (tmp_path / "p.csv.parts").exists()


def test_expand_shorthand_inserts_predict_only_where_a_subcommand_is_left_out():
    from exlm_chem.cli import expand_shorthand

    assert expand_shorthand(["admet", "in.csv", "--out", "o.csv"]) == [
        "admet", "predict", "in.csv", "--out", "o.csv"]
    assert expand_shorthand(["-v", "admet", "in.csv"]) == ["-v", "admet", "predict", "in.csv"]
    assert expand_shorthand(["admet", "build", "--out", "x"]) == ["admet", "build", "--out", "x"]
    assert expand_shorthand(["admet", "--help"]) == ["admet", "--help"]
    assert expand_shorthand(["predict", "m", "in.csv"]) == ["predict", "m", "in.csv"]


@pytest.mark.skipif(not (__import__("shutil").which("chromium")
                         or __import__("shutil").which("chromium-browser")),
                    reason="no Chromium here (apt-get install chromium)")
def test_the_report_renders_in_a_headless_browser(small_panel, tmp_path):
    from repo_scripts import load_script

    from exlm_chem.admet.report import write_report

    script = load_script("benchmarks/admet/report_screenshot.py")
    panel = Panel.load(small_panel)
    table = panel.predict(["CC(=O)Oc1ccccc1C(=O)O", "C1CC", FAR[0]])
    html = write_report(table, panel, tmp_path / "r.html")
    dom = script.render(html, tmp_path / "r.png", script.browser())
    assert dom.count("<svg") >= 4 and "invalid:" in dom and 'class="out"' in dom
    assert (tmp_path / "r.png").stat().st_size > 10_000
