"""The GLUE tasks: registry, TSV reader and metrics.

Files are the standard GLUE TSVs (as written by ``download_glue_data.py``), one folder
per task under a data directory (``RTE/train.tsv``, ``MNLI/dev_matched.tsv``, ...).
They are tab-separated with no quoting at all (``csv.QUOTE_NONE``): a ``"`` is an
ordinary character, so every line is split on tabs and nothing else. The reader keeps
the quirks of the real files in mind: MRPC's header starts with a UTF-8 byte-order
mark, CoLA has no header (and its dev file no final newline), STS-B has ten columns.
Columns are found by header name where the file has a header.

Malformed rows (wrong column count, a label outside the task's set, a score that is
not a number, an empty line, bytes that are not UTF-8) are never dropped silently:
they raise :class:`GlueFormatError` listing every line number, or, with
``on_bad_rows="skip"``, are left out with a :class:`GlueBadRowsWarning` listing them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "BAD_ROW_POLICIES", "GLUE_TASKS", "BadRow", "GlueBadRowsWarning", "GlueFormatError",
    "GlueSplit", "GlueTask", "accuracy", "binary_f1", "get_task", "glue_metrics",
    "matthews_corrcoef", "pearson", "read_glue_split", "read_glue_tsv", "spearman",
    "task_directory",
]  # fmt: skip

BAD_ROW_POLICIES = ("error", "skip")
_MAX_ROWS_IN_MESSAGE = 50


class GlueTask(NamedTuple):
    """How one GLUE task's files look and how it is scored."""

    name: str  # registry key, e.g. "sts-b"
    display: str  # e.g. "STS-B"
    directory: str  # folder name in the GLUE download
    has_header: bool
    n_columns: int | None  # columns of a header-less file; None: as many as the header
    text_columns: tuple[str | int, ...]  # one sentence or a pair: header names or indices
    label_column: str | int
    labels: tuple[str, ...] | None  # class strings in class-index order; None: regression
    eval_sets: tuple[tuple[str, str], ...]  # (name, file name) of the dev files
    metrics: tuple[str, ...]  # reported, in this order
    main_metric: str  # selects the best epoch (on the first eval set) and heads the table
    train_file: str = "train.tsv"

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def is_pair(self) -> bool:
        return len(self.text_columns) == 2

    @property
    def n_out(self) -> int:
        """Outputs of the fine-tuning head: one value, or one logit per class."""
        return 1 if self.labels is None else len(self.labels)


_DEV = (("dev", "dev.tsv"),)
_NLI = ("entailment", "not_entailment")

#: The eight GLUE tasks of the paper's Table 3 (MNLI is one task, scored on two dev sets).
GLUE_TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in (
        GlueTask("mnli", "MNLI", "MNLI", True, None, ("sentence1", "sentence2"), "gold_label",
                 ("contradiction", "entailment", "neutral"),
                 (("matched", "dev_matched.tsv"), ("mismatched", "dev_mismatched.tsv")),
                 ("accuracy",), "accuracy"),
        GlueTask("qqp", "QQP", "QQP", True, None, ("question1", "question2"), "is_duplicate",
                 ("0", "1"), _DEV, ("accuracy", "f1"), "accuracy"),
        GlueTask("qnli", "QNLI", "QNLI", True, None, ("question", "sentence"), "label", _NLI,
                 _DEV, ("accuracy",), "accuracy"),
        GlueTask("sst-2", "SST-2", "SST-2", True, None, ("sentence",), "label", ("0", "1"),
                 _DEV, ("accuracy",), "accuracy"),
        # CoLA: source, label, the author's original mark ("*" or empty), sentence
        GlueTask("cola", "CoLA", "CoLA", False, 4, (3,), 1, ("0", "1"), _DEV, ("mcc",), "mcc"),
        GlueTask("rte", "RTE", "RTE", True, None, ("sentence1", "sentence2"), "label", _NLI,
                 _DEV, ("accuracy",), "accuracy"),
        GlueTask("mrpc", "MRPC", "MRPC", True, None, ("#1 String", "#2 String"), "Quality",
                 ("0", "1"), _DEV, ("accuracy", "f1"), "accuracy"),
        GlueTask("sts-b", "STS-B", "STS-B", True, None, ("sentence1", "sentence2"), "score",
                 None, _DEV, ("spearman", "pearson"), "spearman"),
    )
}


def get_task(name: str) -> GlueTask:
    """The task called ``name`` (case, ``-`` and ``_`` ignored: "SST2", "sts_b", "mnli-m").

    "mnli-m" and "mnli-mm" name MNLI, which is trained once and scored on both dev sets.
    """
    key = name.lower().replace("_", "").replace("-", "")
    for task in GLUE_TASKS.values():
        if key in (task.name.replace("-", ""), task.display.lower().replace("-", "")):
            return task
    if key in ("mnlim", "mnlimm"):
        return GLUE_TASKS["mnli"]
    raise ValueError(f"unknown GLUE task {name!r}; choose from {sorted(GLUE_TASKS)}")


class BadRow(NamedTuple):
    """One malformed line of a TSV file."""

    line: int  # 1-based line number in the file (the header is line 1)
    reason: str
    text: str  # the line as read (undecodable bytes replaced)


class GlueFormatError(ValueError):
    """A GLUE file has malformed rows (``.rows``) or an unusable header."""

    def __init__(self, path: str | Path, rows: Sequence[BadRow] = (), problem: str = "") -> None:
        self.path = str(path)
        self.rows: tuple[BadRow, ...] = tuple(BadRow(*r) for r in rows)
        message = problem or (
            f"{len(self.rows)} malformed row(s) in {self.path}:\n{_list_rows(self.rows)}\n"
            "(on_bad_rows='skip' / --on-bad-rows skip leaves them out with a warning)")
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.path, self.rows, "" if self.rows else str(self)))


class GlueBadRowsWarning(UserWarning):
    """Malformed rows were left out (``on_bad_rows="skip"``); the message lists them."""


def _list_rows(rows: Sequence[BadRow]) -> str:
    shown = "\n".join(f"  line {r.line}: {r.reason}: {r.text!r:.80}"
                      for r in rows[:_MAX_ROWS_IN_MESSAGE])
    more = len(rows) - _MAX_ROWS_IN_MESSAGE
    return shown + (f"\n  ... and {more} more" if more > 0 else "")


class GlueSplit(NamedTuple):
    """The usable rows of one GLUE file, aligned with their line numbers."""

    task: str  # registry key
    split: str  # "train" or an eval set name ("dev", "matched", ...)
    path: str
    text_a: list[str]
    text_b: list[str] | None  # None for single-sentence tasks
    labels: np.ndarray  # [N] int64 class index, or float64 score (regression)
    lines: np.ndarray  # [N] int64 1-based line number of each row in the file
    bad_rows: tuple[BadRow, ...]  # rows left out (only with on_bad_rows="skip")

    @property
    def n_examples(self) -> int:
        return len(self.text_a)

    def subset(self, index: np.ndarray) -> GlueSplit:
        """The rows at ``index`` (in that order)."""
        index = np.asarray(index, dtype=np.int64)
        return self._replace(
            text_a=[self.text_a[i] for i in index],
            text_b=None if self.text_b is None else [self.text_b[i] for i in index],
            labels=self.labels[index],
            lines=self.lines[index],
        )


def _column_index(header: list[str], task: GlueTask, path: Path) -> dict[str | int, int]:
    """Map each needed column (header name or index) to its index in a row."""
    wanted = (*task.text_columns, task.label_column)
    if not task.has_header:
        return {c: int(c) for c in wanted}
    names = [h.strip() for h in header]
    missing = [c for c in wanted if c not in names]
    if missing:
        raise GlueFormatError(path, problem=(
            f"{path}: the header lacks column(s) {missing} that {task.display} needs; "
            f"line 1 holds {names}"))
    return {c: names.index(c) for c in wanted}


def read_glue_tsv(path: str | Path, task: str | GlueTask, split: str = "train",
                  on_bad_rows: str = "error") -> GlueSplit:
    """Read one GLUE TSV file of ``task``.

    Parameters
    ----------
    path : path
        The file (UTF-8, optionally with a byte-order mark; LF or CRLF line ends).
    task : str or GlueTask
    split : str
        Recorded in the result ("train", "dev", "matched", ...).
    on_bad_rows : {"error", "skip"}
        ``error``: raise :class:`GlueFormatError` listing every malformed line.
        ``skip``: leave them out, warn with :class:`GlueBadRowsWarning` (count and line
        numbers), and keep them in ``GlueSplit.bad_rows``.

    Returns
    -------
    GlueSplit
    """
    task = get_task(task) if isinstance(task, str) else task
    if on_bad_rows not in BAD_ROW_POLICIES:
        raise ValueError(f"on_bad_rows must be one of {BAD_ROW_POLICIES}, got {on_bad_rows!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{task.display} file not found: {path}")
    raw_lines = path.read_bytes().split(b"\n")
    if raw_lines and raw_lines[0].startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark
        raw_lines[0] = raw_lines[0][3:]
    while raw_lines and not raw_lines[-1].strip():  # the final newline and trailing blanks
        raw_lines.pop()

    if not raw_lines:
        raise GlueFormatError(path, problem=f"{path} is empty")
    start = 0
    if task.has_header:
        try:
            header = raw_lines[0].removesuffix(b"\r").decode("utf-8").split("\t")
        except UnicodeDecodeError:
            raise GlueFormatError(path, problem=f"{path}: line 1 (the header) is not valid "
                                  "UTF-8") from None
        columns, n_columns, start = _column_index(header, task, path), len(header), 1
    else:
        columns, n_columns = _column_index([], task, path), task.n_columns

    bad: list[BadRow] = []
    text_a: list[str] = []
    text_b: list[str] = []
    labels: list[float] = []
    lines: list[int] = []
    for number, raw in enumerate(raw_lines[start:], start=start + 1):
        raw = raw.removesuffix(b"\r")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            bad.append(BadRow(number, f"not valid UTF-8 ({err.reason} at byte {err.start})",
                              raw.decode("utf-8", errors="replace")))
            continue
        fields = line.split("\t")
        if not line.strip():
            bad.append(BadRow(number, "empty line", line))
            continue
        if len(fields) != n_columns:
            bad.append(BadRow(number, f"expected {n_columns} tab-separated columns, found "
                                      f"{len(fields)}", line))
            continue
        value = fields[columns[task.label_column]].strip()
        if task.labels is None:
            try:
                label = float(value)
            except ValueError:
                label = math.nan
            if not math.isfinite(label):
                bad.append(BadRow(number, f"score {value!r} is not a finite number", line))
                continue
        elif value in task.labels:
            label = task.labels.index(value)
        else:
            bad.append(BadRow(number, f"label {value!r} is not one of {list(task.labels)}",
                              line))
            continue
        text_a.append(fields[columns[task.text_columns[0]]])
        if task.is_pair:
            text_b.append(fields[columns[task.text_columns[1]]])
        labels.append(label)
        lines.append(number)
    if bad and on_bad_rows == "error":
        raise GlueFormatError(path, bad)
    if bad:
        warnings.warn(f"left out {len(bad)} malformed row(s) of {path}:\n{_list_rows(bad)}",
                      GlueBadRowsWarning, stacklevel=2)
    dtype = np.float64 if task.is_regression else np.int64
    return GlueSplit(task.name, split, str(path), text_a, text_b if task.is_pair else None,
                     np.asarray(labels, dtype=dtype), np.asarray(lines, dtype=np.int64),
                     tuple(bad))


def task_directory(data_dir: str | Path, task: str | GlueTask) -> Path:
    """The folder of ``task`` under ``data_dir`` (``data_dir/RTE``; case ignored).

    ``data_dir`` may also be the task folder itself.
    """
    task = get_task(task) if isinstance(task, str) else task
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"GLUE data directory not found: {data_dir}")
    exact = data_dir / task.directory
    if exact.is_dir():
        return exact
    for child in sorted(data_dir.iterdir()):
        if child.is_dir() and child.name.lower().replace("-", "") == task.name.replace("-", ""):
            return child
    files = (task.train_file, *(f for _, f in task.eval_sets))
    if any((data_dir / f).is_file() for f in files) and (
            data_dir.name.lower().replace("-", "") == task.name.replace("-", "")):
        return data_dir
    raise FileNotFoundError(f"no {task.display} folder in {data_dir}: expected "
                            f"{exact}/ holding {', '.join(files)}")


def read_glue_split(data_dir: str | Path, task: str | GlueTask, split: str = "train",
                    on_bad_rows: str = "error") -> GlueSplit:
    """Read ``split`` ("train" or an eval set name such as "dev", "matched") of ``task``."""
    task = get_task(task) if isinstance(task, str) else task
    files = {"train": task.train_file, **dict(task.eval_sets)}
    if split not in files:
        raise ValueError(f"{task.display} has no split {split!r}; choose from {list(files)}")
    path = task_directory(data_dir, task) / files[split]
    return read_glue_tsv(path, task, split, on_bad_rows)


def _pair(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ValueError(f"need two equal-length 1-D arrays, got {y_true.shape} and "
                         f"{y_pred.shape}")
    if y_true.size == 0:
        raise ValueError("cannot score zero examples")
    return y_true, y_pred


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Share of predicted classes equal to the true ones."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def binary_f1(y_true: np.ndarray, y_pred: np.ndarray, positive: int = 1) -> float:
    """F1 of the ``positive`` class; 0 when it is neither true nor predicted anywhere."""
    y_true, y_pred = _pair(y_true, y_pred)
    tp = int(np.sum((y_pred == positive) & (y_true == positive)))
    predicted, actual = int(np.sum(y_pred == positive)), int(np.sum(y_true == positive))
    if predicted + actual == 0:
        return 0.0
    return 2.0 * tp / (predicted + actual)


def matthews_corrcoef(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Matthews correlation (Gorodkin's multi-class form); 0 when undefined."""
    y_true, y_pred = _pair(y_true, y_pred)
    classes, index = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    k, n = classes.size, y_true.size
    confusion = np.zeros((k, k), dtype=np.float64)  # [true, predicted]
    np.add.at(confusion, (index[:n], index[n:]), 1.0)
    t, p = confusion.sum(1), confusion.sum(0)
    correct, total = np.trace(confusion), float(n)
    cov_tp = correct * total - t @ p
    cov_pp, cov_tt = total**2 - p @ p, total**2 - t @ t
    if cov_pp == 0 or cov_tt == 0:
        return 0.0
    return float(cov_tp / math.sqrt(cov_pp * cov_tt))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; NaN when either side is constant."""
    x, y = _pair(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0:
        return math.nan
    return float(np.clip(float(dx @ dy) / denominator, -1.0, 1.0))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their ranks."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # rank of the last member of each tie group
    return (ends - (counts - 1) / 2.0)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (Pearson of average ranks); NaN when a side is constant."""
    x, y = _pair(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return pearson(_average_ranks(x), _average_ranks(y))


_METRICS = {
    "accuracy": accuracy, "f1": binary_f1, "mcc": matthews_corrcoef,
    "pearson": pearson, "spearman": spearman,
}  # fmt: skip


def glue_metrics(task: str | GlueTask, y_true: np.ndarray, predictions: np.ndarray
                 ) -> dict[str, float]:
    """The task's metrics: ``predictions`` are class indices, or scores for STS-B.

    Returns
    -------
    dict
        ``{metric: value}`` in the order of ``task.metrics``, values as fractions
        (accuracy 0.85, not 85).
    """
    task = get_task(task) if isinstance(task, str) else task
    return {name: _METRICS[name](y_true, predictions) for name in task.metrics}
