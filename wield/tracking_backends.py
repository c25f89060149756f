"""The built-in trackers of ``wield.tracking``: TensorBoard (``SummaryWriter`` event files, with the HParams
view's summary) and MLflow (one run per trial or experiment, nested, with artifacts).

- ``TensorBoardTracker`` writes ``<root>/tensorboard/<name>``; when the run ends it writes TensorBoard's
  HParams summary into the same directory (not a timestamped subdirectory, as ``SummaryWriter.add_hparams``
  would): the run's parameters as the hyperparameters, and the summary scalars it was given (``final/``,
  ``verdict/``, ``classification/``) as the metrics, so the HParams view lists one row per run with its final
  numbers.
- ``MLflowTracker`` creates one MLflow run in the experiment ``wield-<case study>`` of the store
  (``<root>/mlruns`` unless ``MLFLOW_TRACKING_URI`` names another); a trial of an experiment or a comparison
  is nested under the command's parent run (the tag ``mlflow.parentRunId``); ``log_artifact`` copies a file
  into the run's artifacts.

Both libraries are imported only when a tracker is made (``pip install 'wield[tracking]'``).
"""

from __future__ import annotations

import math
import os
import stat
import time
from pathlib import Path
from typing import Any, Mapping

from wield.errors import ConfigError, MissingDependency, WieldError
from wield.tracked_run import INSTALL_HINT, SUMMARY_PREFIXES, TrackedRun, metric_key


def import_summary_writer() -> Any:
    """``torch.utils.tensorboard.SummaryWriter``, or a one-line error saying what to install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise _missing("tensorboard", error) from None
    return SummaryWriter


def import_mlflow_client() -> Any:
    """``mlflow.tracking.MlflowClient``, or a one-line error saying what to install."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as error:
        raise _missing("mlflow", error) from None
    return MlflowClient


def _missing(tracker: str, error: ImportError) -> WieldError:
    return MissingDependency(f"--log {tracker} needs {error.name or tracker}, which is not installed: {INSTALL_HINT}")


# -- TensorBoard -----------------------------------------------------------------------------------------
class TensorBoardTracker:
    """``torch.utils.tensorboard.SummaryWriter`` event files under ``<root>/tensorboard/<name>``, with the
    HParams summary written into the same directory when the run ends."""

    def __init__(self, run: TrackedRun) -> None:
        from wield.workflows.ownership import ensure_directory

        writer = import_summary_writer()
        self.log_dir = ensure_directory(run.root / "tensorboard" / run.name, "log", owned=True)
        _restart_event_files(self.log_dir)
        self.writer = writer(log_dir=str(self.log_dir))
        self.hparams: dict[str, str] = {}
        self.metrics: set[str] = set()

    def log_params(self, params: Mapping[str, str]) -> None:
        table = "\n".join(f"| {name} | {value} |" for name, value in sorted(params.items()))
        self.writer.add_text("config", "| parameter | value |\n| --- | --- |\n" + table)
        self.hparams.update(params)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)
            if name.startswith(SUMMARY_PREFIXES):
                self.metrics.add(name)

    def log_tags(self, tags: Mapping[str, str]) -> None:
        for name, value in tags.items():
            self.writer.add_text(name, value)

    def close(self, status: str) -> None:
        self.writer.add_text("status", status)
        if self.hparams:
            write_hparams(self.writer, self.hparams, sorted(self.metrics))
        self.writer.close()


def hparam_value(text: str) -> bool | int | float | str:
    """A parameter's text as the HParams view sorts it: a whole number, a finite number, a boolean, else the
    text itself (lists and tables stay text)."""
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def write_hparams(writer: Any, params: Mapping[str, str], metrics: list[str]) -> None:
    """TensorBoard's HParams summary (experiment, session start and end) into ``writer``'s own directory: the
    hyperparameters ``params`` and the names of scalars already logged there as the metrics."""
    from torch.utils.tensorboard.summary import hparams

    values = {name: hparam_value(value) for name, value in params.items()}
    experiment, start, end = hparams(values, {name: 0.0 for name in metrics})
    file_writer = writer._get_file_writer()
    for summary in (experiment, start, end):
        file_writer.add_summary(summary)


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
PARENT_TAG = "mlflow.parentRunId"  # how MLflow nests a run under another (what mlflow.start_run(nested=True) sets)


def mlflow_store(root: Path, create: bool = True) -> str:
    """The tracking URI of a run kept under ``root``: ``MLFLOW_TRACKING_URI``, else the local file store
    ``<root>/mlruns`` (made when ``create``; else it must exist: a ``ConfigError`` saying where it looked). A
    file store (the default one, or a ``file:`` URI or a path) is a directory Wield writes into, so it gets the
    ownership policy (``ensure_directory``); one named by the user needs ``MLFLOW_ALLOW_FILE_STORE=true``,
    without which MLflow 3 refuses it (a ``ConfigError`` saying so instead of MLflow's traceback)."""
    from wield.workflows.ownership import ensure_directory

    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        default = root / "mlruns"
        if not create and (not default.is_dir() or default.is_symlink()):
            raise ConfigError("--log mlflow", str(root), reason=(
                f"no MLflow store found for it: {default} is not a directory and MLFLOW_TRACKING_URI is not set "
                "(was the run tracked with --log mlflow?)"))
        store = ensure_directory(default, "log", owned=True)
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
    """One MLflow run per trial (or experiment), in the experiment named after the case study; a local file
    store ``<root>/mlruns`` unless ``MLFLOW_TRACKING_URI`` names another store. A run with a parent
    (``TrackedRun.parent_ids["mlflow"]``) is nested under it."""

    def __init__(self, run: TrackedRun) -> None:
        client_class = import_mlflow_client()
        self.uri = mlflow_store(run.root)
        tags = {metric_key(k): v for k, v in run.tags.items()}
        parent = run.parent_ids.get("mlflow")
        if parent:
            tags[PARENT_TAG] = parent
        self.known_params: dict[str, str] = {}  # a resumed parent run's: logged again only if unchanged
        try:
            self.client = client_class(tracking_uri=self.uri)
            experiment = self._experiment(f"wield-{run.case_study}")
            earlier = self._earlier_parent(experiment, run) if run.kind != "trial" else None
            if earlier is not None:  # an experiment resumed: its trials stay nested under one parent run
                self.run_id: str = earlier.info.run_id
                self.known_params = dict(earlier.data.params)
                self.client.update_run(self.run_id, status="RUNNING")
            else:
                self._end_killed_attempts(experiment, run)
                self.run_id = self.client.create_run(experiment, run_name=run.name, tags=tags).info.run_id
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

    def _earlier_parent(self, experiment: str, run: TrackedRun) -> Any:
        """The parent run an earlier attempt at this experiment (the same directory) opened, if any: the
        experiment was resumed, or run again with every trial kept, and goes on in that run."""
        found = [candidate for candidate in self.client.search_runs([experiment], max_results=1000)
                 if candidate.data.tags.get("run_record") == run.tags.get("run_record")
                 and candidate.data.tags.get("kind") == run.kind
                 and candidate.data.tags.get("mlflow.runName") == run.name]
        return max(found, key=lambda candidate: candidate.info.start_time or 0) if found else None

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

        changed = sorted(name for name, value in params.items() if self.known_params.get(name, value) != value)
        if changed:  # MLflow keeps a parameter's first value: say so rather than fail the run
            self.log_tags({"params_changed_on_resume": ", ".join(changed)})
        items = [Param(name[:250], value) for name, value in params.items() if name not in self.known_params]
        for start in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[start:start + 100])

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(metric_key(name), value, now, step) for name, value in values.items()]
        for start in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[start:start + 1000])

    def log_tags(self, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(metric_key(name), value[:5000])
                                                 for name, value in tags.items()])

    def log_artifact(self, path: Path, name: str) -> None:
        """Copy the file ``path`` into the run's artifacts (at their top, as ``path``'s name)."""
        self.client.log_artifact(self.run_id, str(path))

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, _MLFLOW_STATUS.get(status, "FINISHED"))
