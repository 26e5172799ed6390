#!/usr/bin/env bash
# Create .venv with exlm_chem installed. Usage: bash scripts/setup.sh [dev]
#   no argument: the package and its runtime dependencies
#   dev:         also the test/lint tools, deepchem (reference splitter) and triton (kernels),
#                and .venv-triton36 (see scripts/test_triton36.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# --no-compile: pip would byte-compile every module it installs (torch's alone took 30 of
# its 46 CPU-s to install); Python compiles the ones a command imports, once, on first use
# (where PYTHONDONTWRITEBYTECODE is set, on every use: scripts/test.sh unsets it)
PIP=(.venv/bin/pip install -q --no-compile)
"${PIP[@]}" --upgrade pip
# torch first and pinned: a plain `pip install torch` would pull the newest CUDA build
"${PIP[@]}" torch==2.13.0
if [ "${1:-}" = "dev" ]; then
  "${PIP[@]}" -c constraints.txt -e ".[dev,triton]"
  bash scripts/test_triton36.sh --setup
else
  "${PIP[@]}" -c constraints.txt -e .
fi
.venv/bin/python -c "import torch, exlm_chem; print('exlm_chem', exlm_chem.__version__, 'torch', torch.__version__)"
