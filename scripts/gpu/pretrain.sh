#!/usr/bin/env bash
# GPU pre-training of ExLM and its twin: bash scripts/gpu/pretrain.sh start|poll|gather|stop ...
# (scripts/gpu/README.md gives the device-tool commands). Runs from the repository root with
# the package importable even where `pip install -e .` failed, and unbuffered output so
# that a command stopped at its time limit still shows what it printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" scripts/gpu/gpu_pretrain.py "$@"
