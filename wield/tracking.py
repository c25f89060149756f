"""Experiment tracking: every trial's training curve, losses, exploration, learning verdict, final metrics,
hyperparameters and files mirrored to TensorBoard, MLflow or any registered tracker (``wield run|compare NAME
--log tensorboard,mlflow``); an experiment or a comparison is a parent run with its trials nested under it.

The core does it for every case study: ``wield.workflows.run_trial`` opens a ``TrackingSession`` for the
trial when tracking was requested (``requested(names, root)`` around a command, or ``run_trial(...,
tracking=TrackingSpec(...))``); ``RunRecord.append_episodes`` passes every row of ``episodes.csv`` to it.

One x-axis convention, for every method (Wield's DQN, DQfD and PPO, Stable-Baselines3's learners, searches):

- ``episode/<column>``: each numeric column of a row at step = the row's ``episode`` (a search's rows: its
  ``evaluation``);
- ``env_step/<column>``: the same values at step = the environment steps (transitions) taken so far when the
  row ended: the row's ``env_steps`` column, else the running sum of its ``decisions`` column, else (a search,
  one environment step per evaluation) its ``evaluation`` + 1; a row with none of them has no ``env_step/``;
- ``sb3/<key>``: what Stable-Baselines3's own logger records (``train/loss``, ``rollout/ep_rew_mean``), at
  step = the library's timestep count, which is environment steps (``wield.agents.sb3``; scheduling's
  vector training too), so it overlays ``env_step/``.

When the trial ends (a single run's, or each of an experiment's trials) the session logs the verdict's rungs
(``verdict/<rung>/mean_difference|ci_low|ci_high|effect_size|p|instances|wins`` and the tags
``verdict.<rung>.kind|outcome``, ``verdict.status``, ``verdict.learned``) and the final metrics
(``final/<metric>`` of the trial's method, ``final/<method>/<metric>`` of every evaluated method, at the last
episode's step), then the record's files (``ARTIFACTS``: ``config.toml``, ``results.png``, the report,
``model.pt``; each a regular file under ``MAX_ARTIFACT_BYTES``, text files with passwords redacted) to the
trackers that keep files (MLflow), then closes it. Parameters: ``config.<key>``, the trial's configuration
(every option, defaults included) but its ``hyperparameters`` block; ``agent.<key>``, the hyperparameters its
learner used, defaults included where the case study says which (``CaseStudy.hyperparameters_used``, as the
``[agent]`` table of ``config.toml``), and only that learner's (another learner's sub-table, e.g.
``[agent.sb3-ppo]`` in a DQN run, is left out); ``seeds.<key>``. Tags: ``case_study``, ``method``, ``kind``
(``trial``), ``run_record``, and in an experiment ``class``, ``trial`` and ``parent``. TensorBoard writes
the parameters and the ``final/``/``verdict/`` scalars as its HParams summary (one row per run in the HParams
view). No parameter, tag or text file carries a password (``wield.logs.redact_secrets``).

``wield run NAME --class Ci`` and ``wield compare NAME`` open a parent run first (``experiment_session``; the
tracked run ``experiment`` or ``comparison``; in MLflow every trial's run is nested under it, tag
``mlflow.parentRunId``) with the experiment's parameters, the tags ``kind``, ``class`` and ``method`` (the
methods, comma-separated), and when its trials have ended the classification (``classification/n|s|f|
ci_low|ci_high|met|inconclusive``, a comparison's per method: ``classification/<method>/...``; the tag
``classification`` or ``classification.<method>``: its label) and its files (``config.toml``,
``classification.json`` or ``comparison.json``).

Where the files go: under the tracking root (the command's ``--out``; without it, the experiment or run
directory), one tracked run per trial named by its path below the root (``trial-000``, ``dqn/trial-000``;
a single run is named after its case study), and one per experiment (``experiment``, ``comparison``):

- ``tensorboard``: ``torch.utils.tensorboard.SummaryWriter`` event files in ``<root>/tensorboard/<name>``
  (``tensorboard --logdir <root>/tensorboard``);
- ``mlflow``: a local file store ``<root>/mlruns`` (``MLFLOW_TRACKING_URI`` chooses another store, e.g. a
  server or ``sqlite:///mlflow.db``), one MLflow experiment per case study. MLflow 3 keeps the file store in
  maintenance mode and refuses it unless ``MLFLOW_ALLOW_FILE_STORE=true``: Wield sets that for its own
  writes; set it too to read the store (``MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri
  <root>/mlruns``).

Both are optional extras (``pip install 'wield[tracking]'``), imported only when asked for
(``wield.tracking_backends``); without them ``--log`` is a one-line error saying what to install.

Another tracker plugs in by name: a factory ``factory(run: TrackedRun) -> Tracker`` (the ``Tracker``
protocol: ``log_params``, ``log_scalars``, ``log_tags``, ``close``; optionally ``log_artifact(path, name)``
to keep files and a ``run_id`` attribute that nested runs are told as ``TrackedRun.parent_ids``), registered
with ``register_tracker(name, factory)`` in the process that runs the trials, or, to reach worker processes
and the ``wield`` command, as an entry point of the group ``wield.trackers`` (``name = "package.module:factory"``).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence, runtime_checkable

from wield.errors import ConfigError
from wield.logs import get_logger, redact_secrets
from wield.tracked_run import INSTALL_HINT, SUMMARY_PREFIXES, TrackedRun, metric_key  # noqa: F401  (re-exported)

_key = metric_key

log = get_logger(__name__)

ENTRY_POINT_GROUP = "wield.trackers"
# A run's files kept by the trackers that keep files (MLflow), when the record has them: the command's
# options, the figure, the report (``wield report``), the trained model; an experiment's: its classification.
ARTIFACTS = ("config.toml", "results.png", "report.html", "report.md", "model.pt")
EXPERIMENT_ARTIFACTS = ("config.toml", "classification.json", "comparison.json", "report.html", "report.md")
MAX_ARTIFACT_BYTES = 256 * 2**20  # a larger file is not copied (the tag skipped_artifacts says so)
TEXT_SUFFIXES = (".toml", ".json", ".md", ".html", ".csv", ".log", ".txt")  # copied with passwords redacted


@runtime_checkable
class Tracker(Protocol):
    """Where one trial's numbers go. Every call may come many times; ``close`` comes once, last. A tracker
    that keeps files also has ``log_artifact(path, name)``; one whose runs can be nested has ``run_id``."""

    def log_params(self, params: Mapping[str, str]) -> None:
        """The run's configuration, flattened (``agent.learning_rate``) and as text."""

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Finite numbers under slash-separated names (``episode/total_reward``) at ``step``."""

    def log_tags(self, tags: Mapping[str, str]) -> None:
        """Text facts about the run (case study, method, the verdict's outcomes)."""

    def close(self, status: str) -> None:
        """The trial ended: ``complete``, ``failed`` or ``interrupted``."""


TrackerFactory = Callable[[TrackedRun], Tracker]


@dataclass(frozen=True)
class TrackingSpec:
    """Which trackers a trial feeds and under which root (``None``: the trial's experiment or run
    directory), and, within an experiment, its parent run (``parent``, ``parent_ids``: tracker name -> id)
    and the tags every trial gets (``tags``). Picklable, so it travels to worker processes with the trial."""

    names: tuple[str, ...]
    root: str | None = None
    parent: str | None = None
    parent_ids: tuple[tuple[str, str], ...] = ()
    tags: tuple[tuple[str, str], ...] = ()


# -- the registry ---------------------------------------------------------------------------------------
def _tensorboard(run: TrackedRun) -> Tracker:
    from wield.tracking_backends import TensorBoardTracker

    return TensorBoardTracker(run)


def _mlflow(run: TrackedRun) -> Tracker:
    from wield.tracking_backends import MLflowTracker

    return MLflowTracker(run)


_REGISTRY: dict[str, TrackerFactory] = {"tensorboard": _tensorboard, "mlflow": _mlflow}


def register_tracker(name: str, factory: TrackerFactory) -> None:
    """Make ``--log NAME`` (and ``TrackingSpec((NAME,))``) use ``factory`` in this process."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise ConfigError("tracker name", name, reason="must be lower-case letters, digits, '-' or '_'")
    _REGISTRY[name] = factory


def tracker_names() -> tuple[str, ...]:
    """Every tracker ``--log`` accepts: the built-in ones, registered ones and installed entry points."""
    names = set(_REGISTRY) | {entry.name for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return tuple(sorted(names))


def tracker_factory(name: str) -> TrackerFactory:
    """The factory registered (or installed as an entry point) under ``name``."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        return entry.load()
    raise ConfigError("log", name, tracker_names(), reason="unknown tracker")


def parse_trackers(text: str | Iterable[str]) -> tuple[str, ...]:
    """``"tensorboard,mlflow"`` -> the tracker names, each known and its library installed (checked now,
    before anything runs: a missing one is a one-line error saying what to install)."""
    from wield.configs import parse_name_list
    from wield.tracking_backends import import_mlflow_client, import_summary_writer

    names = tuple(parse_name_list(text, "log", tracker_names(), what="tracker"))
    for name in names:
        if name == "tensorboard":
            import_summary_writer()
        elif name == "mlflow":
            import_mlflow_client()
    return names


# -- the active session --------------------------------------------------------------------------------
_REQUESTED: contextvars.ContextVar[TrackingSpec | None] = contextvars.ContextVar("wield_tracking_request",
                                                                                  default=None)
_ACTIVE: contextvars.ContextVar["TrackingSession | None"] = contextvars.ContextVar("wield_tracking_session",
                                                                                    default=None)


@contextlib.contextmanager
def requested(names: str | Iterable[str] | None,
              root: str | os.PathLike | None = None) -> Iterator[TrackingSpec | None]:
    """Within the block, every trial run in this process (and every trial an experiment hands to its
    workers) feeds the trackers ``names`` under ``root``; ``names`` None or empty: nothing is tracked."""
    if not names:
        yield None
        return
    spec = TrackingSpec(parse_trackers(names), None if root is None else str(root))
    if "mlflow" in spec.names:
        from wield.tracking_backends import user_file_store

        user_file_store()  # a store MLflow would refuse, or one in another user's reach: before any work
    token = _REQUESTED.set(spec)
    try:
        yield spec
    finally:
        _REQUESTED.reset(token)


def current_request() -> TrackingSpec | None:
    """The tracking requested around the running command (``requested``), if any."""
    return _REQUESTED.get()


def active() -> "TrackingSession | None":
    """The running trial's tracking session, if the trial is tracked."""
    return _ACTIVE.get()


def log_episode_rows(rows: Iterable[Mapping[str, Any]], first_index: int = 0) -> None:
    """Mirror rows of ``episodes.csv`` to the running trial's trackers (no-op when it is not tracked)."""
    session = _ACTIVE.get()
    if session is not None:
        session.log_episodes(rows, first_index)


def _trial_name(root: Path, directory: Path, case_study: str) -> str:
    try:
        relative = directory.resolve().relative_to(root.resolve())
    except ValueError:
        relative = Path(directory.name)
    parts = [part for part in relative.parts if part != "trials"]
    return "/".join(parts) if parts else case_study


def _default_root(directory: Path) -> Path:
    """An experiment's trial (``EXPERIMENT/trials/trial-NNN``): the experiment; a single run: itself."""
    return directory.parent.parent if directory.parent.name == "trials" else directory


def _open(spec: TrackingSpec, run: TrackedRun) -> "TrackingSession":
    return TrackingSession([tracker_factory(name)(run) for name in spec.names], spec.names)


@contextlib.contextmanager
def _running(session: "TrackingSession", active_session: bool) -> Iterator["TrackingSession"]:
    """``session`` (the active one within the block when ``active_session``), closed with the block's outcome."""
    token = _ACTIVE.set(session) if active_session else None
    status = "failed"
    try:
        yield session
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if token is not None:
            _ACTIVE.reset(token)
        session.close(status)


@contextlib.contextmanager
def trial_session(spec: TrackingSpec | None, *, case_study: str, directory: str | os.PathLike,
                  config: Mapping[str, Any], seeds: Mapping[str, Any],
                  hyperparameters: Mapping[str, Any] | None = None) -> Iterator["TrackingSession | None"]:
    """The tracking session of one trial (``None`` without a spec): active within the block, closed with
    the trial's outcome when the block ends. ``hyperparameters``: the learner's own, as used
    (``learner_hyperparameters``); default: none logged."""
    if spec is None or not spec.names:
        yield None
        return
    path = Path(directory)
    root = Path(spec.root) if spec.root else _default_root(path)
    method = config.get("method") or config.get("agent")
    tags = {"case_study": case_study, "run_record": str(path), "kind": "trial", **dict(spec.tags)}
    if method is not None:
        tags["method"] = str(method)
    if spec.parent is not None:
        tags.update({"parent": spec.parent, "trial": str(seeds.get("trial", ""))})
    run = TrackedRun(root, _trial_name(root, path, case_study), path, case_study,
                     None if method is None else str(method), tags, "trial", spec.parent, dict(spec.parent_ids))
    session = _open(spec, run)
    log.info("trial %s mirrored to %s under %s", run.name, ", ".join(spec.names), root)
    with _running(session, active_session=True):
        session.log_params(run_params(config, hyperparameters, seeds))
        session.log_tags(run.tags)
        yield session


@contextlib.contextmanager
def experiment_session(kind: str, *, study: Any, directory: str | os.PathLike, class_name: str,
                       methods: Sequence[str], config: Mapping[str, Any],
                       facts: Mapping[str, Any]) -> Iterator["TrackingSession | None"]:
    """The parent run of an experiment (``kind`` "experiment": ``wield run NAME --class Ci``) or a comparison
    ("comparison": ``wield compare NAME``) of the case study ``study`` when tracking was requested (else
    ``None``): opened with the parameters ``config.<key>`` (``config``, the trials' configuration),
    ``agent.<key>`` (one method: its learner's hyperparameters as used; a comparison: the block as given, with
    each learner's sub-table) and ``experiment.<key>`` (``facts``: trials, base seed), and the tags ``kind``,
    ``class`` and ``method``; within the block every trial started (here or in a worker) is its child
    (``TrackingSpec.parent_ids``) with the tags ``class`` and ``parent``; closed with the block's outcome.
    Log the classification (``log_classification``) and files (``log_artifacts``) before the block ends."""
    spec = _REQUESTED.get()
    if spec is None or not spec.names:
        yield None
        return
    case_study = str(study.name)
    if len(methods) == 1:
        agent = learner_hyperparameters(study, config)
    else:
        agent = dict(config.get("hyperparameters") or {})
    params = {**run_params(config, agent), **flatten(dict(facts), "experiment.")}
    path = Path(directory)
    root = Path(spec.root) if spec.root else path
    tags = {"case_study": case_study, "run_record": str(path), "kind": kind, "class": class_name,
            **({"method": ",".join(methods)} if methods else {})}
    run = TrackedRun(root, kind, path, case_study, methods[0] if len(methods) == 1 else None, tags, kind)
    session = _open(spec, run)
    log.info("%s %s mirrored to %s under %s", kind, path, ", ".join(spec.names), root)
    children = dataclasses.replace(spec, root=str(root), parent=kind, parent_ids=session.run_ids(),
                                   tags=(("class", class_name),))
    token = _REQUESTED.set(children)
    try:
        with _running(session, active_session=False):
            session.log_params(params)
            session.log_tags(tags)
            yield session
    finally:
        _REQUESTED.reset(token)


def run_params(config: Mapping[str, Any], hyperparameters: Mapping[str, Any] | None,
               seeds: Mapping[str, Any] | None = None) -> dict[str, str]:
    """A run's parameters: ``config.<key>`` (the configuration but its ``hyperparameters`` block, which
    holds every learner's sub-table), ``agent.<key>`` (the learner's own hyperparameters as used) and
    ``seeds.<key>``."""
    params = flatten({key: value for key, value in config.items() if key != "hyperparameters"}, "config.")
    params.update(flatten(dict(hyperparameters or {}), "agent."))
    params.update(flatten(dict(seeds or {}), "seeds."))
    return params


def learner_hyperparameters(study: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """The hyperparameters the learner of a trial with ``config`` uses, only its own: the case study's
    ``hyperparameters_used(config, block)`` (defaults included, as ``config.toml``'s ``[agent]``), else the
    ``hyperparameters`` block given, less every other learner's sub-table; ``{}`` for a method that is no
    learner (a heuristic, a search)."""
    from wield.agents.hyperparameters import learners

    method = str(config.get("method") or config.get("agent") or "")
    learner = str((getattr(study, "learners", None) or {}).get(method, method))
    block = config.get("hyperparameters") or {}
    used: Mapping[str, Any] = block
    hook = getattr(study, "hyperparameters_used", None)
    if hook is not None:
        try:
            used = hook(dict(config), block)
        except ConfigError as exc:  # the block was checked before the run: log it, keep the block as given
            log.warning("the hyperparameters used by %s could not be listed: %s", method, exc)
    known = learners()
    if learner not in known:
        return {}
    return own_table(learner, used, known)


def own_table(learner: str, table: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """``table``'s values that apply to ``learner``: its top-level ones and its own sub-table's over them,
    without the sub-tables of the other ``known`` learners."""
    values = {key: value for key, value in table.items() if not (key in known and isinstance(value, Mapping))}
    own = table.get(learner)
    values.update(dict(own) if isinstance(own, Mapping) else {})
    return values


STEP_COLUMNS = ("episode", "evaluation", "step")  # the column of an episodes.csv row that is its step
ENV_STEP_COLUMNS = ("env_steps",)  # a row's environment steps so far, when it says (else: decisions summed)


class TrackingSession:
    """One run's trackers, fed together (``names``: the trackers' names, in order)."""

    def __init__(self, trackers: list[Tracker], names: Sequence[str] = ()) -> None:
        self.trackers = trackers
        self.names = tuple(names)
        self.last_step = 0
        self.env_steps = 0
        self._closed = False

    def run_ids(self) -> tuple[tuple[str, str], ...]:
        """``(tracker name, run id)`` of every tracker that has a ``run_id`` (MLflow's), for nested runs."""
        ids = ((name, getattr(tracker, "run_id", None)) for name, tracker in zip(self.names, self.trackers))
        return tuple((name, str(run_id)) for name, run_id in ids if run_id)

    def log_params(self, params: Mapping[str, str]) -> None:
        clean = {name: redact_secrets(str(value)) for name, value in params.items()}
        for tracker in self.trackers:
            tracker.log_params(clean)

    def log_scalars(self, values: Mapping[str, Any], step: int) -> None:
        finite = {name: float(value) for name, value in values.items() if _is_number(value)}
        if finite:
            for tracker in self.trackers:
                tracker.log_scalars(finite, int(step))

    def log_tags(self, tags: Mapping[str, Any]) -> None:
        if tags:
            for tracker in self.trackers:
                tracker.log_tags({name: redact_secrets(str(value)) for name, value in tags.items()})

    def log_episodes(self, rows: Iterable[Mapping[str, Any]], first_index: int = 0) -> None:
        """Each row's numeric columns as ``episode/<column>`` at the row's ``episode`` (a search's rows:
        its ``evaluation``; else the row's index) and as ``env_step/<column>`` at the environment steps
        taken so far (see the module docstring)."""
        for index, row in enumerate(rows, start=first_index):
            column = next((name for name in STEP_COLUMNS if _is_number(row.get(name))), None)
            step = int(float(row[column])) if column is not None else index
            self.last_step = max(self.last_step, step)
            values = {name: value for name, value in row.items() if name != column and name not in ENV_STEP_COLUMNS}
            self.log_scalars({f"episode/{name}": value for name, value in values.items()}, step)
            env_step = self._env_step(row, column, step)
            if env_step is not None:
                self.log_scalars({f"env_step/{name}": value for name, value in values.items()}, env_step)

    def _env_step(self, row: Mapping[str, Any], column: str | None, step: int) -> int | None:
        """The environment steps taken when ``row`` ended (``None``: the row does not say)."""
        given = next((row[name] for name in ENV_STEP_COLUMNS if _is_number(row.get(name))), None)
        if given is not None:
            self.env_steps = int(float(given))
        elif _is_number(row.get("decisions")):
            self.env_steps += int(float(row["decisions"]))
        elif column == "evaluation":
            self.env_steps = step + 1
        else:
            return None
        return self.env_steps

    def log_summary(self, summary: Any) -> None:
        """A finished trial's verdict rungs and final metrics (a ``TrialSummary``)."""
        step = self.last_step
        verdict = summary.verdict or {}
        scalars: dict[str, Any] = {}
        tags: dict[str, Any] = {}
        for rung in verdict.get("rungs") or ():
            name = _key(str(rung.get("name", "rung")))
            for number in ("mean_difference", "ci_low", "ci_high", "effect_size", "p", "instances", "wins"):
                scalars[f"verdict/{name}/{number}"] = rung.get(number)
            tags[f"verdict.{name}.kind"] = rung.get("kind")
            tags[f"verdict.{name}.outcome"] = rung.get("outcome")
        for key in ("status", "learned"):
            if key in verdict:
                tags[f"verdict.{key}"] = verdict[key]
        scalars.update({f"final/{_key(name)}": value for name, value in summary.metrics.items()})
        for method, metrics in (summary.methods or {}).items():
            scalars.update({f"final/{_key(method)}/{_key(name)}": value for name, value in metrics.items()})
        scalars["final/transitions"] = summary.transitions
        self.log_scalars(scalars, step)
        self.log_tags({"method": summary.method, **{k: v for k, v in tags.items() if v is not None}})

    def log_classification(self, classifications: Mapping[str, Mapping[str, Any]]) -> None:
        """An experiment's classification (``classification.json``'s, by method): its numbers as
        ``classification/<field>`` (one method) or ``classification/<method>/<field>`` (a comparison) and
        its label as the tag ``classification`` (``classification.<method>``)."""
        one = len(classifications) == 1
        scalars: dict[str, Any] = {}
        tags: dict[str, Any] = {}
        for method, recorded in classifications.items():
            prefix = "classification/" if one else f"classification/{_key(method)}/"
            for number in ("n", "s", "f", "ci_low", "ci_high", "met", "inconclusive"):
                scalars[prefix + number] = recorded.get(number)
            tags["classification" if one else f"classification.{_key(method)}"] = recorded.get("label")
        self.log_scalars(scalars, 0)
        self.log_tags({name: value for name, value in tags.items() if value is not None})

    def log_artifacts(self, directory: str | os.PathLike, names: Sequence[str] = ARTIFACTS) -> list[str]:
        """Give the trackers that keep files (``log_artifact``) each of ``names`` that ``directory`` holds as
        a regular file of at most ``MAX_ARTIFACT_BYTES`` (a text file with its passwords redacted); the
        names given. Those left out are logged, and named in the tag ``skipped_artifacts``."""
        keepers = [tracker for tracker in self.trackers if callable(getattr(tracker, "log_artifact", None))]
        if not keepers:
            return []
        given = []
        with tempfile.TemporaryDirectory(prefix="wield-artifacts-") as scratch:
            files, skipped = artifact_files(directory, names, scratch)
            for name, path in files:
                for tracker in keepers:
                    tracker.log_artifact(path, name)  # type: ignore[attr-defined]
                given.append(name)
        if skipped:
            log.warning("files not given to the trackers: %s", "; ".join(skipped))
            self.log_tags({"skipped_artifacts": "; ".join(skipped)})
        return given

    def close(self, status: str) -> None:
        if self._closed:
            return
        self._closed = True
        errors = []
        for tracker in self.trackers:
            try:
                tracker.close(status)
            except Exception as exc:  # close every tracker, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]


def artifact_files(directory: str | os.PathLike, names: Sequence[str],
                   scratch: str | os.PathLike) -> tuple[list[tuple[str, Path]], list[str]]:
    """The files of ``names`` in ``directory`` a tracker may keep: ``[(name, path)]`` for each regular file of at
    most ``MAX_ARTIFACT_BYTES`` (a text file as a copy in ``scratch`` with its passwords redacted), and the
    names left out with why (``"NAME (why)"``); a name ``directory`` does not hold is neither."""
    files, skipped = [], []
    for name in names:
        path = Path(directory) / name
        try:
            info = path.lstat()
        except OSError:
            continue  # the run did not write it
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ARTIFACT_BYTES:
            why = "not a regular file" if not stat.S_ISREG(info.st_mode) else \
                f"{info.st_size:,} bytes, over {MAX_ARTIFACT_BYTES:,}"
            skipped.append(f"{name} ({why})")
            continue
        if path.suffix in TEXT_SUFFIXES:
            text = path.read_text(encoding="utf-8", errors="replace")
            path = Path(scratch) / name
            path.write_text(redact_secrets(text), encoding="utf-8")
        files.append((name, path))
    return files, skipped


def _is_number(value: Any) -> bool:
    """A finite number (bools count as 0 / 1; text and None do not)."""
    if isinstance(value, bool):
        return True
    if value is None or isinstance(value, (str, bytes)):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``: nested configuration as flat text parameters."""
    flat: dict[str, str] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            flat.update(flatten(item, f"{name}."))
        else:
            flat[_key(name)] = str(item)[:5000]
    return flat
