#!/usr/bin/env bash
# Lint, then the whole test suite (CPU; Triton kernels under TRITON_INTERPRET=1).
# pytest's exit code 5 ("no tests collected") is a failure here, never a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=".venv/bin/python"
[ -x "$PY" ] || PY=python3
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
"$PY" -m ruff check . || exit 1
"$PY" -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
