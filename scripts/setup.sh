#!/usr/bin/env bash
# Create .venv with exlm_chem installed. Usage: bash scripts/setup.sh [dev]
#   no argument: the package and its runtime dependencies
#   dev:         also the test/lint tools, deepchem (reference splitter) and triton (kernels),
#                and .venv-triton36 (see scripts/test_triton36.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
PIP=".venv/bin/pip"
$PIP install -q --upgrade pip
# torch first and pinned: a plain `pip install torch` would pull the newest CUDA build
$PIP install -q torch==2.13.0
if [ "${1:-}" = "dev" ]; then
  $PIP install -q -c constraints.txt -e ".[dev,triton]"
  bash scripts/test_triton36.sh --setup
else
  $PIP install -q -c constraints.txt -e .
fi
.venv/bin/python -c "import torch, exlm_chem; print('exlm_chem', exlm_chem.__version__, 'torch', torch.__version__)"
