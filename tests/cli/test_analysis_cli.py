"""``exlm-chem explain`` and ``exlm-chem entropy`` on real files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from exlm_chem.analysis.entropy import masked_entropy
from exlm_chem.analysis.explanation import explain
from exlm_chem.cli import main
from exlm_chem.data.corpus import read_smiles_file
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model import ExLMConfig, ExLMModel, save_checkpoint

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def mlm_checkpoint(tmp_path_factory):
    tok = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", len(tok), objective="mlm")
    torch.manual_seed(1)
    model = ExLMModel(config)
    return save_checkpoint(tmp_path_factory.mktemp("mlm") / "mlm_run", model, config,
                           tok.tokens)


@pytest.fixture(scope="module")
def smiles(pretrain_dir):
    return read_smiles_file(pretrain_dir / "moses_test.smi.gz", limit=12)


def test_explain_writes_figure_and_json(tiny_checkpoint, tmp_path, capsys):
    text = "O=C(N[MASK])c1ccc[MASK]cc1"
    fig, out_json = tmp_path / "fig.png", tmp_path / "sub" / "out.json"
    assert main(["explain", text, "--model", str(tiny_checkpoint), "--out", str(fig),
                 "--json", str(out_json), "--top-k", "2"]) == 0
    assert fig.read_bytes()[:8] == PNG_MAGIC
    data = json.loads(out_json.read_text())
    direct = explain(text, model=tiny_checkpoint, top_k=2)
    assert [s["top_tokens"] for s in data["states"]] == direct.top_tokens
    np.testing.assert_allclose(data["transitions"], direct.transitions)
    assert data["viterbi_path"] == direct.viterbi_path
    assert len(data["fill_in"]) == 2
    assert "Viterbi fill-in per [MASK]" in capsys.readouterr().out


def test_explain_bad_input(tiny_checkpoint, tmp_path):
    with pytest.raises(ValueError, match=r"holds no \[MASK\]"):
        main(["explain", "c1ccccc1", "--model", str(tiny_checkpoint),
              "--out", str(tmp_path / "x.png")])
    assert not (tmp_path / "x.png").exists()


def test_entropy_table_csv_and_plot(tiny_checkpoint, mlm_checkpoint, smiles, tmp_path, capsys):
    smi = tmp_path / "mols.smi"
    smi.write_text("".join(f"{s} id{i}\n" for i, s in enumerate(smiles)))
    out = tmp_path / "entropy"
    assert main(["entropy", "--models", str(tiny_checkpoint), str(mlm_checkpoint),
                 "--smiles", str(smi), "--mask-ratios", "0.15", "0.5", "--out", str(out),
                 "--seed", "2"]) == 0
    frame = pd.read_csv(out / "entropy.csv")
    assert frame["objective"].tolist() == ["exlm", "exlm", "mlm", "mlm"]
    assert frame["model"].tolist()[2] == "mlm_run"
    direct = masked_entropy(mlm_checkpoint, smiles, (0.15, 0.5), seed=2)
    np.testing.assert_allclose(frame["mean"].to_numpy()[2:], [r.mean for r in direct],
                               rtol=1e-6)
    assert frame["n_targets"].tolist()[:2] == frame["n_targets"].tolist()[2:]
    assert frame["state_mean"].isna().tolist() == [False, False, True, True]
    assert (out / "entropy.png").read_bytes()[:8] == PNG_MAGIC
    table = (out / "entropy.md").read_text()
    assert table.count("| exlm |") == 2 and "12 molecules" in table
    assert "| mlm_run | mlm | 1 | 0.15 | 12 |" in capsys.readouterr().out


def test_entropy_reads_a_csv_column(mlm_checkpoint, smiles, tmp_path):
    csv = tmp_path / "mols.csv"
    pd.DataFrame({"id": range(len(smiles)), "smi": smiles}).to_csv(csv, index=False)
    out = tmp_path / "e"
    assert main(["entropy", "--models", str(mlm_checkpoint), "--labels", "twin",
                 "--smiles", str(csv), "--smiles-column", "smi", "--limit", "5",
                 "--mask-ratios", "0.3", "--out", str(out)]) == 0
    frame = pd.read_csv(out / "entropy.csv")
    assert frame["model"].tolist() == ["twin"] and frame["n_molecules"].tolist() == [5]
    with pytest.raises(ValueError, match="'smiles' not found"):
        main(["entropy", "--models", str(mlm_checkpoint), "--smiles", str(csv),
              "--out", str(out)])
