"""RunRecord: the directory that holds everything about one run, written atomically and incrementally.

Layout (every file replaced atomically, so an interrupted run leaves each file either old or new):

- ``config.json``      the run's configuration (everything needed to rerun it)
- ``versions.json``    Python, platform and library versions, and the git commit when known
- ``seeds.json``       every seed the run used
- ``schema.json``      the schema's layout and fingerprint
- ``schedule*.json``   the serialised workload schedules
- ``episodes.csv``     one row per finished episode (rewritten whole after each episode)
- ``evaluation.json``  the evaluation results
- ``model.pt``         final model weights (``torch.save`` of the agent's ``state_dict``)
- ``*.png``            figures
- ``status.json``      running / complete / failed / interrupted, with a timestamp
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from wield.errors import ConfigError
from wield.io import atomic_write_bytes, atomic_write_json, atomic_write_text, read_json

STATUSES = ("running", "complete", "failed", "interrupted")


def library_versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Versions of Python, the platform, Wield's dependencies and any ``extra`` distributions."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in ("wield", "numpy", "torch", "gymnasium", "pandas", "matplotlib", *extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=5)
        if commit.returncode == 0:
            versions["git_commit"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return versions


class RunRecord:
    """One run's directory. Methods write whole files atomically; nothing is ever appended in place."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = Path(directory)
        self.path.mkdir(parents=True, exist_ok=True)
        self._episodes: list[dict[str, Any]] = []
        if (self.path / "episodes.csv").exists():
            self._episodes = self.read_episodes()

    @classmethod
    def create(cls, directory: str | os.PathLike, field: str = "out") -> "RunRecord":
        """A record for a new run. A directory already holding a run (finished, failed, interrupted or still
        running) is refused rather than mixed with it: single runs are not resumed in place (experiments
        resume by trial), and two runs writing into one directory would interleave their episodes."""
        path = Path(directory)
        if (path / "status.json").exists():
            status = cls(path).status
            raise ConfigError(field, str(path), reason=f"already holds a run (status: {status}); choose another "
                                                       "directory or remove this one")
        return cls(path)

    @classmethod
    def start(cls, directory: str | os.PathLike, *, case_study: str, config: Mapping[str, Any],
              seeds: Mapping[str, Any], versions: Iterable[str] = (), **run: Any) -> "RunRecord":
        """Create the record of a new run (see ``create``) and write what is needed to rerun it:
        ``config.json``, ``seeds.json``, ``run.json`` (case study, command line and ``run``'s entries),
        ``versions.json`` (with the ``versions`` libraries), and the status "running"."""
        record = cls.create(directory)
        record.write_json("config.json", config)
        record.write_json("seeds.json", dict(seeds))
        record.write_json("run.json", {"case_study": case_study, **run, "command": list(sys.argv)})
        record.write_versions(extra=versions)
        record.mark("running")
        return record

    @contextlib.contextmanager
    def outcome_on_error(self) -> Iterator[None]:
        """Mark the run "interrupted" (Ctrl-C) or "failed" (with the error) if the body raises; what was
        recorded so far stays."""
        try:
            yield
        except KeyboardInterrupt:
            self.mark("interrupted")
            raise
        except BaseException as exc:
            self.mark("failed", error=f"{type(exc).__name__}: {exc}")
            raise

    def file(self, name: str) -> Path:
        return self.path / name

    def write_json(self, name: str, obj: Any) -> None:
        atomic_write_json(self.file(name), obj)

    def read_json(self, name: str) -> Any:
        return read_json(self.file(name))

    def exists(self, name: str) -> bool:
        return self.file(name).exists()

    def write_text(self, name: str, text: str) -> None:
        atomic_write_text(self.file(name), text)

    def write_versions(self, extra: Iterable[str] = (), **more: str) -> None:
        self.write_json("versions.json", {**library_versions(extra), **more})

    def mark(self, status: str, **details: Any) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        self.write_json("status.json", {"status": status, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                        **details})

    @property
    def status(self) -> str | None:
        return self.read_json("status.json")["status"] if self.exists("status.json") else None

    # -- per-episode metrics ---------------------------------------------------------------------
    def append_episode(self, row: Mapping[str, Any]) -> None:
        """Add one episode's row and atomically rewrite ``episodes.csv``."""
        self.append_episodes([row])

    def append_episodes(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add several rows and atomically rewrite ``episodes.csv`` once."""
        self._episodes.extend(dict(row) for row in rows)
        columns = list(dict.fromkeys(key for r in self._episodes for key in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self._episodes)
        atomic_write_text(self.file("episodes.csv"), buffer.getvalue())

    def read_episodes(self) -> list[dict[str, Any]]:
        import pandas as pd

        return pd.read_csv(self.file("episodes.csv")).to_dict("records")

    @property
    def episodes(self) -> list[dict[str, Any]]:
        return list(self._episodes)

    # -- artefacts -------------------------------------------------------------------------------
    def save_model(self, state: Mapping[str, Any], name: str = "model.pt") -> None:
        import torch

        buffer = io.BytesIO()
        torch.save(dict(state), buffer)
        atomic_write_bytes(self.file(name), buffer.getvalue())

    def load_model(self, name: str = "model.pt") -> dict[str, Any]:
        import torch

        return torch.load(self.file(name), weights_only=False)

    def save_figure(self, figure, name: str) -> Path:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
        atomic_write_bytes(self.file(name), buffer.getvalue())
        return self.file(name)
