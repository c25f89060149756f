"""Reader of the Azure Functions 2019 invocation trace, and the serving workload built from it.

The public trace (``invocations_per_function_md.anon.dNN.csv``, one file per day) has one row per function:
``HashOwner, HashApp, HashFunction, Trigger`` and then one column per minute of the day, ``1`` .. ``1440``,
holding that minute's invocation count. Nothing here downloads it: users who have a file pass its path.

``azure_trace_workload`` maps the trace onto model instances as in the Azure experiment of the modelled
system: function ``f`` (in file order) sends its invocations to instance ``f mod (kinds * copies)``; the
chosen minutes are scaled so that the total averages ``total_rate`` requests/s (each scaled count is rounded
up or down at random, seeded, keeping its expectation); every instance replays its per-minute counts as a
``trace-replay`` stream with 60 s periods (uniform times within a minute: Poisson given the count). Instance
``k * copies + c`` runs model kind ``k`` with the ASSUMED execution times of its model family, dealt as in
the Azure-like generator (``families.kind_profiles``; ``profiles="resnet50"`` gives every instance ResNet-50).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from case_studies.scheduling.families import AZURE_COPIES, AZURE_KINDS, AZURE_RATE, AZURE_SLO_MS, kind_profiles
from case_studies.scheduling.workload import Stream, Workload
from wield.errors import ConfigError, DataError
from wield.io import input_file_problem
from wield.seeding import make_rng

AZURE_TRACE = "azure-trace"
ID_COLUMNS = ("HashOwner", "HashApp", "HashFunction", "Trigger")
MINUTE_MS = 60_000.0


@dataclass(frozen=True)
class FunctionTrace:
    """Invocations per minute of every function of one trace file (``counts[f, minute - 1]``)."""

    functions: tuple[str, ...]  # "HashOwner/HashApp/HashFunction"
    triggers: tuple[str, ...]
    counts: np.ndarray  # (functions, minutes) int64
    source: str
    sha256: str

    @property
    def minutes(self) -> int:
        return int(self.counts.shape[1])


def read_azure_trace(path: str | os.PathLike) -> FunctionTrace:
    """Parse one day file of the Azure Functions 2019 trace; clear errors name the file and the problem."""
    path = Path(path)
    problem = input_file_problem(path)
    if problem:
        raise ConfigError("trace", str(path), reason=problem)
    import pandas as pd  # here: the command line's option lists import this module, not pandas

    data = path.read_bytes()
    try:
        frame = pd.read_csv(path, dtype={c: str for c in ID_COLUMNS})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a CSV trace ({exc})") from exc
    missing = [c for c in ID_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column {missing[0]!r}; an Azure Functions trace has columns "
                        f"{', '.join(ID_COLUMNS)}, 1, 2, ..., 1440")
    minute_columns = [c for c in frame.columns if c not in ID_COLUMNS]
    expected = [str(i) for i in range(1, len(minute_columns) + 1)]
    if not minute_columns or minute_columns != expected:
        raise DataError(f"{path}: minute columns must be 1, 2, ..., N in order; found {minute_columns[:5]}...")
    if frame.empty:
        raise DataError(f"{path}: the trace has no function rows")
    values = frame[minute_columns]
    numeric = values.apply(pd.to_numeric, errors="coerce")
    bad = numeric.isna().to_numpy() | (numeric.to_numpy() < 0) | (numeric.to_numpy() % 1 != 0)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise DataError(f"{path}: line {row + 2}, minute {minute_columns[column]}: invocation count "
                        f"{str(values.iat[row, column])!r} is not an integer >= 0")
    names = tuple("/".join(parts) for parts in frame[list(ID_COLUMNS[:3])].astype(str).itertuples(index=False))
    return FunctionTrace(names, tuple(frame["Trigger"].astype(str)), numeric.to_numpy(dtype=np.int64),
                         str(path), hashlib.sha256(data).hexdigest())


def azure_trace_workload(trace: str | os.PathLike | FunctionTrace, start_minute: int = 1, minutes: int = 1,
                         total_rate: float = AZURE_RATE, kinds: int = AZURE_KINDS, copies: int = AZURE_COPIES,
                         slo_ms: float = AZURE_SLO_MS, seed: int = 0, profiles: str = "families",
                         seconds: float | None = None) -> Workload:
    """A workload replaying minutes ``start_minute .. start_minute + minutes - 1`` (1-based) of a real trace;
    ``seconds``: only the first ``seconds`` of them (at most ``minutes * 60``; the requests of a minute fall
    uniformly within it, so the first seconds of a minute hold its share of its count)."""
    if not isinstance(trace, FunctionTrace):
        trace = read_azure_trace(trace)
    for name, value in (("start_minute", start_minute), ("minutes", minutes), ("kinds", kinds), ("copies", copies)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ConfigError(name, value, reason="must be an integer >= 1")
    if start_minute + minutes - 1 > trace.minutes:
        raise ConfigError("minutes", minutes, reason=f"minutes {start_minute}..{start_minute + minutes - 1} "
                          f"are past the trace's {trace.minutes} minutes")
    if not total_rate > 0:
        raise ConfigError("total_rate", total_rate, reason="must be > 0")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not 0 < seconds <= minutes * 60):
        raise ConfigError("seconds", seconds, reason=f"must be a number of seconds in (0, {minutes * 60}] "
                          f"(the {minutes} minute(s) replayed)")
    model_profiles = kind_profiles(kinds, copies, profiles)
    n = kinds * copies
    window = trace.counts[:, start_minute - 1:start_minute - 1 + minutes]
    per_instance = np.zeros((n, minutes))
    np.add.at(per_instance, np.arange(window.shape[0]) % n, window)
    total = per_instance.sum()
    if total == 0:
        raise DataError(f"{trace.source}: no invocation in minutes {start_minute}..{start_minute + minutes - 1}")
    scaled = per_instance * (total_rate * minutes * 60.0 / total)
    rng = make_rng(int(seed), AZURE_TRACE)
    counts = np.floor(scaled).astype(np.int64) + (rng.random(scaled.shape) < scaled % 1.0)
    streams = [Stream(m, "trace-replay", counts=tuple(int(c) for c in counts[m]), period_ms=MINUTE_MS)
               for m in range(n) if counts[m].any()]
    params = {"trace": trace.source, "trace_sha256": trace.sha256, "start_minute": start_minute, "minutes": minutes,
              "total_rate": float(total_rate), "kinds": kinds, "copies": copies, "slo_ms": float(slo_ms),
              "profiles": profiles}
    duration_ms = minutes * MINUTE_MS
    if seconds is not None:  # recorded only when given: whole-minute workloads keep their fingerprints
        params["seconds"] = float(seconds)
        duration_ms = float(seconds) * 1000.0
    return Workload(f"azure-trace-{n}m-{total_rate:g}rps", (float(slo_ms),) * n, streams, duration_ms,
                    int(seed), AZURE_TRACE, params, model_profiles)


def rebuild_azure_trace_workload(params: dict, seed: int) -> Workload:
    """Rebuild from a record: the file must still be at ``params['trace']`` with the recorded SHA-256."""
    values = dict(params)
    trace = read_azure_trace(values.pop("trace"))
    expected = values.pop("trace_sha256")
    if trace.sha256 != expected:
        raise ConfigError("trace", trace.source, reason=f"its SHA-256 {trace.sha256[:12]}... differs from the "
                          f"recorded {expected[:12]}...")
    return azure_trace_workload(trace, seed=seed, **values)
