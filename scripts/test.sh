#!/usr/bin/env bash
# Lint; the documentation site's strict build; the Triton kernel tests under triton 3.6, the
# GPU machine's version (scripts/test_triton36.sh), unless pytest arguments narrow the run;
# then the whole test suite (CPU; Triton kernels under TRITON_INTERPRET=1) with the
# project's triton, on two pytest-xdist workers (pytest arguments: one process, as given).
# pytest's exit code 5 ("no tests collected") is a failure here, never a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=".venv/bin/python"
[ -x "$PY" ] || PY=python3
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
# The suite starts a hundred-odd Python processes (CLI runs, workers, torchrun, the GPU dry
# run), each importing torch. Where PYTHONDONTWRITEBYTECODE is set (some CI images set it)
# and pip installed without byte-compiling (scripts/setup.sh), each of them would compile
# those modules again; cached once, they are read.
unset PYTHONDONTWRITEBYTECODE
"$PY" -m ruff check . || exit 1
# The documentation site, offline: --strict makes every warning an error (a broken link or
# anchor, a docstring mkdocstrings cannot read, a page outside the navigation). Built into
# a scratch folder; NO_MKDOCS_2_WARNING silences the theme's banner about MkDocs 2.0.
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict --quiet --site-dir "$site" || exit 1
rm -rf "$site"
status36=0
args=("$@")
if [ "$#" -eq 0 ]; then
  echo "--- Triton kernel tests under triton 3.6 (the GPU machine's version) ---"
  bash scripts/test_triton36.sh -q
  status36=$?
  echo "--- the whole suite, one worker per core (at most 2), a test file per worker ---"
  # every test runs torch on one thread (tests/conftest.py), so two workers fill two cores
  workers=$("$PY" -c "import os; print(min(2, len(os.sched_getaffinity(0))))")
  # the slowest tests named in CI's log: where the next trim of CI's time comes from
  args=(-n "$workers" --dist loadfile --durations=25)
fi
"$PY" -m pytest "${args[@]}"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
[ "$status" -ne 0 ] || status=$status36
exit "$status"
