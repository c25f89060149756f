"""Request workloads of the serving simulator: per-model request streams, seeded and serialisable.

A ``Workload`` is a number of models, each with a latency SLO (ms), and a list of ``Stream`` s; each stream
sends requests to one model, and streams combine freely (a model may have several). Stream kinds:

- ``closed-loop``: ``concurrency`` requests are sent at ``start_ms``; whenever one of them is answered
  (completed, on time or late, or timed out) the client sends the next one at that moment, until ``end_ms``.
- ``fixed-rate``: one request every ``1000 / rate`` ms from ``start_ms`` (the first at ``start_ms``).
- ``poisson``: an open-loop Poisson process of ``rate`` requests per second.
- ``trace-replay``: ``counts[i]`` requests in the i-th period of ``period_ms`` (Poisson within a period:
  the count is fixed and the times are uniform, which is a Poisson process conditioned on its count).

Times are milliseconds from 0; arrivals fall in ``[start_ms, end_ms)`` where ``end_ms`` defaults to the
workload's ``duration_ms``. Stream ``i`` draws from ``make_rng(seed, "stream", i)``, so the same workload and
seed give the same arrivals on every machine. The JSON form is canonical (sorted keys), so ``fingerprint()``
identifies a workload; named generators (``families``) also record their ``generator`` and ``params``.

Execution times: a workload may name one model family per model (``model_profiles``: names of the ASSUMED
curves in ``profiles/families.json``, see ``profile``); the simulator then uses them unless it is given a
profile. A workload without them (the default; its JSON has no ``model_profiles`` key) runs every model with
the simulator's default ResNet-50 profile. ``timing`` names another shipped ResNet-50 profile (``wield run
scheduling --profile``, e.g. ``clockwork-resnet50``): every ResNet-50 instance runs with it, and the model
families are re-scaled from its least-squares line (``profile.workload_curves``). Both keys are absent from
the JSON when unset, so older workloads keep their JSON and fingerprint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from case_studies.scheduling.profile import DEFAULT_PROFILE, BatchProfile, family_names, profile_names, workload_curves
from wield.errors import ConfigError, DataError
from wield.io import atomic_write_text, to_jsonable
from wield.seeding import make_rng

STREAM_KINDS = ("closed-loop", "fixed-rate", "poisson", "trace-replay")
_STREAM_FIELDS = ("model", "kind", "rate", "concurrency", "counts", "period_ms", "start_ms", "end_ms")


class Arrivals(NamedTuple):
    """Open-loop arrivals and the first request of every closed-loop client, sorted by time."""

    times_ms: np.ndarray  # float64
    models: np.ndarray  # int64
    closed: np.ndarray  # bool: sent by a closed-loop client (it sends the next one when this is answered)


@dataclass(frozen=True)
class Stream:
    """Requests to one model; see the module docstring for the meaning of each kind's fields."""

    model: int
    kind: str
    rate: float = 0.0
    concurrency: int = 0
    counts: tuple[int, ...] = ()
    period_ms: float = 1000.0
    start_ms: float = 0.0
    end_ms: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in STREAM_KINDS:
            raise ConfigError("stream.kind", self.kind, STREAM_KINDS)
        if isinstance(self.model, bool) or not isinstance(self.model, (int, np.integer)) or self.model < 0:
            raise ConfigError("stream.model", self.model, reason="must be a model index >= 0")
        if not (math.isfinite(self.start_ms) and self.start_ms >= 0):
            raise ConfigError("stream.start_ms", self.start_ms, reason="must be a finite number >= 0")
        if self.end_ms is not None and not (self.end_ms > self.start_ms):
            raise ConfigError("stream.end_ms", self.end_ms, reason=f"must be after start_ms {self.start_ms}")
        if self.kind in ("fixed-rate", "poisson") and not (math.isfinite(self.rate) and self.rate > 0):
            raise ConfigError("stream.rate", self.rate, reason=f"a {self.kind} stream needs requests/second > 0")
        if self.kind == "closed-loop" and (isinstance(self.concurrency, bool) or not isinstance(
                self.concurrency, (int, np.integer)) or self.concurrency < 1):
            raise ConfigError("stream.concurrency", self.concurrency,
                              reason="a closed-loop stream needs an integer >= 1")
        if self.kind == "trace-replay":
            if not (math.isfinite(self.period_ms) and self.period_ms > 0):
                raise ConfigError("stream.period_ms", self.period_ms, reason="must be > 0")
            if not self.counts or any(isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0
                                      for c in self.counts):
                raise ConfigError("stream.counts", list(self.counts)[:8],
                                  reason="a trace-replay stream needs a non-empty list of integer counts >= 0")

    def to_dict(self) -> dict[str, Any]:
        """The fields that differ from their defaults (the kind's own fields always)."""
        defaults = Stream(0, "poisson", rate=1.0)
        out: dict[str, Any] = {"model": int(self.model), "kind": self.kind}
        for name in _STREAM_FIELDS[2:]:
            value = getattr(self, name)
            if value != getattr(defaults, name) or (name == "rate" and self.kind in ("fixed-rate", "poisson")):
                out[name] = list(value) if name == "counts" else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Stream":
        if not isinstance(data, dict) or "model" not in data or "kind" not in data:
            raise DataError(f"stream: expected an object with 'model' and 'kind', found {data!r:.80}")
        unknown = set(data) - set(_STREAM_FIELDS)
        if unknown:
            raise ConfigError("stream field", sorted(unknown)[0], _STREAM_FIELDS)
        values = dict(data)
        if "counts" in values:
            values["counts"] = tuple(values["counts"])
        return cls(**values)

    def arrival_times(self, duration_ms: float, rng: np.random.Generator) -> np.ndarray:
        """Sorted arrival times (ms) of this stream; a closed-loop stream's first ``concurrency`` requests."""
        start = float(self.start_ms)
        end = min(float(self.end_ms), duration_ms) if self.end_ms is not None else duration_ms
        if end <= start:
            return np.empty(0)
        if self.kind == "closed-loop":
            return np.full(int(self.concurrency), start)
        if self.kind == "fixed-rate":
            return start + np.arange(math.ceil((end - start) * self.rate / 1000.0)) * (1000.0 / self.rate)
        if self.kind == "poisson":
            count = rng.poisson(self.rate * (end - start) / 1000.0)
            return np.sort(rng.uniform(start, end, count))
        counts = np.asarray(self.counts, dtype=np.int64)
        period = np.repeat(np.arange(len(counts)), counts)
        times = start + (period + rng.random(period.size)) * self.period_ms
        return np.sort(times[times < end])


@dataclass
class Workload:
    """``slo_ms[m]``: model m's latency SLO; requests of m must complete by arrival + ``slo_ms[m]``.
    ``model_profiles[m]``: the model family whose execution times model m has (empty: none named); ``timing``:
    the ResNet-50 profile the models' times derive from (empty: the default, ``profile.DEFAULT_PROFILE``)."""

    name: str
    slo_ms: tuple[float, ...]
    streams: list[Stream]
    duration_ms: float
    seed: int = 0
    generator: str = "explicit"
    params: dict[str, Any] = field(default_factory=dict)
    model_profiles: tuple[str, ...] = ()
    timing: str = ""

    def __post_init__(self) -> None:
        self.timing = "" if self.timing in ("", DEFAULT_PROFILE) else str(self.timing)
        if self.timing and self.timing not in profile_names():
            raise ConfigError("profile", self.timing, profile_names())
        self.slo_ms = tuple(float(v) for v in self.slo_ms)
        if not self.slo_ms:
            raise ConfigError("slo_ms", [], reason="a workload needs at least one model")
        if isinstance(self.model_profiles, str):
            raise ConfigError("model_profiles", self.model_profiles, reason="must be a list of names, one per model")
        self.model_profiles = tuple(self.model_profiles)
        if self.model_profiles:
            if len(self.model_profiles) != len(self.slo_ms):
                raise ConfigError("model_profiles", f"{len(self.model_profiles)} names",
                                  reason=f"need one per model ({len(self.slo_ms)}) or none")
            known = family_names()
            unknown = sorted(set(self.model_profiles) - set(known), key=str)
            if unknown:
                raise ConfigError("model_profiles", unknown[0], known)
        bad = [v for v in self.slo_ms if not (math.isfinite(v) and v > 0)]
        if bad:
            raise ConfigError("slo_ms", bad[0], reason="every SLO must be a positive number of milliseconds")
        if not (math.isfinite(self.duration_ms) and self.duration_ms > 0):
            raise ConfigError("duration_ms", self.duration_ms, reason="must be a positive number of milliseconds")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ConfigError("seed", self.seed, reason="must be an integer")
        closed = set()
        for stream in self.streams:
            if stream.model >= self.n_models:
                raise ConfigError("stream.model", stream.model,
                                  reason=f"the workload has models 0..{self.n_models - 1}")
            if stream.kind == "closed-loop":
                if stream.model in closed:
                    raise ConfigError("stream.model", stream.model,
                                      reason="at most one closed-loop stream per model (add the concurrencies)")
                closed.add(stream.model)

    @property
    def n_models(self) -> int:
        return len(self.slo_ms)

    def with_timing(self, timing: str) -> "Workload":
        """This workload timed by ResNet-50 profile ``timing`` ("" or the default profile: the default curve):
        itself when it already is, else a copy."""
        timing = "" if timing in ("", DEFAULT_PROFILE) else timing
        return self if timing == self.timing else dataclasses.replace(self, timing=timing)

    def execution_profiles(self) -> list[BatchProfile] | None:
        """The batch curve of every model (from ``model_profiles`` and ``timing``), or None if the workload names
        neither (the simulator's default ResNet-50 profile then)."""
        return workload_curves(self.model_profiles, self.timing, self.n_models)

    def arrivals(self) -> Arrivals:
        """Every stream's arrivals merged by time (ties keep stream order); deterministic for the seed."""
        times, models, closed = [], [], []
        for index, stream in enumerate(self.streams):
            t = stream.arrival_times(self.duration_ms, make_rng(int(self.seed), "stream", index))
            times.append(t)
            models.append(np.full(t.size, stream.model, dtype=np.int64))
            closed.append(np.full(t.size, stream.kind == "closed-loop"))
        if not times:
            return Arrivals(np.empty(0), np.empty(0, np.int64), np.empty(0, bool))
        t = np.concatenate(times)
        order = np.argsort(t, kind="stable")
        return Arrivals(t[order], np.concatenate(models)[order], np.concatenate(closed)[order])

    def closed_loop_end_ms(self) -> np.ndarray:
        """Per model: when its closed-loop client stops sending (-inf: the model has no closed-loop stream)."""
        end = np.full(self.n_models, -np.inf)
        for stream in self.streams:
            if stream.kind == "closed-loop":
                end[stream.model] = self.duration_ms if stream.end_ms is None else min(stream.end_ms, self.duration_ms)
        return end

    def offered_rate(self) -> float:
        """Open-loop requests per second offered on average over the duration (closed-loop streams excluded)."""
        total = 0.0
        for stream in self.streams:
            if stream.kind in ("fixed-rate", "poisson"):
                end = self.duration_ms if stream.end_ms is None else min(stream.end_ms, self.duration_ms)
                total += stream.rate * max(0.0, end - stream.start_ms) / 1000.0
            elif stream.kind == "trace-replay":  # each period's count, in the share of it before the end
                end = self.duration_ms if stream.end_ms is None else min(stream.end_ms, self.duration_ms)
                starts = stream.start_ms + np.arange(len(stream.counts)) * stream.period_ms
                inside = np.clip(np.minimum(starts + stream.period_ms, end) - starts, 0.0, stream.period_ms)
                total += float(np.asarray(stream.counts, dtype=float) @ (inside / stream.period_ms))
        return total * 1000.0 / self.duration_ms

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "slo_ms": list(self.slo_ms), "streams": [s.to_dict() for s in self.streams],
               "duration_ms": self.duration_ms, "seed": int(self.seed), "generator": self.generator,
               "params": self.params}
        if self.model_profiles:  # absent otherwise: workloads without families keep their JSON and fingerprint
            out["model_profiles"] = list(self.model_profiles)
        if self.timing:  # likewise
            out["timing"] = self.timing
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "workload") -> "Workload":
        keys = ("name", "slo_ms", "streams", "duration_ms", "seed", "generator", "params", "model_profiles", "timing")
        if not isinstance(data, dict) or not {"slo_ms", "streams", "duration_ms"} <= set(data):
            found = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise DataError(f"{source}: expected an object with keys {list(keys)}, found {found}")
        unknown = set(data) - set(keys)
        if unknown:
            raise DataError(f"{source}: unknown key {sorted(unknown)[0]!r}; allowed: {list(keys)}")
        if not isinstance(data["streams"], list):
            raise DataError(f"{source}: 'streams' must be a list")
        return cls(data.get("name", "workload"), tuple(data["slo_ms"]),
                   [Stream.from_dict(s) for s in data["streams"]], float(data["duration_ms"]),
                   data.get("seed", 0), data.get("generator", "explicit"), dict(data.get("params", {})),
                   tuple(data.get("model_profiles", ())), str(data.get("timing", "")))

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self.to_dict()), sort_keys=True, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "workload") -> "Workload":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{source}: line {exc.lineno}: invalid JSON ({exc.msg})") from exc
        return cls.from_dict(data, source)

    def save(self, path: str | os.PathLike) -> None:
        """Write the canonical JSON atomically."""
        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Workload":
        return cls.from_json(Path(path).read_text(encoding="utf-8"), source=str(path))

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()
