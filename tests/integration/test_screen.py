"""``exlm_chem.screen`` on a real 2-process ``dask.distributed.LocalCluster``.

The inputs are MOSES and ClinTox SMILES in the three formats, with bad rows mixed in;
chunks are small so that parts cut across files and every worker gets several.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem import screen
from exlm_chem.screening.manifest import MANIFEST, model_sha256

distributed = pytest.importorskip("distributed")  # the `screen` extra; CI installs it

CHUNK = 16
BAD = ["not_a_smiles", "", "C1CC", "C" * 2500]


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as local, Client(local) as client:
        yield client


@pytest.fixture(scope="module")
def clintox(moleculenet_dir) -> pd.DataFrame:
    return pd.read_csv(moleculenet_dir / "clintox.csv.gz")


@pytest.fixture(scope="module")
def fitted(clintox, tiny_checkpoint, tmp_path_factory) -> Path:
    """A 2-task classifier (FDA_APPROVED, CT_TOX) fine-tuned for one epoch on 64 rows."""
    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    train = clintox.iloc[:70]
    train = train[check_smiles(train["smiles"].tolist()).valid].iloc[:64]
    clf = ExLMMoleculeClassifier(pretrained=str(tiny_checkpoint), epochs=1, batch_size=32,
                                 validation_fraction=0.0, device="cpu", random_state=0)
    clf.fit(train["smiles"].tolist(), train[["FDA_APPROVED", "CT_TOX"]])
    return clf.save(tmp_path_factory.mktemp("screen_model") / "clintox")


@pytest.fixture(scope="module")
def library(clintox, pretrain_dir, tmp_path_factory) -> dict[str, list[str]]:
    """Three input files (path -> its SMILES in row order), bad rows included."""
    import gzip

    folder = tmp_path_factory.mktemp("library")
    with gzip.open(pretrain_dir / "moses_test.smi.gz", "rt") as fh:
        moses = [next(fh).split()[0] for _ in range(70)]
    smi = moses[:37] + BAD[:2] + moses[37:]  # a blank line is an empty SMILES
    (folder / "a.smi").write_text("".join(f"{s}\tid{i}\n" if s else "\n"
                                          for i, s in enumerate(smi)))
    csv = clintox["smiles"].iloc[100:140].tolist()
    csv[5], csv[30] = BAD[2], BAD[3]
    pd.DataFrame({"id": range(40), "smiles": csv}).to_csv(folder / "b.csv.gz", index=False)
    parquet = [*clintox["smiles"].iloc[200:221].tolist(), None]  # a null cell
    pd.DataFrame({"smiles": parquet}).to_parquet(folder / "c.parquet")
    return {str(folder / "a.smi"): smi, str(folder / "b.csv.gz"): csv,
            str(folder / "c.parquet"): [s or "" for s in parquet]}


def _screen(model, library, out, client, **kwargs):
    return screen(model, list(library), out, client=client, chunk_rows=CHUNK, device="cpu",
                  **kwargs)


def _loaded_models(cluster) -> dict[str, dict[str, int]]:
    """Per worker: model path -> id() of the object in its process-wide cache."""
    from exlm_chem.screening import worker

    return cluster.run(lambda: {key[0]: id(model) for key, model in worker._MODELS.items()})


def _expected_rows(library) -> pd.DataFrame:
    from exlm_chem.data.featurize import check_smiles

    rows = []
    for path, smiles in library.items():
        checked = check_smiles(smiles)
        rows.append(pd.DataFrame({"file": path, "row": np.arange(len(smiles)), "smiles": smiles,
                                  "valid": checked.valid,
                                  "invalid_reason": [r or "" for r in checked.reasons]}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def expected_predictions(fitted, library) -> pd.DataFrame:
    """Single-process ``predict_proba`` on each whole file."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    est = ExLMMoleculeClassifier.load(fitted)
    frame = _expected_rows(library)
    p = np.concatenate([est.predict_proba(s) for s in library.values()])  # [N, 2]
    return frame.assign(FDA_APPROVED=p[:, 0], CT_TOX=p[:, 1])


def _check_predictions(out: Path, expected: pd.DataFrame) -> None:
    got = pd.read_parquet(out)
    assert list(got.columns) == ["file", "row", "smiles", "valid", "invalid_reason",
                                 "FDA_APPROVED", "CT_TOX"]
    pd.testing.assert_frame_equal(got.iloc[:, :5], expected.iloc[:, :5], check_dtype=False)
    np.testing.assert_allclose(got[["FDA_APPROVED", "CT_TOX"]].to_numpy(),
                               expected[["FDA_APPROVED", "CT_TOX"]].to_numpy(), rtol=1e-6)


def test_predictions_equal_single_process_row_for_row(fitted, library, expected_predictions,
                                                      cluster, tmp_path):
    out = tmp_path / "screen"
    result = _screen(fitted, library, out, cluster)
    n = len(expected_predictions)
    assert n == 72 + 40 + 22
    _check_predictions(out, expected_predictions)
    s = result.summary
    assert result.path == out.resolve()
    assert (s.rows, s.rows_computed, s.invalid_rows) == (n, n, 5)
    assert (s.parts_written, s.parts_skipped) == (5 + 3 + 2, 0)  # ceil(72/16), ...
    assert sum(w.rows for w in s.workers.values()) == n
    assert len(s.workers) == 2  # both workers took chunks
    assert all(w.peak_rss_mb > 50 and w.mol_per_s > 0 for w in s.workers.values())
    assert sorted(p.name for p in out.iterdir())[:2] == [MANIFEST,
                                                         "part-000000-00000000.parquet"]


def test_embeddings_equal_single_process_row_for_row(tiny_checkpoint, library, cluster,
                                                     tmp_path):
    from exlm_chem import embed

    out = tmp_path / "emb"
    result = _screen(tiny_checkpoint, library, out, cluster, embed=True, pooling="mean")
    got = pd.read_parquet(out)
    expected = _expected_rows(library)
    pd.testing.assert_frame_equal(got.iloc[:, :5], expected, check_dtype=False)
    X = got[[f"emb_{j}" for j in range(64)]].to_numpy()
    assert X.dtype == np.float32 and got.shape[1] == 5 + 64
    direct = np.concatenate([embed(s, model=str(tiny_checkpoint), pooling="mean",
                                   device="cpu").embeddings for s in library.values()])
    valid = expected["valid"].to_numpy()
    assert np.isnan(X[~valid]).all()
    np.testing.assert_allclose(X[valid], direct[valid], rtol=1e-4, atol=1e-5)
    assert result.summary.invalid_rows == 5


def test_rerun_skips_finished_parts_and_redoes_partial_ones(fitted, library,
                                                            expected_predictions, cluster,
                                                            tmp_path):
    out = tmp_path / "screen"
    first = _screen(fitted, library, out, cluster).summary
    loaded = _loaded_models(cluster)
    parts = sorted(out.glob("part-*.parquet"))
    mtimes = {p.name: p.stat().st_mtime_ns for p in parts}
    parts[1].unlink()  # never finished
    parts[5].write_bytes(parts[5].read_bytes()[:200])  # a truncated copy
    (out / f".{parts[6].name}.0123abcd.tmp").write_bytes(b"PAR1")  # a killed writer's debris
    again = _screen(fitted, library, out, cluster).summary
    assert (again.parts_written, again.parts_skipped) == (2, first.parts_written - 2)
    assert (again.rows, again.invalid_rows) == (first.rows, first.invalid_rows)
    assert again.rows_computed == 2 * CHUNK
    for p in parts:
        if p not in (parts[1], parts[5]):
            assert p.stat().st_mtime_ns == mtimes[p.name], f"{p.name} was rewritten"
    assert not list(out.glob(".*"))
    _check_predictions(out, expected_predictions)
    model_path = str(Path(fitted).resolve())
    now = _loaded_models(cluster)
    assert any(model_path in w for w in now.values())
    assert {a: w.get(model_path) for a, w in now.items()} == {  # the same objects: not reloaded
        a: w.get(model_path) for a, w in loaded.items()}
    third = _screen(fitted, library, out, None, workers=1).summary  # starts no cluster
    assert (third.parts_written, third.parts_skipped, third.workers) == (0, 10, {})


def test_other_model_or_settings_in_the_same_directory_is_refused(fitted, tiny_checkpoint,
                                                                  library, cluster, tmp_path):
    out = tmp_path / "screen"
    _screen(fitted, library, out, cluster)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match=r"another model or settings.*mode: 'predict' there, "
                                         r"'embed' now; model_sha256"):
        _screen(tiny_checkpoint, library, out, cluster, embed=True)
    with pytest.raises(ValueError, match="setting chunk_rows: 16 there, 8 now"):
        screen(fitted, list(library), out, client=cluster, chunk_rows=8)
    with pytest.raises(ValueError, match=r"inputs differ.*a\.smi"):
        _screen(fitted, {p: s for p, s in library.items() if not p.endswith("a.smi")}, out,
                cluster)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert model_sha256(fitted) != model_sha256(tiny_checkpoint)


def test_a_killed_worker_loses_only_its_chunk(fitted, library, expected_predictions, cluster,
                                              tmp_path):
    out = tmp_path / "screen"
    box: dict[str, object] = {}

    def run() -> None:
        try:
            # 34 small chunks: the run outlasts the kill even on a fast machine
            box["summary"] = screen(fitted, list(library), out, client=cluster, chunk_rows=4,
                                    device="cpu").summary
        except BaseException as error:  # reported by the main thread
            box["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    victim, killed_at = None, None
    deadline = time.monotonic() + 120
    while victim is None and thread.is_alive() and time.monotonic() < deadline:
        busy = {a: keys for a, keys in cluster.processing().items()
                if any(str(k).startswith("screen-") for k in keys)}
        if list(out.glob("part-*.parquet")) and busy:
            victim = next(iter(busy))
            pid = cluster.run(os.getpid, workers=[victim])[victim]
            killed_at = len(list(out.glob("part-*.parquet")))
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    thread.join(timeout=300)
    assert "error" not in box, box.get("error")
    assert victim is not None, "the run ended before a worker could be killed"
    assert killed_at < 34, "the kill came after the last part"
    summary = box["summary"]
    assert (summary.rows, summary.parts_written) == (len(expected_predictions), 34)
    assert not list(out.glob(".*"))  # a part the victim was writing: cleaned up
    _check_predictions(out, expected_predictions)
    deadline = time.monotonic() + 120  # the nanny restarts it; the next test wants two
    while time.monotonic() < deadline:
        workers = cluster.scheduler_info()["workers"]
        if victim not in workers and len(workers) == 2:
            break
        time.sleep(0.1)
