"""Rerun an indexing run from its record alone and compare the results with the recorded ones.

Every deterministic figure (work, sizes, index sets, rewards, weights under the work metric) must be the same.
Latency figures may differ (wall time), but the objective's *outcome* on every method row (``met``, ``not met``,
``inconclusive``: wield/protocols/objective.py, decided on the latency's confidence interval) under the run's
objective (the one its ``run.json`` or, in older records, its ``evaluation.json`` names, which the rerun also
measures for) is compared too: a row met in the record and not met in the rerun (or the reverse) is a difference,
the conclusion did not reproduce; a row decided on one side and inconclusive on the other is reported
(``outcomes``, ``outcome_notes``) without failing the match, since "cannot tell" contradicts neither.

The record is checked before anything is rerun, and trusted no further than its checks: ``evaluation.json``
must hold an object ``methods`` of objects; a collection file the configuration names must be the file the
run loaded (its sha256 equal to the one ``schedule.json`` recorded; for a built-in collection such as
``flights``, the installed package's data file), so a record naming another file (say
``/etc/shadow``) is refused without a byte of it being parsed or quoted; a demonstration dataset the
configuration names must be the one the run pretrained on (its content sha256 equal to the one the record's
``demonstrations.json`` holds); the rerun uses the user's cache (``$WIELD_CACHE_DIR``), never a
``cache_dir`` the record names, so a record cannot make reproduce write a database wherever it says; and a
run on a database server is rerun on the server the user gives (``wield reproduce RUN_DIR --server-dir
DIR`` or ``--uri URI``), never on a ``uri`` or ``server_dir`` the record names.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from case_studies.indexing.defaults import OBJECTIVE

from wield.errors import ConfigError, DataError, shown
from wield.io import read_bytes, read_json, read_record_bytes
from wield.protocols import Objective, TrialSeeds
from wield.protocols.objective import INCONCLUSIVE
from wield.workflows import RunRecord, run_trial
from wield.workflows.objective_settings import recorded_objective
from wield.workflows.run_record import load_weights
from wield.workflows.weights import same_weights
from workloads.builtin import builtin_collection

# Everything the work metric determines; latency is wall time and is compared only for information.
DETERMINISTIC = ("mean_work_improvement", "p99_work_improvement", "relative_index_size", "index_bytes",
                 "indexes_created", "uses_per_index", "unused_indexes", "unused_index_bytes", "indexes")


def reproduce_indexing_run(run_dir: str | Path, *, uri: str | None = None,
                           server_dir: str | None = None) -> dict[str, Any]:
    """Rerun ``run_dir`` with its recorded configuration and seeds; list every deterministic difference. A run
    on a database server is rerun on the server the user names (``uri`` or ``server_dir``), never on one the
    record names."""
    original = RunRecord(run_dir)
    for name in ("config.json", "seeds.json", "evaluation.json"):
        if not original.exists(name):
            raise DataError(f"{run_dir} is not a finished run record: {name} is missing")
    if original.exists("model.pt"):
        load_weights(original.file("model.pt"))  # refuse a model that is not plain weights before rerunning
    config = _rerun_config(original, uri=uri, server_dir=server_dir)
    seeds = TrialSeeds.from_dict(original.read_json("seeds.json"))
    old = _recorded_evaluation(original)
    objective = _recorded_objective(original, old)  # the rerun measures for, and judges by, the run's objective
    recorded_demonstrations = _demonstrations_hash(Path(run_dir))  # a damaged record is refused before the rerun
    with tempfile.TemporaryDirectory(prefix="wield-reproduce-") as scratch:
        rerun = Path(scratch) / "run"
        new = run_trial("indexing", config, seeds, str(rerun), objective).as_dict()
        new_rewards = _rewards(rerun)
        new_demonstrations = _demonstrations_hash(rerun)
        artefact_differences = _artefact_differences(Path(run_dir), rerun, config.get("metric") == "work")
    differences = []
    if recorded_demonstrations != new_demonstrations:
        differences.append(f"demonstrations: recorded sha256 {recorded_demonstrations}, "
                           f"rerun {new_demonstrations} (the dataset changed)")
    deterministic = config.get("metric") == "work"
    for method, metrics in old["methods"].items():
        for column in DETERMINISTIC:
            if metrics.get(column) != new["methods"].get(method, {}).get(column):
                differences.append(f"{method}.{column}: recorded {metrics.get(column)!r}, "
                                   f"rerun {new['methods'].get(method, {}).get(column)!r}")
    outcomes, contradictions, notes = compare_outcomes(old.get("objective"), old["methods"], new["methods"])
    differences.extend(contradictions)
    old_rewards = _rewards(original.path)
    if old_rewards != new_rewards:
        differences.append("episode rewards differ")
    differences.extend(artefact_differences)
    return {"run": str(run_dir), "metric": config.get("metric"), "deterministic": deterministic,
            "match": not differences, "differences": differences, "outcomes": outcomes, "outcome_notes": notes,
            "latency": {m: (old["methods"][m].get("mean_latency_improvement"),
                            new["methods"].get(m, {}).get("mean_latency_improvement")) for m in old["methods"]}}


def _rerun_config(original: RunRecord, uri: str | None = None, server_dir: str | None = None) -> dict[str, Any]:
    """The recorded configuration as the rerun uses it: the user's cache instead of the record's
    ``cache_dir``, a collection file and a demonstration dataset only when they are the ones the run loaded,
    and the server the user names (see the module docstring)."""
    where = original.file("config.json")
    config = original.read_json("config.json")
    if not isinstance(config, dict):
        raise DataError(f"{where}: expected a JSON object, found {type(config).__name__}")
    config = {**config, **_rerun_server(config, where, uri, server_dir)}
    _check_demonstrations(original, config)
    collection = config.get("collection")
    if collection is not None:
        if not isinstance(collection, str):
            raise DataError(f"{where}: 'collection' must be a file name or null")
        recorded = _recorded_collection_sha256(original)
        if recorded is None:
            raise ConfigError("collection", collection, reason=(
                "the record's schedule.json names no sha256 of the collection file, so the file cannot be "
                "checked to be the one the run loaded; reproduce refuses it"))
        builtin = builtin_collection(collection)  # a built-in collection: its installed data file
        try:  # a regular file (a FIFO or a device is refused unread), hashed, never parsed before it matches
            digest = hashlib.sha256(read_bytes(builtin.path() if builtin else collection)).hexdigest()
        except DataError:
            digest = None
        if digest != recorded:
            raise ConfigError("collection", collection, reason=(
                "not the file this run loaded (missing, or its sha256 differs from the one the record's "
                "schedule.json holds); reproduce reads only the run's own collection file"))
    return {**config, "cache_dir": None}  # the user's cache ($WIELD_CACHE_DIR), never the record's


def _rerun_server(config: Mapping[str, Any], where: Path, uri: str | None,
                  server_dir: str | None) -> dict[str, Any]:
    """``uri`` and ``server_dir`` of the rerun: the server the user gave on the command line, never the one
    the record names (a record may come from someone else, and its URI may lead anywhere). A run on SQLite
    takes none."""
    from case_studies.indexing.build import SERVER_ENGINES, check_engine_choice, server_dir_uri

    engine = config.get("engine", "sqlite")
    if not isinstance(engine, str):
        raise DataError(f"{where}: 'engine' must be a string")
    if engine not in SERVER_ENGINES:
        if uri is not None or server_dir is not None:
            option = "--uri" if uri is not None else "--server-dir"
            raise ConfigError(option.lstrip("-"), server_dir if uri is None else "(the URI)", reason=(
                f"this run used {shown(engine)}, which needs no server: reproduce it without {option}"))
        return {"uri": None, "server_dir": None}
    if uri is None and server_dir is None:
        how = ("--server-dir DIR (a server of 'wield db start postgres --dir DIR') or --uri URI"
               if engine == "postgres" else "--uri URI")
        raise ConfigError("uri", None, reason=(
            f"this run used a {engine} server, and reproduce never connects to the server a record names (a "
            f"record may come from someone else): give a server of your own with {how}"))
    if server_dir is not None:
        if uri is not None:
            raise ConfigError("server-dir", server_dir, reason="give --server-dir or --uri, not both")
        if engine != "postgres":
            raise ConfigError("server-dir", server_dir, reason=f"names a PostgreSQL server; this run used {engine}: "
                                                               "give --uri")
        server_dir = str(Path(server_dir).resolve())
        uri = server_dir_uri(server_dir)
    check_engine_choice(engine, uri)
    return {"uri": uri, "server_dir": server_dir}


def _check_demonstrations(original: RunRecord, config: Mapping[str, Any]) -> None:
    """A demonstration dataset the configuration names is read only when it is the one the run pretrained on:
    its content sha256 equal to the one the record's ``demonstrations.json`` holds (written at run time). A
    record without it, or a dataset that differs, is refused before anything is rerun."""
    from wield.demonstrations import DemonstrationDataset

    path = config.get("demonstrations")
    if path is None:
        return
    if not isinstance(path, str):
        raise DataError(f"{original.file('config.json')}: 'demonstrations' must be a directory name or null")
    recorded = _demonstrations_hash(original.path)
    if recorded is None:
        raise ConfigError("demonstrations", path, reason=(
            "the record holds no sha256 of this demonstration dataset (demonstrations.json), so it cannot be "
            "checked to be the one the run pretrained on; reproduce refuses it"))
    try:
        digest = DemonstrationDataset.load(path).content_hash()
    except (ConfigError, DataError):
        digest = None
    if digest != recorded:
        raise ConfigError("demonstrations", path, reason=(
            "not the dataset this run pretrained on (missing, unreadable, or its sha256 differs from the one "
            "the record's demonstrations.json holds); reproduce reads only the run's own dataset"))


def _recorded_collection_sha256(original: RunRecord) -> str | None:
    schedule = original.read_json("schedule.json") if original.exists("schedule.json") else None
    params = schedule.get("params") if isinstance(schedule, dict) else None
    collection = params.get("collection") if isinstance(params, dict) else None
    source = collection.get("source") if isinstance(collection, dict) else None
    digest = source.get("sha256") if isinstance(source, dict) else None
    return digest if isinstance(digest, str) else None


def _recorded_evaluation(original: RunRecord) -> dict[str, Any]:
    """``evaluation.json``, checked to hold an object ``methods`` of objects before anything is rerun."""
    where = original.file("evaluation.json")
    evaluation = original.read_json("evaluation.json")
    if not isinstance(evaluation, dict):
        raise DataError(f"{where}: expected a JSON object, found {type(evaluation).__name__}")
    methods = evaluation.get("methods")
    if not isinstance(methods, dict) or not methods:
        found = "it is missing" if methods is None else f"found {shown(methods)}"
        raise DataError(f"{where}: 'methods' must be an object of each method's metrics; {found}")
    for method, metrics in methods.items():
        if not isinstance(metrics, dict):
            raise DataError(f"{where}: methods[{shown(method)}] must be an object, found {type(metrics).__name__}")
    if evaluation.get("objective") is not None and not isinstance(evaluation["objective"], dict):
        raise DataError(f"{where}: 'objective' must be an object or null")
    return evaluation


def _recorded_objective(original: RunRecord, evaluation: Mapping[str, Any]) -> Objective | None:
    """The objective the recorded run judged by: its ``run.json``'s, else (a record from before runs recorded
    it there) its ``evaluation.json``'s; None when neither names one (the case study's). A malformed one is a
    ``DataError`` naming the file, before anything is rerun."""
    found = recorded_objective(original.read_json("run.json") if original.exists("run.json") else None,
                               str(original.file("run.json")))
    if found is not None or not evaluation.get("objective"):
        return found
    try:
        return Objective.from_dict(evaluation["objective"])
    except (TypeError, ValueError) as exc:
        raise DataError(f"{original.file('evaluation.json')}: 'objective' is malformed ({exc})") from None


def compare_outcomes(objective: Mapping[str, Any] | None, recorded: Mapping[str, Mapping[str, Any]],
                     rerun: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """The objective's outcome on every recorded method row, in the record and in the rerun: ({row: [recorded,
    rerun]}, the contradictions (met against not met), the rows decided on one side only). ``objective`` is
    the one the record names (``evaluation.json["objective"]``), the case study's default otherwise."""
    judge = Objective.from_dict(objective) if objective else OBJECTIVE
    outcomes: dict[str, list[str]] = {}
    contradictions: list[str] = []
    notes: list[str] = []
    for method, metrics in recorded.items():
        again = rerun.get(method, {})
        if not (judge.readable(metrics) and judge.readable(again)):
            continue
        before, after = judge.decide(metrics), judge.decide(again)
        outcomes[method] = [before, after]
        if before == after:
            continue
        line = (f"{method}: objective {judge.describe()} {before} in the record "
                f"({_latency_figure(metrics)}), {after} in the rerun ({_latency_figure(again)})")
        (contradictions if INCONCLUSIVE not in (before, after) else notes).append(line)
    return outcomes, contradictions, notes


def _latency_figure(metrics: Mapping[str, Any]) -> str:
    """``mean latency improvement 60.3% [55.1, 64.0]`` (no interval for records from before intervals)."""
    value = metrics.get("mean_latency_improvement")
    if not isinstance(value, (int, float)):
        return "no latency figure"
    text = f"mean latency improvement {float(value) * 100:.1f}%"
    ci = metrics.get("mean_latency_improvement_ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        text += f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"
    return text


def _artefact_differences(recorded: Path, rerun: Path, deterministic: bool) -> list[str]:
    """The recorded schedules must be the rerun's byte for byte, and (under the work metric) the recorded
    model's weights the rerun's; an artefact that cannot be read is an error, never a match. The model files
    are read as weights only (``load_weights``): one that would run code when loaded is refused."""
    differences = []
    for name in ("schedule.json", "schedule-test.json"):
        if (rerun / name).exists() and read_record_bytes(recorded / name) != (rerun / name).read_bytes():
            differences.append(f"{name}: the recorded workload differs from the regenerated one")
    if (rerun / "model.pt").exists():
        old = load_weights(recorded / "model.pt")  # a DataError naming the file when it is not plain weights
        if deterministic and not same_weights(old, load_weights(rerun / "model.pt")):
            differences.append("model.pt: the recorded weights differ from the rerun's")
    return differences


def _rewards(run_dir: Path) -> list[float]:
    """The training rewards of a run: per episode for learners, per evaluation for optimisers, none for
    fixed baselines."""
    path = Path(run_dir) / "episodes.csv"
    if not path.exists():
        return []
    data = read_record_bytes(path)  # a FIFO or /dev/zero planted here: refused unread
    try:
        table = pd.read_csv(io.BytesIO(data))
        return table["total_reward" if "total_reward" in table else "reward"].tolist()
    except (ValueError, KeyError, pd.errors.ParserError) as exc:  # EmptyDataError is a ValueError
        raise DataError(f"{path}: damaged ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r})") from None


def _demonstrations_hash(run_dir: Path) -> str | None:
    """The content hash of the demonstrations a DQfD run pretrained on (None for other runs)."""
    path = run_dir / "demonstrations.json"
    if not path.exists():
        return None
    recorded = read_json(path)
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), (str, type(None))):
        raise DataError(f"{path}: expected an object with the dataset's 'sha256'")
    return recorded.get("sha256")
