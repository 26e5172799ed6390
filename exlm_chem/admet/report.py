"""The panel's table as one static HTML page: no server, no network, nothing to install.

:func:`write_report` writes a summary of the file (molecules, invalid rows, per endpoint the
median value and the share in domain) and, per molecule, its 2D drawing (RDKit's SVG), a
radar of its percentiles among approved drugs on the endpoints chemists read first, and its
endpoints grouped as absorption, distribution, metabolism, excretion and toxicity, with
units, intervals, the domain flag and percentiles. Everything is inline (SVG and CSS).
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.admet.endpoints import GROUPS

__all__ = ["MAX_MOLECULES", "RADAR_ENDPOINTS", "radar_svg", "write_report"]

#: molecules drawn one by one (the summary covers every row)
MAX_MOLECULES = 200
#: the radar's axes: endpoint, label (percentiles among approved drugs)
RADAR_ENDPOINTS = (
    ("hia_hou", "HIA"), ("bioavailability_ma", "Bioavailability"),
    ("solubility_aqsoldb", "Solubility"), ("bbb_martins", "BBB"),
    ("herg", "hERG block"), ("clintox_ct_tox", "ClinTox"), ("ames", "Ames"),
    ("cyp3a4_veith", "CYP3A4 inh."),
)
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2733}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}h3{font-size:14px;margin:10px 0 4px}
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #e3e7ec;
padding:3px 8px;text-align:right}th{background:#f3f5f8}
td:first-child,th:first-child{text-align:left}
.mol{border:1px solid #d5dbe3;border-radius:8px;padding:12px;margin:16px 0;display:grid;
grid-template-columns:260px 260px minmax(0,1fr);gap:16px;page-break-inside:avoid}
.smiles{font-family:monospace;font-size:11px;word-break:break-all}
.out{color:#b3261e;font-weight:600}.in{color:#1e7b34}.muted{color:#6b7785;font-size:12px}
.groups{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
"""


def _molecule_svg(smiles: str, size: int = 250) -> str:
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return "<p class='muted'>no drawing</p>"
    drawer = rdMolDraw2D.MolDraw2DSVG(size, size)
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    svg = drawer.GetDrawingText()
    return svg[svg.index("<svg"):]  # without the XML declaration


def radar_svg(values: list[float], labels: list[str], size: int = 250) -> str:
    """A radar (spider) chart of percentiles in [0, 100], one axis per label, as SVG."""
    centre, radius = size / 2, size / 2 - 42
    n = len(labels)

    def point(i: int, r: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        return centre + r * math.cos(angle), centre + r * math.sin(angle)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'viewBox="0 0 {size} {size}">']
    for level in (25, 50, 75, 100):
        ring = " ".join(f"{x:.1f},{y:.1f}" for x, y in
                        (point(i, radius * level / 100) for i in range(n)))
        parts.append(f'<polygon points="{ring}" fill="none" stroke="#d5dbe3"/>')
    for i, label in enumerate(labels):
        x, y = point(i, radius)
        lx, ly = point(i, radius + 18)
        parts.append(f'<line x1="{centre}" y1="{centre}" x2="{x:.1f}" y2="{y:.1f}" '
                     'stroke="#d5dbe3"/>')
        parts.append(f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="10" text-anchor="middle" '
                     f'dominant-baseline="middle" fill="#44505e">{escape(label)}</text>')
    shown = [0.0 if not np.isfinite(v) else float(v) for v in values]
    shape = " ".join(f"{x:.1f},{y:.1f}" for x, y in
                     (point(i, radius * v / 100) for i, v in enumerate(shown)))
    parts.append(f'<polygon points="{shape}" fill="rgba(38,110,200,0.25)" stroke="#266ec8" '
                 'stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def _value(row: Any, name: str, task: str) -> str:
    value = row.get(name)
    if value is None or not np.isfinite(value):
        return "–"
    text = f"{value:.2f}" if task == "classification" else f"{value:.3g}"
    lower, upper = row.get(f"{name}_lower80"), row.get(f"{name}_upper80")
    if lower is not None and np.isfinite(lower):
        text += f" <span class='muted'>[{lower:.3g}, {upper:.3g}]</span>"
    return text


def _endpoint_rows(row: Any, endpoints: list[Any], group: str) -> str:
    cells = []
    for e in endpoints:
        if e.group != group:
            continue
        inside = row.get(f"{e.name}_in_domain")
        flag = ("<span class='in'>in</span>" if inside is True
                else "<span class='out'>out</span>" if inside is False else "–")
        pct = row.get(f"{e.name}_drug_percentile")
        pct_text = "–" if pct is None or not np.isfinite(pct) else f"{pct:.0f}"
        cells.append(f"<tr><td title='{escape(e.description)}'>{escape(e.name)}</td>"
                     f"<td>{_value(row, e.name, e.task)}</td><td>{escape(e.unit)}</td>"
                     f"<td>{flag}</td><td>{pct_text}</td></tr>")
    if not cells:
        return ""
    return (f"<div><h3>{group.capitalize()}</h3><table><tr><th>endpoint</th><th>value "
            "[80 %]</th><th>unit</th><th>domain</th><th>drug %ile</th></tr>"
            + "".join(cells) + "</table></div>")


def write_report(table: Any, panel: Any, path: str | os.PathLike[str]) -> Path:
    """Write the HTML report of a panel ``table`` (:meth:`~exlm_chem.admet.panel.Panel.
    predict`'s, or ``exlm-chem admet``'s output read back) to ``path``; returns it."""
    from exlm_chem.files.safe_write import write_text_atomic

    endpoints = panel.endpoints
    groups = [*GROUPS, *sorted({e.group for e in endpoints} - set(GROUPS))]
    valid = table["valid"].astype(bool).to_numpy()
    summary = []
    for e in endpoints:
        values = table.loc[valid, e.name].to_numpy(np.float64)
        inside = table.loc[valid, f"{e.name}_in_domain"].astype(bool).to_numpy()
        median = f"{np.nanmedian(values):.3g}" if valid.any() else "–"
        share = f"{100 * inside.mean():.0f} %" if valid.any() else "–"
        summary.append(f"<tr><td>{escape(e.name)}</td><td>{escape(e.group)}</td>"
                       f"<td>{escape(e.unit)}</td><td>{median}</td><td>{share}</td></tr>")
    radar = [(name, label) for name, label in RADAR_ENDPOINTS
             if f"{name}_drug_percentile" in table.columns]
    cards = []
    for position, row in enumerate(table.head(MAX_MOLECULES).to_dict("records")):
        title = f"Row {position}"
        if not row["valid"]:
            cards.append(f"<div class='mol'><div><h3>{title}</h3><p class='smiles'>"
                         f"{escape(str(row['smiles']))}</p></div><div class='out'>invalid: "
                         f"{escape(str(row['invalid_reason']))}</div><div></div></div>")
            continue
        outside = sum(row.get(f"{e.name}_in_domain") is False for e in endpoints)
        alerts = escape(str(row.get("alerts") or "none"))
        pcts = [row.get(f"{name}_drug_percentile", float("nan")) for name, _ in radar]
        cards.append(
            f"<div class='mol'><div><h3>{title}</h3>{_molecule_svg(row['canonical_smiles'])}"
            f"<p class='smiles'>{escape(str(row['smiles']))}</p>"
            f"<p class='muted'>MW {row['molecular_weight']:.1f} · logP {row['logp']:.2f} · "
            f"TPSA {row['tpsa']:.1f} · QED {row['qed']:.2f} · Lipinski violations "
            f"{row['lipinski_violations']:.0f}</p><p class='muted'>alerts: {alerts}</p></div>"
            f"<div><h3>Percentile among approved drugs</h3>"
            f"{radar_svg(pcts, [label for _, label in radar])}"
            f"<p class='{'out' if outside else 'in'}'>out of domain on {outside} of "
            f"{len(endpoints)} endpoints</p></div>"
            f"<div class='groups'>{''.join(_endpoint_rows(row, endpoints, g) for g in groups)}"
            "</div></div>")
    reference = panel.manifest["reference_set"]
    shown = min(len(table), MAX_MOLECULES)
    html = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>ADMET panel report</title><style>{_CSS}</style></head><body>"
        "<h1>ADMET panel report</h1>"
        f"<p>{len(table)} molecules, {int((~valid).sum())} invalid; {len(endpoints)} "
        f"endpoints. Percentiles among the {escape(reference['name'])}; the domain flag: "
        f"nearest training molecule's Tanimoto similarity >= "
        f"{panel.manifest['domain']['cutoff']}. Panel built at commit "
        f"{escape(panel.manifest['commit'])}; its model card is MODEL_CARD.md in the "
        "panel's folder.</p>"
        "<h2>The file</h2><table><tr><th>endpoint</th><th>group</th><th>unit</th>"
        "<th>median</th><th>in domain</th></tr>" + "".join(summary) + "</table>"
        f"<h2>Molecules ({shown} of {len(table)} shown)</h2>" + "".join(cards)
        + "</body></html>")
    return write_text_atomic(path, html)
