"""Experiment tracking: every trial's training curve, losses, exploration, learning verdict and final metrics
mirrored to TensorBoard, MLflow or any registered tracker (``wield run|compare NAME --log tensorboard,mlflow``).

The core does it for every case study: ``wield.workflows.run_trial`` opens a ``TrackingSession`` for the
trial when tracking was requested (``requested(names, root)`` around a command, or ``run_trial(...,
tracking=TrackingSpec(...))``); ``RunRecord.append_episodes`` passes every row of ``episodes.csv`` to it
(each numeric column becomes the scalar ``episode/<column>`` at step = the row's ``episode``, or a search's
``evaluation``: the return, and the loss and epsilon where a case study's rows carry them); Stable-Baselines3
learners log through their own logger into it (``sb3/<key>``, at step = the library's timestep count;
``wield.agents.sb3``); when the trial ends (a single run's, or each of an experiment's trials) the session logs
the verdict's rungs (``verdict/<rung>/mean_difference|ci_low|ci_high|effect_size|p|instances|wins`` and the
tags ``verdict.<rung>.kind|outcome``, ``verdict.status``, ``verdict.learned``) and the final metrics
(``final/<metric>`` of the trial's method, ``final/<method>/<metric>`` of every evaluated method), then closes
it. The run's configuration and seeds are logged as parameters.

Where the files go: under the tracking root (the command's ``--out``; without it, the experiment or run
directory), one tracked run per trial named by its path below the root (``trial-000``, ``dqn/trial-000``;
a single run is named after its case study):

- ``tensorboard``: ``torch.utils.tensorboard.SummaryWriter`` event files in ``<root>/tensorboard/<name>``
  (``tensorboard --logdir <root>/tensorboard``);
- ``mlflow``: a local file store ``<root>/mlruns`` (``MLFLOW_TRACKING_URI`` chooses another store, e.g. a
  server or ``sqlite:///mlflow.db``), one MLflow experiment per case study. MLflow 3 keeps the file store in
  maintenance mode and refuses it unless ``MLFLOW_ALLOW_FILE_STORE=true``: Wield sets that for its own
  writes; set it too to read the store (``MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri
  <root>/mlruns``).

Both are optional extras (``pip install 'wield[tracking]'``), imported only when asked for; without them
``--log`` is a one-line error saying what to install.

Another tracker plugs in by name: a factory ``factory(run: TrackedRun) -> Tracker`` (the ``Tracker``
protocol: ``log_params``, ``log_scalars``, ``log_tags``, ``close``), registered with
``register_tracker(name, factory)`` in the process that runs the trials, or, to reach worker processes and
the ``wield`` command, as an entry point of the group ``wield.trackers`` (``name = "package.module:factory"``).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import stat
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, runtime_checkable

from wield.errors import ConfigError, MissingDependency, WieldError
from wield.logs import get_logger

log = get_logger(__name__)

ENTRY_POINT_GROUP = "wield.trackers"
INSTALL_HINT = "pip install 'wield[tracking]'"


@runtime_checkable
class Tracker(Protocol):
    """Where one trial's numbers go. Every call may come many times; ``close`` comes once, last."""

    def log_params(self, params: Mapping[str, str]) -> None:
        """The run's configuration, flattened (``agent.learning_rate``) and as text."""

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Finite numbers under slash-separated names (``episode/total_reward``) at ``step``."""

    def log_tags(self, tags: Mapping[str, str]) -> None:
        """Text facts about the run (case study, method, the verdict's outcomes)."""

    def close(self, status: str) -> None:
        """The trial ended: ``complete``, ``failed`` or ``interrupted``."""


@dataclass(frozen=True)
class TrackedRun:
    """What a tracker factory is told about the trial it tracks."""

    root: Path  # the tracking root (the command's --out)
    name: str  # the trial's name below the root, e.g. "dqn/trial-000"
    directory: Path  # the trial's run record
    case_study: str
    method: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


TrackerFactory = Callable[[TrackedRun], Tracker]


@dataclass(frozen=True)
class TrackingSpec:
    """Which trackers a trial feeds and under which root (``None``: the trial's experiment or run
    directory). Picklable, so it travels to worker processes with the trial."""

    names: tuple[str, ...]
    root: str | None = None


# -- the registry ---------------------------------------------------------------------------------------
def _tensorboard(run: TrackedRun) -> Tracker:
    return TensorBoardTracker(run)


def _mlflow(run: TrackedRun) -> Tracker:
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

    names = tuple(parse_name_list(text, "log", tracker_names(), what="tracker"))
    for name in names:
        if name == "tensorboard":
            _import_summary_writer()
        elif name == "mlflow":
            _import_mlflow_client()
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


@contextlib.contextmanager
def trial_session(spec: TrackingSpec | None, *, case_study: str, directory: str | os.PathLike,
                  config: Mapping[str, Any], seeds: Mapping[str, Any]) -> Iterator["TrackingSession | None"]:
    """The tracking session of one trial (``None`` without a spec): active within the block, closed with
    the trial's outcome when the block ends."""
    if spec is None or not spec.names:
        yield None
        return
    path = Path(directory)
    root = Path(spec.root) if spec.root else _default_root(path)
    method = config.get("method") or config.get("agent")
    run = TrackedRun(root, _trial_name(root, path, case_study), path, case_study,
                     None if method is None else str(method),
                     {"case_study": case_study, "run_record": str(path)})
    session = TrackingSession([tracker_factory(name)(run) for name in spec.names])
    log.info("trial %s mirrored to %s under %s", run.name, ", ".join(spec.names), root)
    token = _ACTIVE.set(session)
    status = "failed"
    try:
        session.log_params({**flatten({"config": dict(config), "seeds": dict(seeds)})})
        session.log_tags(run.tags)
        yield session
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        _ACTIVE.reset(token)
        session.close(status)


STEP_COLUMNS = ("episode", "evaluation", "step")  # the column of an episodes.csv row that is its step


class TrackingSession:
    """One trial's trackers, fed together."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers
        self.last_step = 0
        self._closed = False

    def log_params(self, params: Mapping[str, str]) -> None:
        for tracker in self.trackers:
            tracker.log_params(params)

    def log_scalars(self, values: Mapping[str, Any], step: int) -> None:
        finite = {name: float(value) for name, value in values.items() if _is_number(value)}
        if finite:
            for tracker in self.trackers:
                tracker.log_scalars(finite, int(step))

    def log_tags(self, tags: Mapping[str, Any]) -> None:
        if tags:
            for tracker in self.trackers:
                tracker.log_tags({name: str(value) for name, value in tags.items()})

    def log_episodes(self, rows: Iterable[Mapping[str, Any]], first_index: int = 0) -> None:
        """Each row's numeric columns as ``episode/<column>`` at the row's ``episode`` (a search's rows:
        its ``evaluation``; else the row's index)."""
        for index, row in enumerate(rows, start=first_index):
            column = next((name for name in STEP_COLUMNS if _is_number(row.get(name))), None)
            step = int(float(row[column])) if column is not None else index
            self.last_step = max(self.last_step, step)
            self.log_scalars({f"episode/{name}": value for name, value in row.items() if name != column}, step)

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


def _key(name: str) -> str:
    """A metric or tag name every tracker accepts (MLflow: letters, digits, ``_ - . / space``)."""
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name)


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


# -- TensorBoard -----------------------------------------------------------------------------------------
def _import_summary_writer() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise _missing("tensorboard", error) from None
    return SummaryWriter


def _import_mlflow_client() -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as error:
        raise _missing("mlflow", error) from None
    return MlflowClient


def _missing(tracker: str, error: ImportError) -> WieldError:
    return MissingDependency(f"--log {tracker} needs {error.name or tracker}, which is not installed: {INSTALL_HINT}")


class TensorBoardTracker:
    """``torch.utils.tensorboard.SummaryWriter`` event files under ``<root>/tensorboard/<name>``."""

    def __init__(self, run: TrackedRun) -> None:
        from wield.workflows.ownership import ensure_directory

        writer = _import_summary_writer()
        self.log_dir = ensure_directory(run.root / "tensorboard" / run.name, "log", owned=True)
        _restart_event_files(self.log_dir)
        self.writer = writer(log_dir=str(self.log_dir))

    def log_params(self, params: Mapping[str, str]) -> None:
        table = "\n".join(f"| {name} | {value} |" for name, value in sorted(params.items()))
        self.writer.add_text("config", "| parameter | value |\n| --- | --- |\n" + table)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)

    def log_tags(self, tags: Mapping[str, str]) -> None:
        for name, value in tags.items():
            self.writer.add_text(name, value)

    def close(self, status: str) -> None:
        self.writer.add_text("status", status)
        self.writer.close()


def _restart_event_files(log_dir: Path) -> None:
    """Remove the event files an earlier attempt at this trial left (killed, then resumed: the trial starts
    over, so its first episodes would otherwise appear twice). Only regular files named as TensorBoard names
    them are removed, never a link's target."""
    for path in log_dir.glob("events.out.tfevents.*"):
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                path.unlink()
        except OSError:
            pass


# -- MLflow ----------------------------------------------------------------------------------------------
_MLFLOW_STATUS = {"complete": "FINISHED", "failed": "FAILED", "interrupted": "KILLED"}


def _mlflow_store(run: TrackedRun) -> str:
    """The tracking URI: ``MLFLOW_TRACKING_URI``, else the local file store ``<root>/mlruns``. A file store
    (the default one, or a ``file:`` URI or a path) is a directory Wield writes into, so it gets the
    ownership policy (``ensure_directory``); one named by the user needs ``MLFLOW_ALLOW_FILE_STORE=true``,
    without which MLflow 3 refuses it (a ``ConfigError`` saying so instead of MLflow's traceback)."""
    from wield.workflows.ownership import ensure_directory

    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        store = ensure_directory(run.root / "mlruns", "log", owned=True)
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3: file store in maintenance mode
        return Path(os.path.abspath(store)).as_uri()
    path = user_file_store()
    if path is None:
        return uri  # a server or a database (sqlite:///...): not a directory of ours
    store = ensure_directory(path, "MLFLOW_TRACKING_URI", owned=True)
    return Path(os.path.abspath(store)).as_uri()


def user_file_store() -> str | None:
    """The directory of the file store ``MLFLOW_TRACKING_URI`` names (a ``file:`` URI or a path), checked
    under the ownership policy (``check_path``) and refused without ``MLFLOW_ALLOW_FILE_STORE=true`` (MLflow 3
    refuses a file store otherwise); None when it names none. Called before any work by ``requested``."""
    from urllib.parse import unquote, urlparse

    from wield.workflows.ownership import check_path

    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    if os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in ("true", "1"):
        raise ConfigError("MLFLOW_TRACKING_URI", uri, reason=(
            "names a file store, which MLflow 3 refuses unless MLFLOW_ALLOW_FILE_STORE=true: set that too, or "
            "name a database (sqlite:///mlflow.db) or a server, or unset it to use <out>/mlruns"))
    path = unquote(parsed.path) if parsed.scheme == "file" else uri
    check_path(path, "MLFLOW_TRACKING_URI")
    return path


class MLflowTracker:
    """One MLflow run per trial, in the experiment named after the case study; a local file store
    ``<root>/mlruns`` unless ``MLFLOW_TRACKING_URI`` names another store."""

    def __init__(self, run: TrackedRun) -> None:
        client_class = _import_mlflow_client()
        self.uri = _mlflow_store(run)
        try:
            self.client = client_class(tracking_uri=self.uri)
            experiment = self._experiment(f"wield-{run.case_study}")
            self._end_killed_attempts(experiment, run)
            self.run_id = self.client.create_run(experiment, run_name=run.name,
                                                 tags={_key(k): v for k, v in run.tags.items()}).info.run_id
        except WieldError:
            raise
        except Exception as exc:  # MlflowException and the store's own errors: one line, not a traceback
            if type(exc).__module__.split(".")[0] != "mlflow":
                raise
            text = " ".join(str(exc).split())[:300]
            raise ConfigError("--log mlflow", self.uri, reason=f"MLflow cannot use this store ({text})") from None

    def _end_killed_attempts(self, experiment: str, run: TrackedRun) -> None:
        """End as KILLED the runs an earlier attempt at this trial left RUNNING (killed, by -9 or with the
        machine): the trial starts over in a new run, so it is counted once. Only this process writes the
        trial's record (its lock is held), so a RUNNING run of the same record is a dead attempt's."""
        record = run.tags.get("run_record")
        for found in self.client.search_runs([experiment], filter_string="attributes.status = 'RUNNING'",
                                             max_results=1000):
            if found.data.tags.get("run_record") == record and found.data.tags.get("mlflow.runName") == run.name:
                self.client.set_tag(found.info.run_id, "wield.ended", "an earlier attempt, killed; the trial "
                                                                      "was rerun in another MLflow run")
                self.client.set_terminated(found.info.run_id, "KILLED")

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name)
        except Exception:  # another trial's process created it in between
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def log_params(self, params: Mapping[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(name[:250], value) for name, value in params.items()]
        for start in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[start:start + 100])

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(_key(name), value, now, step) for name, value in values.items()]
        for start in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[start:start + 1000])

    def log_tags(self, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(_key(name), value[:5000]) for name, value in tags.items()])

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, _MLFLOW_STATUS.get(status, "FINISHED"))
