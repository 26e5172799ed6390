#!/usr/bin/env bash
# The out-of-distribution rows (issue 96), small tasks before large ones; one thread per
# lane, two lanes side by side on a 2-core machine:
# - benchmarks/results/tdc_admet/ood: every TDC ADMET task with its test part whole
#   similarity clusters (`--split cluster`), lanes defaults-a/-b, chemprop-a/-b,
#   maplight-a/-b;
# - benchmarks/results/cross_source: a model fitted on one source scored on another lab's
#   molecules of the same target (`--suite cross-source`), lanes cross-maplight,
#   cross-defaults, cross-chemprop;
# - benchmarks/results/tdc_admet/ood/levers: the tree member's levers (regularisation, seeds,
#   a kernel model beside it) on the held-out clusters of the 15 smaller tasks, alone and
#   mixed with the defaults lanes' networks (lane levers; its scaffold side is the TDC valid
#   parts' study, benchmarks/results/tdc_admet/levers-051, with lane levers-scaffold for the
#   heads that study lacks); lane models2: the network's lever n_models=2 on the same
#   tasks' clusters (its scaffold side has the 9 classification tasks: ONLY=cls); lane
#   skew-raw: the regressor's target scale, target_transform=None on the 4 skewed tasks
#   that "auto" fits on a log scale; lane multitask: one network on the 9 classification
#   tasks at once against one per task, on the clusters and on TDC's valid parts
#   (benchmarks/tdc/tdc_multitask.py, into $OUT/multitask); lane augment: SMILES
#   augmentation and TTA (augment=1 tta=4) on the 15 smaller tasks' clusters.
# Usage: bash benchmarks/tdc/tdc_ood_runs.sh LANE   (SEEDS="1 2 3" to change the seeds;
# ONLY="task ..." to run just those of the lane's tasks, ONLY=small for the 15 smaller ones, ONLY=cls for their 9 classification tasks).
# Every command resumes: a cell already in its records folder is skipped.
# Then: bash benchmarks/tdc/tdc_ood_runs.sh report
set -euo pipefail
cd "$(dirname "$0")/../.."  # the checkout (this file is benchmarks/tdc/tdc_ood_runs.sh)
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
OUT="${OOD_OUT:-benchmarks/results/tdc_admet/ood}"
CROSS="${CROSS_OUT:-benchmarks/results/cross_source}"
PY="${EXLM_CHEM_PYTHON:-.venv/bin/python}"
read -r -a SEED_LIST <<< "${SEEDS:-1}"
RUN=("$PY" -m exlm_chem.cli benchmark --suite tdc-admet --split cluster --threads 1
     --no-progress --seeds "${SEED_LIST[@]}")
RUN_CROSS=("$PY" -m exlm_chem.cli benchmark --suite cross-source --threads 1 --no-progress
           --seeds "${SEED_LIST[@]}")

# two halves of about equal cost, each smallest first
LANE_A="dili hia_hou herg bioavailability_ma caco2_wang pgp_broccatelli bbb_martins
  lipophilicity_astrazeneca ames solubility_aqsoldb cyp2c9_veith"
LANE_B="half_life_obach cyp2d6_substrate_carbonmangels cyp3a4_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels clearance_microsome_az vdss_lombardo clearance_hepatocyte_az
  ppbr_az ld50_zhu cyp3a4_veith cyp2d6_veith"

# the cross-source pairs, cheapest fits first (the CYP sources hold 12,000-13,000 molecules)
PAIRS="herg_to_nvs_herg esol_to_aqsoldb tox21_er_to_atg_era tox21_ahr_to_atg_ahr
  tox21_pparg_to_atg_pparg cyp2c9_veith_to_nvs_cyp2c9 cyp3a4_veith_to_nvs_cyp3a4
  cyp2d6_veith_to_nvs_cyp2d6"

# the lever study's tasks (tdc_admet_runs.sh's 15 smaller sets) and heads: the member as
# the estimators fit it (MAE, RMSE, balanced), then one lever each
SMALL="dili hia_hou herg bioavailability_ma cyp2d6_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels cyp3a4_substrate_carbonmangels pgp_broccatelli bbb_martins
  half_life_obach vdss_lombardo clearance_microsome_az clearance_hepatocyte_az caco2_wang ppbr_az"
LEVER_HEADS=("member(maplight)" "member(maplight) RMSE" "member(maplight) balanced"
  "member(maplight) l2=10" "member(maplight) l2=30" "member(maplight) 300 trees"
  "member(maplight) rsm=0.5" "kernel(morgan+avalon)" "member(maplight) x3 seeds"
  "member(maplight) depth 8")

# the lane's tasks, cut to $ONLY when it is set
SMALL_CLS="dili hia_hou herg bioavailability_ma cyp2d6_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels cyp3a4_substrate_carbonmangels pgp_broccatelli bbb_martins"
SKEWED="half_life_obach vdss_lombardo clearance_microsome_az clearance_hepatocyte_az"
[ "${ONLY:-}" = small ] && ONLY=$SMALL
[ "${ONLY:-}" = cls ] && ONLY=$SMALL_CLS
pick() {
  local task
  for task in "$@"; do
    if [ -z "${ONLY:-}" ] || [[ " $(echo $ONLY) " == *" $task "* ]]; then echo "$task"; fi
  done
}
# shellcheck disable=SC2086
LANE_A=$(pick $LANE_A); LANE_B=$(pick $LANE_B); SMALL=$(pick $SMALL); PAIRS=$(pick $PAIRS)
SKEWED=$(pick $SKEWED)
case "${1:-}" in
  *-a) list=$LANE_A ;; *-b) list=$LANE_B ;; cross-*) list=$PAIRS ;;
  levers*|models2|augment) list=$SMALL ;; skew-raw) list=$SKEWED ;; multitask) list=$SMALL_CLS ;;
  *) list=all ;;
esac
if [ -z "$list" ]; then echo "ONLY=$ONLY leaves lane $1 no task" >&2; exit 2; fi

# shellcheck disable=SC2086
case "${1:-}" in
  defaults-a) "${RUN[@]}" --methods exlm_defaults --tasks $LANE_A --out $OUT/defaults-a ;;
  defaults-b) "${RUN[@]}" --methods exlm_defaults --tasks $LANE_B --out $OUT/defaults-b ;;
  chemprop-a) "${RUN[@]}" --methods chemprop_rdkit2d --tasks $LANE_A --out $OUT/chemprop-a ;;
  chemprop-b) "${RUN[@]}" --methods chemprop_rdkit2d --tasks $LANE_B --out $OUT/chemprop-b ;;
  maplight-a) "${RUN[@]}" --methods catboost_maplight --tasks $LANE_A --out $OUT/maplight-a ;;
  maplight-b) "${RUN[@]}" --methods catboost_maplight --tasks $LANE_B --out $OUT/maplight-b ;;
  cross-maplight) "${RUN_CROSS[@]}" --methods catboost_maplight --tasks $PAIRS --out $CROSS/maplight ;;
  cross-defaults) "${RUN_CROSS[@]}" --methods exlm_defaults --tasks $PAIRS --out $CROSS/defaults ;;
  cross-chemprop) "${RUN_CROSS[@]}" --methods chemprop_rdkit2d --tasks $PAIRS --out $CROSS/chemprop ;;
  levers)
    "$PY" benchmarks/tdc/tdc_levers.py --split cluster --seeds "${SEED_LIST[@]}" \
      --tasks $SMALL --heads "${LEVER_HEADS[@]}" --out $OUT/levers --cache $OUT/levers/features
    ;;
  models2)
    # a lever of the network: two fine-tuned members averaged (n_models=2), the 15 smaller
    # sets; its scaffold side: records/models2-054-valid (TDC's valid parts)
    "${RUN[@]}" --methods exlm_defaults --estimator-params n_models=2 --tasks $SMALL \
      --out $OUT/models2
    ;;
  augment)
    # a lever of the network: each epoch adds a randomized SMILES of every molecule, and
    # the outputs average four randomized views; its scaffold side: records/aug-054-valid
    "${RUN[@]}" --methods exlm_defaults --estimator-params augment=1 tta=4 --tasks $SMALL \
      --out $OUT/augment
    ;;
  skew-raw)
    # the target's scale: the skewed tasks fitted on y itself; its scaffold side:
    # records/default-reg beside records/skew-auto (TDC's valid parts, seeds 1-2)
    "${RUN[@]}" --methods exlm_defaults --estimator-params target_transform=None \
      --tasks $SKEWED --out $OUT/skew-raw
    ;;
  multitask)
    # each arm also mixed with the trees of the default cells on the same rows: the
    # cluster cells' parts; on TDC's valid parts 0.5.0's (both arms mix with the same)
    "$PY" benchmarks/tdc/tdc_multitask.py --split cluster --seeds "${SEED_LIST[@]}" \
      --out $OUT/multitask --trees $OUT/defaults-a $OUT/defaults-b
    "$PY" benchmarks/tdc/tdc_multitask.py --split scaffold --seeds "${SEED_LIST[@]}" \
      --out $OUT/multitask --trees benchmarks/results/tdc_admet/records/default-050-valid
    "$PY" benchmarks/tdc/tdc_multitask.py --out $OUT/multitask --report \
      > $OUT/multitask/report.md.$$.tmp
    mv $OUT/multitask/report.md.$$.tmp $OUT/multitask/report.md
    ;;
  levers-scaffold)
    "$PY" benchmarks/tdc/tdc_levers.py --seeds "${SEED_LIST[@]}" --tasks $SMALL \
      --heads "member(maplight) 300 trees" "member(maplight) rsm=0.5" \
      --out benchmarks/results/tdc_admet/levers-051 \
      --cache benchmarks/results/tdc_admet/levers-051/features
    ;;
  report)
    # TDC's test figures of the same rows: the records fitted on all of train_val (0.5.3's
    # and 0.5.4's default cells stand in 0.5.5's row where it kept their estimator) and
    # chemprop's on the train part
    "$PY" -m exlm_chem.cli benchmark --suite tdc-admet --split cluster --report-only \
      --out "$OUT" --merge "$OUT"/*-a "$OUT"/*-b "$OUT"/models2 "$OUT"/skew-raw "$OUT"/augment \
      benchmarks/results/tdc_admet/records/maplight-fit \
      benchmarks/results/tdc_admet/records/default-05[345]-fit* \
      benchmarks/results/tdc_admet/records/chemprop
    "$PY" -m exlm_chem.cli benchmark --suite cross-source --report-only --out "$CROSS" \
      --merge "$CROSS"/*/
    if [ -f "$OUT/levers/results.jsonl" ]; then
      # each lever on the held-out clusters beside TDC's valid parts (the scaffold study
      # and the networks it mixes with)
      "$PY" benchmarks/tdc/tdc_levers.py --out "$OUT/levers" --report \
        --network "$OUT"/defaults-a "$OUT"/defaults-b \
        --beside benchmarks/results/tdc_admet/levers-051 \
        --beside-network benchmarks/results/tdc_admet/records/default-050-valid \
        > "$OUT/levers/report.md.$$.tmp"
      mv "$OUT/levers/report.md.$$.tmp" "$OUT/levers/report.md"
    fi
    ;;
  *) echo "usage: $0 defaults-a|defaults-b|chemprop-a|chemprop-b|maplight-a|maplight-b|" \
          "cross-maplight|cross-defaults|cross-chemprop|levers|levers-scaffold|models2|skew-raw|" \
          "multitask|augment|report" >&2
     exit 2 ;;
esac
