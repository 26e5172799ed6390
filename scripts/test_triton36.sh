#!/usr/bin/env bash
# The Triton kernel tests under triton 3.6, the GPU machine's version (see /work/shared/GPU.md
# or scripts/gpu/README.md): interpreter checks against the reference plus the sm_90 compile
# without a GPU (the slow test), in a small venv of their own that borrows .venv's torch.
#   bash scripts/test_triton36.sh --setup   create .venv-triton36 (scripts/setup.sh dev does)
#   bash scripts/test_triton36.sh [ARGS]    run tests/unit/dag/test_dag_triton.py there
# The package is not installed there: PYTHONPATH points at this checkout, and the test file
# needs only torch, triton, numpy and pytest. NumPy < 2.4 because triton 3.6's interpreter
# turns loop bounds into ints in a way NumPy 2.4 rejects (exlm_chem/dag/triton_kernels.py).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-triton36
if [ "${1:-}" = "--setup" ]; then
  [ -x .venv/bin/python ] || { echo "run 'bash scripts/setup.sh' first: torch comes from .venv" >&2; exit 1; }
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --no-compile -c constraints.txt triton==3.6.0 "numpy<2.4" "pytest>=7.4"
  # torch (and its dependencies) from .venv rather than a second install of the same wheel:
  # a .pth file appends .venv's site-packages after this venv's own, so triton 3.6, NumPy
  # and pytest installed here shadow .venv's copies. Written after pip, so that pip never
  # sees .venv's packages as part of this environment.
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/exlm_chem_torch.pth"
  "$VENV/bin/python" -c "import torch, triton, numpy; assert triton.__version__.startswith('3.6'), triton.__version__"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "$VENV is missing: run 'bash scripts/setup.sh dev' (or scripts/test_triton36.sh --setup)" >&2
  exit 1
fi
"$VENV/bin/python" -c "import triton; assert triton.__version__.startswith('3.6'), triton.__version__"
export TRITON_INTERPRET=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the deprecation NumPy 2.3 warns of is the very failure above; it says nothing new here
exec "$VENV/bin/python" -m pytest -p no:cacheprovider \
  -W "ignore:Conversion of an array with ndim > 0:DeprecationWarning" \
  tests/unit/dag/test_dag_triton.py "$@"
