"""What a tracker is told about the run it tracks (``TrackedRun``), and the names every tracker shares: a
metric or tag name every tracker accepts (``metric_key``), the summary scalars' prefixes, the install hint.
Shared by ``wield.tracking`` (the sessions) and ``wield.tracking_backends`` (TensorBoard, MLflow)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

INSTALL_HINT = "pip install 'wield[tracking]'"
# scalars that are a run's summary: TensorBoard's HParams view shows them beside the hyperparameters
SUMMARY_PREFIXES = ("final/", "verdict/", "classification/")


def metric_key(name: str) -> str:
    """A metric or tag name every tracker accepts (MLflow: letters, digits, ``_ - . / space``)."""
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name)


@dataclass(frozen=True)
class TrackedRun:
    """What a tracker factory is told about the run it tracks (a trial, or an experiment's parent run)."""

    root: Path  # the tracking root (the command's --out)
    name: str  # the run's name below the root, e.g. "dqn/trial-000", "experiment"
    directory: Path  # the trial's run record (an experiment's: its directory)
    case_study: str
    method: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    kind: str = "trial"  # "trial", "experiment" (wield run --class) or "comparison" (wield compare)
    parent: str | None = None  # the parent run's name, for a trial of an experiment
    parent_ids: Mapping[str, str] = field(default_factory=dict)  # tracker name -> the parent's run_id there
