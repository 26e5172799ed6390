"""The panel's model card: what each endpoint was fitted on, and how well it does.

:func:`write_model_card` writes ``MODEL_CARD.md`` into a panel folder from its manifest
(:mod:`exlm_chem.admet.assemble`): the settings, data checksums, commit and CPU time, each
endpoint's figures on its scaffold and out-of-distribution held-out parts, the TDC test
figure of the member's recipe measured under the leaderboard protocol where a record of it
is given, Chemprop-RDKit's published figure (the model ADMET-AI ships), the domain cut-off
and its evidence, the drug reference set and the units table.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.admet.endpoints import Endpoint, units_table

__all__ = ["TDC_RECORDS", "tdc_test_figures", "write_model_card"]

#: the committed records of the member's recipe fitted on TDC's train_val, 5 seeds, scored
#: on the test parts (a source checkout's path)
TDC_RECORDS = Path("benchmarks") / "results" / "tdc_admet" / "records" / "maplight-fit" / \
    "results.jsonl"


def tdc_test_figures(records: str | os.PathLike[str]) -> dict[str, tuple[float, float, int]]:
    """Per TDC task: the mean and sd (population, as TDC) of the leaderboard metric over the
    seeds of a benchmark records file, and the number of seeds."""
    scores: dict[str, list[float]] = defaultdict(list)
    for line in Path(records).read_text().splitlines():
        row = json.loads(line)
        if row.get("split") == "tdc_train_val" and row.get("score") is not None:
            scores[row["task"]].append(float(row["score"]))
    return {task: (float(np.mean(v)), float(np.std(v)), len(v)) for task, v in scores.items()}


def _fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _part(figures: dict[str, Any], part: str, metric: str) -> str:
    got = figures.get(part)
    if not got:
        return "–"
    return f"{_fmt(got.get(metric))} ({got['n']}, {got['median_similarity']:.2f})"


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the checkout when inside it (the card is committed)."""
    import exlm_chem

    path, repo = Path(path).resolve(), Path(exlm_chem.__file__).resolve().parents[1]
    return (path.relative_to(repo) if path.is_relative_to(repo) else path).as_posix()


def _data_file(source: str) -> str:
    """The file an endpoint's ``source`` reads: TDC's group file, a MoleculeNet set, or a
    user's file."""
    kind, _, rest = source.partition(":")
    if kind == "tdc":
        return "TDC ADMET group (`admet_group.zip`)"
    if kind == "moleculenet":
        return f"MoleculeNet `{rest.partition(':')[0]}`"
    return f"your file `{rest}`"


def _metric(endpoint: Endpoint) -> str:
    if endpoint.source.startswith("tdc:"):
        from exlm_chem.data.tdc_admet import get_tdc_spec

        return get_tdc_spec(endpoint.name).metric
    return "roc_auc" if endpoint.task == "classification" else "mae"


def write_model_card(panel: str | os.PathLike[str],
                     tdc_records: str | os.PathLike[str] | None = None) -> Path:
    """Write ``MODEL_CARD.md`` into ``panel`` (module docstring); returns its path.
    ``tdc_records``: default :data:`TDC_RECORDS` of the checkout, when it exists."""
    from exlm_chem.admet.build import BUILD_SETTINGS
    from exlm_chem.admet.panel import MANIFEST
    from exlm_chem.benchmark.report_tdc import leaderboard
    from exlm_chem.files.safe_write import write_text_atomic

    panel = Path(panel)
    manifest = json.loads((panel / MANIFEST).read_text())
    if tdc_records is None:
        import exlm_chem

        default = Path(exlm_chem.__file__).resolve().parents[1] / TDC_RECORDS
        tdc_records = default if default.is_file() else None
    tdc = tdc_test_figures(tdc_records) if tdc_records else {}
    board = leaderboard()["tasks"]
    entries = manifest["endpoints"]
    endpoints = [Endpoint(**e["endpoint"]) for e in entries]
    cpu = sum(e["cpu_s"] for e in entries)
    domain = manifest["domain"]
    lines = [
        "# ADMET panel: model card", "",
        f"{len(entries)} endpoints, each one model of the package's tree member: "
        f"{BUILD_SETTINGS['member']} on {', '.join(BUILD_SETTINGS['features'])}; "
        "regression endpoints fit the mean of an MAE and an RMSE model, on log(y) where "
        "y is positive and skewed (`target_transform=\"auto\"`). "
        "The network member of the default estimators is not in the panel (a fine-tuned "
        "network per endpoint would not fit the panel's size; a multi-task network is the "
        "next step).", "",
        "**Every shipped model is fitted on every labelled molecule of its endpoint**: for "
        "TDC's tasks, train_val and the test part together. The panel's own figures are "
        "therefore held-out parts of those molecules, and TDC test figures are those of the "
        "same recipe fitted on train_val alone, from the benchmark records.", "",
        f"- Built at commit `{manifest['commit']}`; endpoint fits: "
        f"{cpu / 3600:.2f} CPU-hours in all, {entries[0]['machine']}.",
        "- Rebuild: `exlm-chem admet build` (resumable; an endpoint whose data and settings "
        "are unchanged is not refitted), with the data found as the package's loaders find "
        "it (`$EXLM_CHEM_DATA`).",
        f"- Settings: `{json.dumps(BUILD_SETTINGS)}`.", "",
        "## Held-out parts", "",
        "Before the kept model is fitted on every molecule, the same recipe is fitted on "
        "80 % of them and scored on two held-out parts, which choose nothing else: "
        "**scaffold** (whole Bemis-Murcko scaffolds, 10 %) and **cluster** (whole "
        "Taylor-Butina clusters at Tanimoto 0.4 on Morgan bits, the clusters least like the "
        "rest first, 10 %: the out-of-distribution part). Each cell: the figure (n, median "
        "nearest-neighbour Tanimoto similarity to the molecules fitted on). Classification: "
        "ROC-AUC (PRC-AUC for TDC's AUPRC tasks); regression: MAE in the endpoint's unit "
        "(Spearman for TDC's Spearman tasks).", "",
        "| endpoint | molecules | scaffold part | cluster part | TDC test, this recipe "
        "(train_val fit, seeds) | Chemprop-RDKit, published | CPU-s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for endpoint, entry in zip(endpoints, entries, strict=True):
        metric = _metric(endpoint)
        figures = entry["heldout_figures"]
        test = tdc.get(endpoint.name)
        ours = f"{test[0]:.3f} ± {test[1]:.3f} ({test[2]})" if test else "–"
        published = "–"
        if endpoint.name in board:
            anchor = next((e for e in board[endpoint.name]["entries"]
                           if e["model"] == "Chemprop-RDKit"), None)
            if anchor:
                published = f"{anchor['mean']:.3f} ± {anchor['sd']:.3f}"
        lines.append(f"| `{endpoint.name}` ({metric}) | {entry['n_molecules']} | "
                     f"{_part(figures, 'scaffold', metric)} | {_part(figures, 'cluster', metric)} "
                     f"| {ours} | {published} | {entry['cpu_s']:.0f} |")
    lines += [
        "", "TDC test figures: " + (f"`{_shown(tdc_records)}` (CatBoost on MapLight's "
        "features, MapLight's recipe: MAE alone for regression, no log; the panel's regression "
        "member differs in its losses and target scale)" if tdc_records else "no records given")
        + ".", "",
        "## Probabilities, intervals, domain", "",
        "- Classification: a Platt map of the member's logits fitted on both held-out parts "
        "(the kept model is applied through it).",
        "- Regression: split-conformal intervals at 80 % and 90 % from the held-out parts' "
        "absolute residuals on the scale fitted (multiplicative where logged), apart for "
        "molecules in and out of the domain where each side has at least 20 held-out "
        "molecules.",
        f"- Applicability domain: a molecule is in an endpoint's domain when its nearest "
        f"training molecule of that endpoint has Tanimoto similarity >= **{domain['cutoff']}** "
        f"({domain['fingerprint']}). The cut-off is the similarity that best separates the "
        f"held-out molecules' larger errors from the smaller ones: the {domain['n_heldout']} "
        "held-out molecules of all endpoints pooled (each molecule's error over its "
        "endpoint's mean: squared error of the probability, absolute error of the value), "
        "the grid value where those below it err the most times as much as those at or "
        f"above it ({domain['error_ratio']} times), with at least "
        f"{domain['min_share']:.0%} of the molecules on each side. The held-out parts are "
        "far from their training molecules by design, so most of them sit below it.", "",
        "| cut-off | held-out molecules below | their error over those above |",
        "|---:|---:|---:|",
        *[f"| {row['cutoff']} | {row['share_below']:.1%} | {row['error_ratio']} |"
          for row in domain["table"]],
        "", "## Percentiles among approved drugs", "",
        f"Each value's percentile is the share of the {manifest['reference_set']['name']} "
        f"({manifest['reference_set'].get('n_molecules', '?')} molecules; "
        f"{manifest['reference_set']['source']}; {manifest['reference_set']['licence']}) "
        "whose panel value is at or below it.", "",
        "## Data", "",
        *sorted({f"- {_data_file(e['endpoint']['source'])}: sha256 `{e['data_sha256']}`"
                 for e in entries}),
        "", "## Units", "", units_table(endpoints),
    ]
    return write_text_atomic(panel / "MODEL_CARD.md", "\n".join(lines))
