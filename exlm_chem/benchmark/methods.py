"""Turn method names from the command line into benchmark rows (:class:`MethodSpec`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from exlm_chem import __version__
from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.runner import MethodSpec

#: exlm: the --model checkpoint; twin: its MLM twin (--twin); rf: random forest on ECFP4;
#: attentivefp: AttentiveFP graph network trained from scratch; chemprop: chemprop v2's
#: D-MPNN with its CLI defaults, trained from scratch (needs the baselines extra).
#: Descriptor rows (RDKit 2D, :mod:`exlm_chem.benchmark.features`): rf_rdkit2d: the same
#: forest on descriptors alone; exlm_rdkit2d: the checkpoint in --mode with descriptors
#: beside its pooled state; exlm_defaults / exlm_defaults_rdkit2d: the scikit-learn
#: estimator with its defaults, without / with ``features="rdkit2d"``; chemprop_rdkit2d:
#: chemprop with its RDKit descriptor featurizer as extra descriptors; gbt: scikit-learn's
#: histogram gradient boosting at its defaults on Morgan counts + RDKit 2D; gbt_maplight:
#: the same on MapLight's features (Morgan counts, Avalon counts, ErG, RDKit 2D);
#: catboost_maplight: MapLight's own recipe, CatBoost on its features
#: (:mod:`exlm_chem.benchmark.maplight`).
METHODS = ("exlm", "twin", "rf", "attentivefp", "chemprop", "rf_rdkit2d", "exlm_rdkit2d",
           "exlm_defaults", "exlm_defaults_rdkit2d", "chemprop_rdkit2d", "gbt", "gbt_maplight",
           "catboost_maplight")
MODEL_METHODS = ("exlm", "exlm_rdkit2d", "exlm_defaults", "exlm_defaults_rdkit2d")


def default_twin(model: str | os.PathLike[str]) -> Path | None:
    """The MLM twin shipped next to an ExLM checkpoint: ``exlm-X`` → ``mlm-X``."""
    model = Path(model)
    if not model.name.startswith("exlm-"):
        return None
    twin = model.with_name("mlm-" + model.name[len("exlm-"):])
    return twin if (twin / "config.json").is_file() else None


def _objective(path: Path) -> str:
    try:
        meta = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return "unknown"
    return str(meta.get("objective") or config.get("objective") or "unknown")


def encoder_spec(method: str, path: str | os.PathLike[str], mode: str,
                 cache_dir: str | os.PathLike[str] | None, device: str = "auto",
                 features: tuple[str, ...] = (),
                 feature_cache: str | os.PathLike[str] | None = None,
                 params: dict[str, Any] | None = None,
                 parts_dir: str | os.PathLike[str] | None = None) -> MethodSpec:
    """A checkpoint as a row, labelled by its objective, directory name, mode, the
    estimator parameters set beside its defaults and the features beside it."""
    from exlm_chem.benchmark.encoders import EncoderMethod

    path = Path(path)
    run = EncoderMethod(path, mode, cache_dir=cache_dir, device=device, features=features,
                        feature_cache=feature_cache, params=params, parts_dir=parts_dir)
    kind = {"exlm": "ExLM", "mlm": "MLM"}.get(_objective(path), "encoder")
    # the estimator's defaults are versioned with the package: rows of other defaults
    # stay apart in a report
    shown = f"estimator {__version__} defaults" if mode == "estimator" else mode
    shown += "".join(f", {k}={v!r}" for k, v in (params or {}).items())
    extra = "".join(f" + {_FEATURE_TITLES[f]}" for f in features)
    return MethodSpec(method, f"{kind} {path.resolve().name} ({shown}){extra}", run.model_id,
                      mode, run, uses_budget=mode != "probe", protocol=run.protocol)


_FEATURE_TITLES = {"rdkit2d": "RDKit 2D"}


def build_methods(names: Sequence[str], model: str | os.PathLike[str] | None,
                  twin: str | os.PathLike[str] | None, mode: str,
                  cache_dir: str | os.PathLike[str] | None = None,
                  device: str = "auto", budget: Budget | None = None,
                  feature_cache: str | os.PathLike[str] | None = None,
                  chemprop_state: str | os.PathLike[str] | None = None,
                  estimator_params: dict[str, Any] | None = None) -> list[MethodSpec]:
    """Rows in the order asked; an encoder row without a checkpoint is an error.

    Rows that train under a budget carry it in their label ("AttentiveFP [<=3 min]"), so
    runs of one results folder under different budgets stay apart in the report.
    ``cache_dir`` keeps the probe's embeddings between runs, ``feature_cache`` the
    descriptor rows' raw descriptors (:mod:`exlm_chem.benchmark.features`),
    ``chemprop_state`` the chemprop rows' training state, written after every epoch so
    that a killed cell resumes (:mod:`exlm_chem.benchmark.chemprop_method`).
    ``estimator_params`` are set on the ``exlm_defaults*`` rows' estimators beside their
    defaults (and named in their labels); other rows refuse them.
    """
    if estimator_params and not {"exlm_defaults", "exlm_defaults_rdkit2d"} & set(names):
        raise ValueError("--estimator-params apply to the exlm_defaults rows only")
    specs = _specs(names, model, twin, mode, cache_dir, device, feature_cache,
                   chemprop_state, estimator_params)
    tag = budget.tag() if budget is not None else ""
    return [spec._replace(label=f"{spec.label} [{tag}]") if spec.uses_budget and tag else spec
            for spec in specs]


def _specs(names: Sequence[str], model: str | os.PathLike[str] | None,
           twin: str | os.PathLike[str] | None, mode: str,
           cache_dir: str | os.PathLike[str] | None, device: str,
           feature_cache: str | os.PathLike[str] | None = None,
           chemprop_state: str | os.PathLike[str] | None = None,
           estimator_params: dict[str, Any] | None = None) -> list[MethodSpec]:
    unknown = sorted(set(names) - set(METHODS))
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    specs = []
    for name in dict.fromkeys(names):  # drop repeats, keep order
        if name in MODEL_METHODS and model is None:
            raise ValueError(f"method {name!r} needs --model (a checkpoint directory)")
        if name == "exlm":
            specs.append(encoder_spec("exlm", model, mode, cache_dir, device))
        elif name == "exlm_rdkit2d":
            specs.append(encoder_spec(name, model, mode, cache_dir, device, ("rdkit2d",),
                                      feature_cache))
        elif name in ("exlm_defaults", "exlm_defaults_rdkit2d"):
            features = ("rdkit2d",) if name.endswith("rdkit2d") else ()
            # the members' outputs apart, beside the embeddings' cache: OUT/parts
            parts = None if cache_dir is None else Path(cache_dir).parent / "parts"
            specs.append(encoder_spec(name, model, "estimator", cache_dir, device, features,
                                      params=estimator_params, parts_dir=parts))
        elif name == "twin":
            if twin is None:
                raise ValueError("method 'twin' needs --twin (the MLM twin's checkpoint "
                                 "directory); none was given or found next to --model")
            specs.append(encoder_spec("twin", twin, mode, cache_dir, device))
        elif name == "rf":
            from exlm_chem.benchmark.rf import rf_method

            specs.append(MethodSpec("rf_ecfp4", "RF on ECFP4", None, "supervised",
                                    rf_method, uses_budget=False, protocol=_rf_protocol))
        elif name == "rf_rdkit2d":
            from exlm_chem.benchmark.rf import rf_method

            specs.append(MethodSpec("rf_rdkit2d", "RF on RDKit 2D", None, "supervised",
                                    partial(rf_method, features="rdkit2d",
                                            feature_cache=feature_cache), uses_budget=False,
                                    protocol=partial(_rf_protocol, features="rdkit2d")))
        elif name in ("gbt", "gbt_maplight"):
            from exlm_chem.benchmark.rf import GBT_FEATURES, MAPLIGHT_FEATURES, gbt_method

            features, label = ((GBT_FEATURES, "GBT on Morgan counts + RDKit 2D")
                               if name == "gbt" else
                               (MAPLIGHT_FEATURES, "GBT on MapLight's features (Morgan + "
                                                   "Avalon counts, ErG, RDKit 2D)"))
            specs.append(MethodSpec(name, label, None, "supervised",
                                    partial(gbt_method, feature_cache=feature_cache,
                                            features=features),
                                    uses_budget=False,
                                    protocol=partial(_gbt_protocol, features=features)))
        elif name == "catboost_maplight":
            from exlm_chem.benchmark.maplight import catboost_maplight_method

            specs.append(MethodSpec(name, "CatBoost on MapLight's features (MapLight's recipe)",
                                    None, "supervised",
                                    partial(catboost_maplight_method,
                                            feature_cache=feature_cache),
                                    uses_budget=False, protocol=_maplight_protocol))
        elif name == "chemprop":
            specs.append(_chemprop_spec(state_dir=chemprop_state))
        elif name == "chemprop_rdkit2d":
            specs.append(_chemprop_spec("rdkit2d", chemprop_state, feature_cache))
        else:
            from exlm_chem.benchmark.attentivefp import attentivefp_method

            specs.append(MethodSpec("attentivefp", "AttentiveFP", None, "supervised",
                                    attentivefp_method, uses_budget=True,
                                    protocol=_attentivefp_protocol))
    return specs


def _chemprop_spec(features: str | None = None,
                   state_dir: str | os.PathLike[str] | None = None,
                   feature_cache: str | os.PathLike[str] | None = None) -> MethodSpec:
    from exlm_chem.benchmark.chemprop_features import chemprop_version
    from exlm_chem.benchmark.chemprop_method import chemprop_method

    # the version is part of the row's name: another chemprop is another baseline
    method = "chemprop" if features is None else f"chemprop_{features}"
    label = f"chemprop {chemprop_version()}"
    if features is not None:
        label += f" + {_FEATURE_TITLES[features]}"
    return MethodSpec(method, label, None, "supervised",
                      partial(chemprop_method, features=features, state_dir=state_dir,
                              feature_cache=feature_cache),
                      uses_budget=True,
                      protocol=partial(_chemprop_protocol, features=features))


def _chemprop_protocol(task: str, budget: Budget,
                       features: str | None = None) -> tuple[None, dict]:
    from dataclasses import asdict

    from exlm_chem.benchmark.chemprop_features import chemprop_version, descriptor_featurizer
    from exlm_chem.benchmark.chemprop_method import ChempropSettings

    settings = {**asdict(ChempropSettings()), "chemprop_version": chemprop_version()}
    if features is not None:
        settings["descriptors"] = descriptor_featurizer()[0]
    return None, settings


def _rf_protocol(task: str, budget: Budget, features: str = "ecfp4") -> tuple[None, dict]:
    from exlm_chem.benchmark.rf import RandomForestSettings, rf_settings
    from exlm_chem.benchmark.tasks import task_type

    settings = rf_settings(RandomForestSettings(), task_type(task), features)
    settings.pop("n_jobs")  # parallelism does not change the forest
    return None, settings


def _gbt_protocol(task: str, budget: Budget,
                  features: tuple[str, ...] | None = None) -> tuple[None, dict]:
    from exlm_chem.benchmark.rf import GBT_FEATURES, gbt_settings
    from exlm_chem.benchmark.tasks import task_type

    return None, gbt_settings(task_type(task), features or GBT_FEATURES)


def _maplight_protocol(task: str, budget: Budget) -> tuple[None, dict]:
    from exlm_chem.benchmark.maplight import maplight_settings

    return None, maplight_settings(task)


def _attentivefp_protocol(task: str, budget: Budget) -> tuple[None, dict]:
    from dataclasses import asdict

    from exlm_chem.benchmark.attentivefp import AttentiveFPSettings

    return None, asdict(AttentiveFPSettings())  # the budget's epoch cap is in the key too
