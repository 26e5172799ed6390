#!/usr/bin/env python
"""The panel's HTML report opened in a real headless browser (Debian's Chromium), with a
screenshot: it must render from the one file, with no server and no network.

Scores a few approved drugs and a molecule far from every training set with
``exlm-chem admet --report``, has Chromium render the page (``--dump-dom`` for the rendered
document, ``--screenshot`` for the picture) and checks that every molecule's drawing and
radar reached the rendered page. Exit status 1 when a check fails.

Usage::

    python benchmarks/admet/report_screenshot.py [--out benchmarks/results/admet]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from exlm_chem.provenance import REPO

MOLECULES = ("CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
             "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "CN1CCC[C@H]1c1cccnc1",
             "FC(F)(F)C(F)(F)C(F)(F)[Si](C(F)(F)F)(C(F)(F)F)C(F)(F)F", "not a molecule")


def browser() -> str | None:
    """Debian's Chromium, where installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def render(html: Path, png: Path, chromium: str) -> str:
    """The rendered DOM of ``html``, and its screenshot written to ``png``."""
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files"]
    subprocess.run([*flags, f"--screenshot={png}", "--window-size=1400,1800",
                    html.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    dom = subprocess.run([*flags, "--dump-dom", html.resolve().as_uri()], check=True,
                         capture_output=True, text=True, timeout=120)
    return dom.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "admet"))
    args = parser.parse_args()
    chromium = browser()
    if chromium is None:
        print("no Chromium here (apt-get install chromium)", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "molecules.csv"
        data.write_text("smiles\n" + "\n".join(MOLECULES) + "\n")
        html = out / "report.html"
        subprocess.run([str(Path(sys.executable).with_name("exlm-chem")), "admet", str(data),
                        "--out", str(Path(tmp) / "p.csv"), "--report", str(html),
                        "--no-progress"], check=True, cwd=REPO)
        dom = render(html, out / "report.png", chromium)
    valid = len(MOLECULES) - 1
    checks = {"a drawing and a radar per valid molecule": dom.count("<svg") >= 2 * valid,
              "the invalid row is shown with its reason": "invalid:" in dom,
              "endpoints grouped": all(g in dom for g in ("Absorption", "Distribution",
                                                          "Metabolism", "Excretion",
                                                          "Toxicity")),
              "an out-of-domain flag": "class=\"out\"" in dom}
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    print(f"screenshot: {out / 'report.png'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
