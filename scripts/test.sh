#!/usr/bin/env bash
# Lint; the Triton kernel tests under triton 3.6, the GPU machine's version
# (scripts/test_triton36.sh), unless pytest arguments narrow the run; then the whole test
# suite (CPU; Triton kernels under TRITON_INTERPRET=1) with the project's triton.
# pytest's exit code 5 ("no tests collected") is a failure here, never a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=".venv/bin/python"
[ -x "$PY" ] || PY=python3
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
"$PY" -m ruff check . || exit 1
status36=0
if [ "$#" -eq 0 ]; then
  echo "--- Triton kernel tests under triton 3.6 (the GPU machine's version) ---"
  bash scripts/test_triton36.sh -q
  status36=$?
  echo "--- the whole suite ---"
fi
"$PY" -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
[ "$status" -ne 0 ] || status=$status36
exit "$status"
