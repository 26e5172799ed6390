#!/usr/bin/env bash
# The TDC ADMET rows of benchmarks/results/tdc_admet, in the order a CPU-hour buys most:
# small tasks before large ones, the lever comparisons before the rows they decide.
# Usage: bash benchmarks/tdc/tdc_admet_runs.sh LANE   (LANE 1 or 2 from a worktree of 5445a9e,
# 0.3.0; 3 or 4 from one of 0.4.0; 5, 6 and 6b from one of f93c42b to 21a6262 (from 21a6262
# the records keep their CPU time; 3030dd5 adds tree_features to the estimators, so later
# commits key the same cells differently); 7 from 3030dd5 or later: two processes, one
# thread each; run two lanes at once on a 2-core machine); 8 from the commit that adds
# catboost_maplight or later; 9 from a commit of the 0.5.0 estimators, 10 and 11 of 0.5.1's,
# 13 and 13b of 0.5.3's, 14, 14b, 14c, 15, 15b, 15c and 16 of 0.5.4's, 17 of 0.5.4's or
# later, 18 and 18b of 0.5.5's, 19 of the commit that adds the "mordred" kind (the
# mordred extra installed), 20 and 20b of the commit that adds the kernel head. Every
# command resumes: cells already in a records folder are skipped, so rerunning a lane
# continues where it stopped.
# Then: bash benchmarks/tdc/tdc_admet_runs.sh report
set -euo pipefail
cd "$(dirname "$0")/../.."  # the checkout (this file is benchmarks/tdc/tdc_admet_runs.sh)
: "${EXLM_CHEM_DATA:=$(cd .. && pwd)/shared/data/moleculenet}"
export EXLM_CHEM_DATA
OUT="${TDC_OUT:-benchmarks/results/tdc_admet}"  # records: where the lanes write
PY="${EXLM_CHEM_PYTHON:-.venv/bin/python}"
RUN=("$PY" -m exlm_chem.cli benchmark --suite tdc-admet --threads 1 --no-progress)

SMALL_CLS="dili hia_hou herg bioavailability_ma cyp2d6_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels cyp3a4_substrate_carbonmangels pgp_broccatelli bbb_martins"
BIG_CLS="ames cyp2c9_veith cyp3a4_veith cyp2d6_veith"
SKEWED="half_life_obach vdss_lombardo clearance_microsome_az clearance_hepatocyte_az"
SMALL_REG="$SKEWED caco2_wang ppbr_az"
BIG_REG="lipophilicity_astrazeneca ld50_zhu solubility_aqsoldb"
SMALLEST10="dili hia_hou bioavailability_ma herg half_life_obach cyp2d6_substrate_carbonmangels
  cyp2c9_substrate_carbonmangels cyp3a4_substrate_carbonmangels caco2_wang clearance_microsome_az"

# one head of the tree member's lever study on the 15 smaller sets' valid parts (seeds 1-3
# unless more arguments name them), then the study's report (alone, and mixed with lane 9's
# kept networks; a temporary file of its own: two lanes may report at once)
# shellcheck disable=SC2086
tree_lever() {
  local head="$1" seeds=("${@:2}")
  [ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
  "$PY" benchmarks/tdc/tdc_levers.py --seeds "${seeds[@]}" --tasks $SMALL_CLS $SMALL_REG \
    --heads "$head" \
    --out $OUT/levers-051 --cache $OUT/levers-051/features
  "$PY" benchmarks/tdc/tdc_levers.py --out $OUT/levers-051 \
    --network $OUT/records/default-050-valid --report > $OUT/levers-051/report.md.$$.tmp
  mv $OUT/levers-051/report.md.$$.tmp $OUT/levers-051/report.md
}

# shellcheck disable=SC2086
case "${1:-}" in
  1)
    "${RUN[@]}" --methods exlm_defaults --tasks $SMALL_CLS --out $OUT/records/default-cls
    # chemprop + RDKit 2D at its defaults on the 10 smallest tasks (beside its published row)
    "${RUN[@]}" --methods chemprop_rdkit2d --seeds 1 2 3 --tasks $SMALLEST10 \
      --out $OUT/records/chemprop
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $SMALL_CLS --out $OUT/records/random-cls
    "${RUN[@]}" --methods exlm_defaults --tasks $BIG_CLS --out $OUT/records/default-cls
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $BIG_CLS --out $OUT/records/random-cls
    ;;
  2)
    # the target transform, an option first: its validation parts decide the default
    "${RUN[@]}" --methods exlm_defaults --tasks $SKEWED --seeds 1 2 --out $OUT/records/default-reg
    "${RUN[@]}" --methods exlm_defaults --estimator-params target_transform=auto \
      --tasks $SKEWED --seeds 1 2 --out $OUT/records/skew-auto
    "${RUN[@]}" --methods gbt rf_rdkit2d --seeds 1 2 3 \
      --tasks $SMALL_CLS $SMALL_REG $BIG_CLS $BIG_REG --out $OUT/records/peers
    # MapLight's features under the same booster: what the tree head might read
    "${RUN[@]}" --methods gbt_maplight --seeds 1 2 3 \
      --tasks $SMALL_CLS $SMALL_REG $BIG_CLS $BIG_REG --out $OUT/records/peers-maplight
    "${RUN[@]}" --methods exlm_defaults --tasks $SMALL_REG $BIG_REG --out $OUT/records/default-reg
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $SMALL_REG $BIG_REG --out $OUT/records/random-reg
    ;;
  3)
    # the 0.4.0 defaults: the regressor's target transform became "auto"; the classifier
    # is 0.3.0's (lane 1's default-cls records), so only the regression tasks run again
    "${RUN[@]}" --methods exlm_defaults --tasks $SMALL_REG --out $OUT/records/default-reg-040
    # the peers' last cells (solubility; MapLight's features on the CYP sets)
    "${RUN[@]}" --methods gbt rf_rdkit2d --seeds 1 2 3 --tasks $BIG_REG --out $OUT/records/peers
    "${RUN[@]}" --methods gbt_maplight --seeds 1 2 3 --tasks $BIG_CLS $BIG_REG \
      --out $OUT/records/peers-maplight
    "${RUN[@]}" --methods exlm_defaults --tasks $BIG_REG --out $OUT/records/default-reg-040
    ;;
  4)
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $SMALL_CLS --out $OUT/records/random-cls
    "${RUN[@]}" --methods chemprop_rdkit2d --seeds 1 2 3 --tasks $SMALLEST10 \
      --out $OUT/records/chemprop
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $SMALL_REG --out $OUT/records/random-reg
    "${RUN[@]}" --methods exlm_defaults --tasks $BIG_CLS --out $OUT/records/default-cls
    ;;
  5)
    # (eb09cd4's tree weight chosen on y's scale was measured on the log-fitted tasks by
    # `... --tasks $SKEWED --out tree_weight_scale` from a worktree of eb09cd4, and withdrawn)
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $SMALL_REG --out $OUT/records/random-reg
    "${RUN[@]}" --methods exlm_defaults --tasks ames cyp2c9_veith --out $OUT/records/default-cls
    "${RUN[@]}" --methods exlm_defaults --tasks cyp3a4_veith --out $OUT/records/default-cls-c
    ;;
  6)
    # beside lane 5: CYP2D6 inhibition, then the rest of the pretrained=None rows
    # (the classifier and the regressor predict as at 0.4.0)
    "${RUN[@]}" --methods exlm_defaults --tasks cyp2d6_veith --out $OUT/records/default-cls-b
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks $BIG_REG --out $OUT/records/random-reg-b
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks ames --out $OUT/records/random-cls
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 \
      --tasks cyp3a4_veith --out $OUT/records/random-cls
    ;;
  6b)
    # beside lane 6, from the same worktree: the rest of the large classification sets
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 1 2 3 \
      --tasks cyp2c9_veith cyp2d6_veith --out $OUT/records/random-cls-b
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --seeds 3 \
      --tasks cyp3a4_veith --out $OUT/records/random-cls-b
    ;;
  7)
    # a lever through the whole estimator: the tree head on MapLight's features
    "${RUN[@]}" --methods exlm_defaults --seeds 1 2 3 \
      --estimator-params "tree_features=['morgan','avalon','erg','rdkit2d']" \
      --tasks dili hia_hou herg half_life_obach cyp3a4_substrate_carbonmangels \
      bioavailability_ma cyp2d6_substrate_carbonmangels cyp2c9_substrate_carbonmangels \
      pgp_broccatelli clearance_microsome_az vdss_lombardo caco2_wang \
      clearance_hepatocyte_az bbb_martins ppbr_az $BIG_REG $BIG_CLS \
      --out $OUT/records/tree-maplight
    ;;
  8)
    # MapLight's recipe (catboost_maplight) as the leaderboard runs it, fitted on all of
    # train_val, 22 tasks x 5 seeds; then on the held-out valid parts (seeds 1-3), the peer
    # the estimators' defaults are chosen against
    "${RUN[@]}" --methods catboost_maplight --fit-on train_val \
      --tasks $SMALL_CLS $SMALL_REG $BIG_REG $BIG_CLS --out $OUT/records/maplight-fit
    "${RUN[@]}" --methods catboost_maplight --seeds 1 2 3 \
      --tasks $SMALL_CLS $SMALL_REG $BIG_REG $BIG_CLS --out $OUT/records/maplight-valid
    ;;
  9)
    # the 0.5.0 defaults (CatBoost on MapLight's features in the tree head, the weight
    # chosen on whole held-out scaffolds) on the held-out valid parts, seeds 1-3: what
    # chooses; the 0.4.0 rows of default-cls*/default-reg-040 are the same cells before
    "${RUN[@]}" --methods exlm_defaults --seeds 1 2 3 \
      --tasks $SMALL_CLS $SMALL_REG $BIG_REG $BIG_CLS --out $OUT/records/default-050-valid
    ;;
  10)
    # the 0.5.1 defaults (tree_weight=0.75, chosen on lane 9's valid parts: weights.md) as
    # the leaderboard fits, on all of train_val, 22 tasks x 5 seeds
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val \
      --tasks $SMALL_CLS $SMALL_REG $BIG_REG $BIG_CLS --out $OUT/records/default-051-fit
    ;;
  11)
    # the 0.5.1 defaults from random weights (pretrained=None), fitted as lane 10 on all of
    # train_val, seeds 1-3: what the pre-trained encoder buys inside the reported row
    "${RUN[@]}" --methods exlm_defaults --estimator-params pretrained=None --fit-on train_val \
      --seeds 1 2 3 --tasks $SMALL_CLS $SMALL_REG $BIG_REG $BIG_CLS \
      --out $OUT/records/random-051-fit
    ;;
  13)
    # the 0.5.3 defaults (the regressor's trees: MAE and RMSE averaged, chosen on the valid
    # parts of levers-051) as lane 10 fits, on the regression tasks: 0.5.3's classifier is
    # 0.5.1's, whose lane 10 cells stand in its row. Seeds 1-3 of every task first.
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --seeds 1 2 3 \
      --tasks $SMALL_REG --out $OUT/records/default-053-fit
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --seeds 4 5 \
      --tasks $SMALL_REG --out $OUT/records/default-053-fit
    ;;
  13b)
    # beside lane 13, from the same worktree: the three larger regression sets
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --seeds 1 2 3 \
      --tasks $BIG_REG --out $OUT/records/default-053-fit-b
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --seeds 4 5 \
      --tasks $BIG_REG --out $OUT/records/default-053-fit-b
    ;;
  14)
    # the 0.5.4 defaults (the classifier mixes its network and its trees in log-odds, chosen
    # on the valid parts of lane 9 and MoleculeNet's: weights.md) as lane 10 fits, on the
    # smaller classification tasks: 0.5.4's regressor is 0.5.3's, whose lane 13 cells stand
    # in its row
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --tasks $SMALL_CLS \
      --out $OUT/records/default-054-fit
    ;;
  14b)
    # beside lane 14, from the same worktree: three of the four larger classification sets
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val \
      --tasks ames cyp2c9_veith cyp3a4_veith --out $OUT/records/default-054-fit-b
    ;;
  14c)
    # beside lane 14b: the fourth, so that two processes share the larger sets
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --tasks cyp2d6_veith \
      --out $OUT/records/default-054-fit-c
    ;;
  15)
    # a lever of the network member on the valid parts, seeds 1-3: SMILES augmentation in
    # fine-tuning (each epoch adds one randomized SMILES of every molecule) and the test
    # outputs averaged over the canonical SMILES and four randomized views; the trees are
    # lane 9's, so the kept parts compare the two networks under the same mix. Stopped
    # after 25 of the 27 cells as a losing arm (tdc_admet/README.md, 2026-12-07)
    "${RUN[@]}" --methods exlm_defaults --estimator-params augment=1 tta=4 --seeds 1 2 3 \
      --tasks $SMALL_CLS --out $OUT/records/aug-054-valid
    ;;
  15b)
    # the same lever on the smaller regression tasks, where the network's quarter adds more:
    # complete; not kept (tdc_admet/README.md, second session of 2026-12-07)
    "${RUN[@]}" --methods exlm_defaults --estimator-params augment=1 tta=4 --seeds 1 2 3 \
      --tasks $SMALL_REG --out $OUT/records/aug-054-valid
    ;;
  15c)
    # beside 15b, the three larger regression sets, where the places are closest; stopped
    # after lipophilicity's seed 1 once 15b had decided
    "${RUN[@]}" --methods exlm_defaults --estimator-params augment=1 tta=4 --seeds 1 2 3 \
      --tasks $BIG_REG --out $OUT/records/aug-054-valid-b
    ;;
  16)
    # a second lever of the network: two fine-tuned members averaged (n_models=2) instead of
    # one, on the valid parts of seeds 1-3; the trees are lane 9's, as in lane 15. Stopped
    # after 25 of the 27 cells as a losing arm (tdc_admet/README.md, 2026-12-07)
    "${RUN[@]}" --methods exlm_defaults --estimator-params n_models=2 --seeds 1 2 3 \
      --tasks $SMALL_CLS --out $OUT/records/models2-054-valid
    ;;
  17)
    # the tree member's lever left of issue 77's list: twice CatBoost's trees (the learning
    # rate it picks falls with them), alone and mixed with lane 9's kept networks, the 15
    # smaller sets' valid parts, seeds 1-3; then the report of the lever study. Stopped
    # after 11 cells as a losing arm (tdc_admet/README.md, 2026-12-07)
    tree_lever "member(maplight) 2000 trees"
    ;;
  18)
    # the 0.5.5 defaults (tree_weight="auto": the classifier's CatBoost trees alone or their
    # three quarters, chosen on at least 400 held-out molecules; weights.md) as lane 14 fits,
    # on the four larger classification sets, the only ones where the choice is made: 0.5.4's
    # cells stand in 0.5.5's row elsewhere (report_tdc.holds_out_too_few)
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --tasks ames cyp3a4_veith \
      --out $OUT/records/default-055-fit
    ;;
  18b)
    # beside lane 18, from the same worktree: the other two
    "${RUN[@]}" --methods exlm_defaults --fit-on train_val --tasks cyp2d6_veith cyp2c9_veith \
      --out $OUT/records/default-055-fit-b
    ;;
  19)
    # the tree member's last feature lever of issue 77's list: Mordred's 2D descriptors
    # beside MapLight's features (needs the mordred extra), alone and mixed with lane 9's
    # kept networks, the 15 smaller sets' valid parts; then the lever report. Seed 1 on
    # every set first: a cell costs about 7 times the member's CPU (DILI: 235 CPU-s).
    # Stopped after 23 of 45 cells as a losing arm (tdc_admet/README.md, 2026-12-07)
    tree_lever "member(maplight+mordred)" 1
    tree_lever "member(maplight+mordred)" 2 3
    ;;
  20)
    # a model of another family beside the trees: Tanimoto kernel ridge on Morgan and
    # Avalon counts, alone, averaged with the tree member, and mixed with lane 9's kept
    # networks, the 15 smaller sets' valid parts; seeds 1 and 3 (lane 20b: seed 2)
    tree_lever "kernel(morgan+avalon)" 1
    tree_lever "kernel(morgan+avalon)" 3
    ;;
  20b)
    tree_lever "kernel(morgan+avalon)" 2
    ;;
  report)
    "${RUN[@]}" --report-only --out $OUT --merge $OUT/records/*/
    ;;
  *)
    echo "usage: bash benchmarks/tdc/tdc_admet_runs.sh 1|2|3|4|5|6|6b|7|8|9|10|11|13|13b|14|14b|14c|15|15b|15c|16|17|18|18b|19|20|20b|report" >&2
    exit 2
    ;;
esac
