"""A cell counts as done, and an embedding is reused, only when everything it depends on
matches: model hash, input protocol, settings, data checksum and protocol version."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exlm_chem.benchmark import records
from exlm_chem.benchmark.records import Budget, MethodOutput, ResultsFile
from exlm_chem.benchmark.runner import MethodSpec, run_benchmark
from exlm_chem.benchmark.tasks import TaskData

BASE = {
    "model": "toy@000000000000",
    "inputs": {"expansion_k": 2, "pooling": "bos", "max_length": 256,
               "smiles": "rdkit-canonical"},
    "settings": {"epochs": 3, "batch_size": 32, "lr": 1e-4},
    "data_sha256": "a" * 64,
}
CHANGES = {
    "model hash": ("model", "toy@111111111111"),
    "expansion k": ("inputs", {**BASE["inputs"], "expansion_k": 1}),
    "pooling": ("inputs", {**BASE["inputs"], "pooling": "mean"}),
    "max length": ("inputs", {**BASE["inputs"], "max_length": 128}),
    "SMILES form": ("inputs", {**BASE["inputs"], "smiles": "as-written"}),
    "fine-tune settings": ("settings", {**BASE["settings"], "lr": 4e-4}),
    "data checksum": ("data_sha256", "b" * 64),
    "protocol version": ("version", None),
}


def _toy_task(sha: str) -> TaskData:
    labels = np.array([[0.0], [1.0], [0.0], [1.0], [1.0], [0.0]])
    return TaskData("bace", ["C"] * 6, labels, np.arange(2), np.arange(2, 3), np.arange(3, 6), sha)


class _Source:
    """A task source whose data checksum the test controls (no files, no RDKit)."""

    def __init__(self, state: dict) -> None:
        self.state = state

    def sha256(self, task: str) -> str:
        return self.state["data_sha256"]

    def load(self, task: str, split: str, seed: int) -> TaskData:
        return _toy_task(self.state["data_sha256"])


def _run(tmp_path, monkeypatch, state: dict, calls: list) -> None:

    def method(data, seed, budget, progress):
        calls.append(seed)
        return MethodOutput(np.linspace(0, 1, len(data.test))[:, None])

    spec = MethodSpec(
        "exlm",
        "ExLM toy (finetune)",
        state["model"],
        "finetune",
        method,
        uses_budget=True,
        protocol=lambda task, budget: (state["inputs"], state["settings"]),
    )
    run_benchmark(
        [spec], ["bace"], [0], "scaffold", Budget(), tmp_path, progress=False, source=_Source(state)
    )


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changing_one_part_of_the_key_reruns_the_cell(change, tmp_path, monkeypatch):
    state, calls = dict(BASE), []
    _run(tmp_path, monkeypatch, state, calls)
    _run(tmp_path, monkeypatch, state, calls)
    assert calls == [0]  # the same cell again: resumed, not rerun
    name, value = CHANGES[change]
    if name == "version":
        monkeypatch.setattr(records, "PROTOCOL_VERSION", records.PROTOCOL_VERSION + 1)
    else:
        state[name] = value
    _run(tmp_path, monkeypatch, state, calls)
    assert calls == [0, 0]
    written = ResultsFile(tmp_path / "results.jsonl").records()
    assert len(written) == 2 and written[0].key() != written[1].key()
    # the report keeps the newest record of a rerun cell (same name, new protocol), and a
    # checkpoint name's newest weights
    latest = ResultsFile(tmp_path / "results.jsonl").latest()
    assert latest == written[1:]


def test_records_before_protocols_load_but_are_never_done(tmp_path, monkeypatch):
    state, calls = dict(BASE), []
    _run(tmp_path, monkeypatch, state, calls)
    path = tmp_path / "results.jsonl"
    row = json.loads(path.read_text())
    assert row["protocol"] == {
        "version": records.PROTOCOL_VERSION,
        "data_sha256": "a" * 64,
        "inputs": BASE["inputs"],
        "settings": BASE["settings"],
    }
    del row["protocol"]  # as written before v2
    path.write_text(json.dumps(row) + "\n")
    old = ResultsFile(path).records()
    assert old[0].protocol is None
    _run(tmp_path, monkeypatch, state, calls)
    assert calls == [0, 0]


@pytest.mark.parametrize("change", ["model", "inputs", "data_sha256", "version", "smiles"])
def test_embedding_cache_name_depends_on_everything_it_holds(
    change, tmp_path, monkeypatch, tiny_checkpoint
):
    from exlm_chem.benchmark.encoders import EncoderMethod

    method = EncoderMethod(tiny_checkpoint, "probe", cache_dir=tmp_path)
    data = _toy_task("a" * 64)
    before = method.embedding_cache(data)
    assert before == method.embedding_cache(data)  # stable
    assert before.parent == tmp_path / method.model_id.replace("@", "_")
    if change == "model":
        method.model_id = "tiny@ffffffffffff"
    elif change == "inputs":
        method.inputs = {**method.inputs, "expansion_k": 1}
    elif change == "data_sha256":
        data = _toy_task("b" * 64)
    elif change == "smiles":
        data = data._replace(smiles=["CC"] * 6)
    else:
        from exlm_chem.benchmark import encoders

        monkeypatch.setattr(encoders, "PROTOCOL_VERSION", records.PROTOCOL_VERSION + 1)
    assert method.embedding_cache(data).name != before.name
