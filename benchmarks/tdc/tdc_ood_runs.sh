#!/usr/bin/env bash
# The out-of-distribution rows of benchmarks/results/tdc_admet/ood (issue 96): every TDC
# ADMET task with its test part whole similarity clusters (`--split cluster`), small tasks
# before large ones. Two lanes, one thread each, side by side on a 2-core machine.
# Usage: bash benchmarks/tdc/tdc_ood_runs.sh LANE   (LANE: defaults-a, defaults-b,
# chemprop-a, chemprop-b, maplight-a, maplight-b; SEEDS="1 2 3" to change the seeds).
# Every command resumes: a cell already in its records folder is skipped.
# Then: bash benchmarks/tdc/tdc_ood_runs.sh report
set -euo pipefail
cd "$(dirname "$0")/../.."  # the checkout (this file is benchmarks/tdc/tdc_ood_runs.sh)
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
OUT="${OOD_OUT:-benchmarks/results/tdc_admet/ood}"
PY="${EXLM_CHEM_PYTHON:-.venv/bin/python}"
read -r -a SEED_LIST <<< "${SEEDS:-1}"
RUN=("$PY" -m exlm_chem.cli benchmark --suite tdc-admet --split cluster --threads 1
     --no-progress --seeds "${SEED_LIST[@]}")

# two halves of about equal cost, each smallest first
LANE_A="dili hia_hou herg bioavailability_ma caco2_wang pgp_broccatelli bbb_martins
  lipophilicity_astrazeneca ames solubility_aqsoldb cyp2c9_veith"
LANE_B="half_life_obach cyp2d6_substrate_carbonmangels cyp3a4_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels clearance_microsome_az vdss_lombardo clearance_hepatocyte_az
  ppbr_az ld50_zhu cyp3a4_veith cyp2d6_veith"

# shellcheck disable=SC2086
case "${1:-}" in
  defaults-a) "${RUN[@]}" --methods exlm_defaults --tasks $LANE_A --out $OUT/defaults-a ;;
  defaults-b) "${RUN[@]}" --methods exlm_defaults --tasks $LANE_B --out $OUT/defaults-b ;;
  chemprop-a) "${RUN[@]}" --methods chemprop_rdkit2d --tasks $LANE_A --out $OUT/chemprop-a ;;
  chemprop-b) "${RUN[@]}" --methods chemprop_rdkit2d --tasks $LANE_B --out $OUT/chemprop-b ;;
  maplight-a) "${RUN[@]}" --methods catboost_maplight --tasks $LANE_A --out $OUT/maplight-a ;;
  maplight-b) "${RUN[@]}" --methods catboost_maplight --tasks $LANE_B --out $OUT/maplight-b ;;
  report)
    "$PY" -m exlm_chem.cli benchmark --suite tdc-admet --split cluster --report-only \
      --out "$OUT" --merge "$OUT"/*-a "$OUT"/*-b benchmarks/results/tdc_admet/records/maplight-fit
    ;;
  *) echo "usage: $0 defaults-a|defaults-b|chemprop-a|chemprop-b|maplight-a|maplight-b|report" >&2
     exit 2 ;;
esac
