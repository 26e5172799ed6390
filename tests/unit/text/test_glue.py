"""GLUE registry, TSV reader (the real files' quirks, malformed rows) and metrics.

Every file here is written by the test in the GLUE format; the reader is the same code
that reads the real downloads.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from exlm_chem.text.glue import (
    GLUE_TASKS,
    GlueBadRowsWarning,
    GlueFormatError,
    accuracy,
    binary_f1,
    get_task,
    glue_metrics,
    matthews_corrcoef,
    pearson,
    read_glue_split,
    read_glue_tsv,
    spearman,
    task_directory,
)

STSB_HEADER = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
               "sentence2\tscore")
MNLI_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
               "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\t"
               "label1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")


def _write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def test_registry_holds_the_eight_tasks():
    assert sorted(GLUE_TASKS) == ["cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst-2",
                                  "sts-b"]
    assert get_task("SST2") is GLUE_TASKS["sst-2"]
    assert get_task("sts_b") is get_task("STS-B") is GLUE_TASKS["sts-b"]
    assert get_task("MNLI-mm") is get_task("mnli-m") is GLUE_TASKS["mnli"]
    assert [f for _, f in GLUE_TASKS["mnli"].eval_sets] == ["dev_matched.tsv",
                                                            "dev_mismatched.tsv"]
    assert GLUE_TASKS["mnli"].n_out == 3 and GLUE_TASKS["sts-b"].n_out == 1
    assert GLUE_TASKS["sts-b"].is_regression and not GLUE_TASKS["rte"].is_regression
    assert GLUE_TASKS["mrpc"].metrics == ("accuracy", "f1")
    assert GLUE_TASKS["qqp"].metrics == ("accuracy", "f1")
    assert GLUE_TASKS["cola"].main_metric == "mcc"
    assert GLUE_TASKS["sts-b"].main_metric == "spearman"
    assert not GLUE_TASKS["sst-2"].is_pair and GLUE_TASKS["qnli"].is_pair
    with pytest.raises(ValueError, match="wnli"):
        get_task("wnli")


def test_mrpc_header_with_a_byte_order_mark_and_bare_quotes(tmp_path):
    # QUOTE_NONE: a lone double quote is text, it must not swallow the tab or the newline
    text = ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            "1\t702876\t702977\tHe said \"the witness, then left.\tHe left.\n"
            "0\t2108705\t2108831\t\"Yes\" he said\tNo\n")
    path = _write(tmp_path / "MRPC" / "train.tsv", text)
    split = read_glue_tsv(path, "mrpc")
    assert split.text_a == ["He said \"the witness, then left.", "\"Yes\" he said"]
    assert split.text_b == ["He left.", "No"]
    assert split.labels.tolist() == [1, 0] and split.labels.dtype == np.int64
    assert split.lines.tolist() == [2, 3]
    assert split.bad_rows == ()


def test_cola_has_no_header_and_no_final_newline(tmp_path):
    text = ("gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
            "gj04\t0\t*\tThe more we study verbs, the crazier they get get.\n"
            "cj99\t1\t\tHe said \"hello")  # last line: no newline
    _write(tmp_path / "CoLA" / "dev.tsv", text)
    split = read_glue_split(tmp_path, "cola", "dev")
    assert split.text_a == ["The sailors rode the breeze clear of the rocks.",
                            "The more we study verbs, the crazier they get get.",
                            "He said \"hello"]
    assert split.text_b is None
    assert split.labels.tolist() == [1, 0, 1]
    assert split.lines.tolist() == [1, 2, 3]


def test_stsb_ten_columns_scores_and_crlf(tmp_path):
    rows = ["0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane takes off.\t"
            "An air plane is taking off.\t5.000",
            "1\tmain-forums\tMSRvid\t2012test\t0004\tnone\tnone\tA man plays.\tA cat.\t0.5"]
    _write(tmp_path / "STS-B" / "dev.tsv", "\r\n".join([STSB_HEADER, *rows]) + "\r\n")
    split = read_glue_split(tmp_path, "sts-b", "dev")
    assert split.text_a == ["A plane takes off.", "A man plays."]
    assert split.text_b == ["An air plane is taking off.", "A cat."]  # no "\r" left over
    assert split.labels.tolist() == [5.0, 0.5] and split.labels.dtype == np.float64


def test_mnli_reads_both_dev_files_by_header_name(tmp_path):
    def row(i, label):
        return "\t".join([str(i), "1", "2", "fiction", "(p)", "(h)", "(P)", "(H)",
                          f"premise {i}", f"hypothesis {i}", label, label, label, label,
                          label, label])

    _write(tmp_path / "MNLI" / "dev_matched.tsv",
           "\n".join([MNLI_HEADER, row(0, "neutral"), row(1, "contradiction")]) + "\n")
    _write(tmp_path / "MNLI" / "dev_mismatched.tsv",
           "\n".join([MNLI_HEADER, row(7, "entailment")]) + "\n")
    matched = read_glue_split(tmp_path, "mnli", "matched")
    mismatched = read_glue_split(tmp_path, "mnli-mm", "mismatched")
    assert matched.text_a == ["premise 0", "premise 1"]
    assert matched.text_b == ["hypothesis 0", "hypothesis 1"]
    assert matched.labels.tolist() == [2, 0]  # contradiction, entailment, neutral
    assert mismatched.labels.tolist() == [1]
    with pytest.raises(ValueError, match="no split 'dev'"):
        read_glue_split(tmp_path, "mnli", "dev")


RTE_BAD = (
    "index\tsentence1\tsentence2\tlabel\n"
    "0\tA man walks.\tA person walks.\tentailment\n"  # line 2: fine
    "1\tA man walks.\tnot_entailment\n"  # line 3: a column is missing
    "2\tIt rains.\tIt is dry.\tcontradiction\n"  # line 4: not an RTE label
    "\n"  # line 5: empty line in the middle
    "4\tA dog.\tAn animal.\tentailment\textra\n"  # line 6: one column too many
    "5\tSun.\tDay.\tnot_entailment\n"  # line 7: fine
    "\n\n"  # trailing blank lines: ignored
)


def test_malformed_rows_are_an_error_naming_every_line(tmp_path):
    path = _write(tmp_path / "RTE" / "train.tsv", RTE_BAD)
    with pytest.raises(GlueFormatError) as info:
        read_glue_split(tmp_path, "rte")
    err = info.value
    assert [r.line for r in err.rows] == [3, 4, 5, 6]
    assert [r.reason for r in err.rows] == [
        "expected 4 tab-separated columns, found 3",
        "label 'contradiction' is not one of ['entailment', 'not_entailment']",
        "empty line",
        "expected 4 tab-separated columns, found 5",
    ]
    message = str(err)
    assert str(path) in message and "4 malformed row(s)" in message
    for line in (3, 4, 5, 6):
        assert f"line {line}:" in message


def test_skip_leaves_bad_rows_out_with_a_warning_listing_them(tmp_path):
    _write(tmp_path / "RTE" / "train.tsv", RTE_BAD)
    with pytest.warns(GlueBadRowsWarning, match=r"left out 4 malformed row\(s\)") as record:
        split = read_glue_split(tmp_path, "rte", on_bad_rows="skip")
    assert "line 3:" in str(record[0].message) and "line 6:" in str(record[0].message)
    assert split.lines.tolist() == [2, 7]
    assert split.labels.tolist() == [0, 1]
    assert [r.line for r in split.bad_rows] == [3, 4, 5, 6]
    with pytest.raises(ValueError, match="on_bad_rows"):
        read_glue_split(tmp_path, "rte", on_bad_rows="ignore")


def test_bad_scores_and_bad_bytes_are_reported(tmp_path):
    rows = [b"0\tg\tf\ty\to\ts\ts\tA.\tB.\tabc",
            b"1\tg\tf\ty\to\ts\ts\tA.\tB.\tnan",
            b"2\tg\tf\ty\to\ts\ts\tA \xff.\tB.\t1.0",
            b"3\tg\tf\ty\to\ts\ts\tA.\tB.\t4.2"]
    path = _write(tmp_path / "stsb.tsv", b"\n".join([STSB_HEADER.encode(), *rows]))
    with pytest.raises(GlueFormatError) as info:
        read_glue_tsv(path, "sts-b")
    assert [(r.line, r.reason.split(" (")[0]) for r in info.value.rows] == [
        (2, "score 'abc' is not a finite number"),
        (3, "score 'nan' is not a finite number"),
        (4, "not valid UTF-8"),
    ]
    with pytest.warns(GlueBadRowsWarning, match="left out 3"):
        split = read_glue_tsv(path, "sts-b", on_bad_rows="skip")
    assert split.labels.tolist() == [4.2] and split.lines.tolist() == [5]


def test_header_problems_and_missing_files_are_clear(tmp_path):
    path = _write(tmp_path / "RTE" / "dev.tsv", "index\tpremise\thypothesis\tlabel\n0\ta\tb\t1\n")
    with pytest.raises(GlueFormatError, match=r"lacks column\(s\) \['sentence1', 'sentence2'\]"):
        read_glue_tsv(path, "rte")
    _write(tmp_path / "empty" / "dev.tsv", "\n")
    with pytest.raises(GlueFormatError, match="is empty"):
        read_glue_tsv(tmp_path / "empty" / "dev.tsv", "sst-2")
    with pytest.raises(FileNotFoundError, match=r"train\.tsv"):
        read_glue_split(tmp_path, "rte", "train")
    with pytest.raises(FileNotFoundError, match="no MRPC folder"):
        read_glue_split(tmp_path, "mrpc", "dev")


def test_task_folders_are_found_case_insensitively(tmp_path):
    (tmp_path / "sts-b").mkdir()
    (tmp_path / "sst2").mkdir()
    assert task_directory(tmp_path, "sts-b") == tmp_path / "sts-b"
    assert task_directory(tmp_path, "SST-2") == tmp_path / "sst2"
    _write(tmp_path / "sts-b" / "dev.tsv", STSB_HEADER + "\n")
    assert task_directory(tmp_path / "sts-b", "stsb") == tmp_path / "sts-b"  # the folder itself
    with pytest.raises(FileNotFoundError, match="no RTE folder"):
        task_directory(tmp_path, "rte")


# ---- metrics -------------------------------------------------------------------------------
Y_TRUE = np.array([1, 1, 0, 0, 1, 0, 1, 1])
Y_PRED = np.array([1, 0, 0, 1, 1, 0, 1, 0])  # tp 3, fn 2, fp 1, tn 2


def test_binary_metrics_exact_on_hand_made_values():
    from sklearn.metrics import f1_score
    from sklearn.metrics import matthews_corrcoef as sk_mcc

    assert accuracy(Y_TRUE, Y_PRED) == 5 / 8
    assert binary_f1(Y_TRUE, Y_PRED) == pytest.approx(2 * 3 / (2 * 3 + 1 + 2), abs=1e-15)
    expected_mcc = (3 * 2 - 1 * 2) / math.sqrt(4 * 5 * 3 * 4)
    assert matthews_corrcoef(Y_TRUE, Y_PRED) == pytest.approx(expected_mcc, abs=1e-15)
    assert binary_f1(Y_TRUE, Y_PRED) == pytest.approx(f1_score(Y_TRUE, Y_PRED), abs=1e-12)
    assert matthews_corrcoef(Y_TRUE, Y_PRED) == pytest.approx(sk_mcc(Y_TRUE, Y_PRED), abs=1e-12)


def test_mcc_multiclass_and_degenerate_cases_match_sklearn():
    from sklearn.metrics import matthews_corrcoef as sk_mcc

    rng = np.random.default_rng(3)
    y, p = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    assert matthews_corrcoef(y, p) == pytest.approx(sk_mcc(y, p), abs=1e-12)
    constant = np.ones(6, dtype=int)
    assert matthews_corrcoef(Y_TRUE[:6], constant) == 0.0 == sk_mcc(Y_TRUE[:6], constant)
    assert matthews_corrcoef(Y_TRUE, Y_TRUE) == 1.0
    assert matthews_corrcoef(Y_TRUE, 1 - Y_TRUE) == -1.0
    assert binary_f1(np.zeros(4), np.zeros(4)) == 0.0  # no positives anywhere


def test_correlations_with_ties_match_scipy():
    from scipy.stats import pearsonr, spearmanr

    x = np.array([1.0, 2.0, 2.0, 3.5, 5.0, 0.0])
    y = np.array([0.5, 2.5, 1.0, 1.0, 4.0, 0.2])
    assert pearson(x, y) == pytest.approx(pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y)[0], abs=1e-12)
    # by hand: ranks x = [2, 3.5, 3.5, 5, 6, 1], y = [2, 5, 3.5, 3.5, 6, 1]
    rx, ry = np.array([2, 3.5, 3.5, 5, 6, 1]), np.array([2, 5, 3.5, 3.5, 6, 1])
    dx, dy = rx - rx.mean(), ry - ry.mean()
    assert spearman(x, y) == pytest.approx(dx @ dy / math.sqrt((dx @ dx) * (dy @ dy)), abs=1e-15)
    assert math.isnan(pearson(x, np.full(6, 2.0)))
    assert spearman(x, -x) == -1.0


def test_glue_metrics_per_task():
    assert glue_metrics("mrpc", Y_TRUE, Y_PRED) == pytest.approx(
        {"accuracy": 5 / 8, "f1": 6 / 9})
    assert list(glue_metrics("sts-b", np.arange(4.0), np.array([0.0, 2, 1, 3]))) == [
        "spearman", "pearson"]
    assert glue_metrics("cola", Y_TRUE, Y_TRUE) == {"mcc": 1.0}
    with pytest.raises(ValueError, match="equal-length"):
        accuracy(Y_TRUE, Y_PRED[:3])
    with pytest.raises(ValueError, match="zero"):
        accuracy(np.array([]), np.array([]))
