"""Demonstration datasets: labelled transitions in the agent's view, saved in an inspectable directory.

A ``Demonstration`` is one transition (observation, action, reward, next observation, masks) plus its
expert margins per action head, the trajectory and step it belongs to, the rule (or source) that labelled
it and readable descriptions of the workload item and the system action.

On-disk format (a directory, written atomically file by file; ``FORMAT_VERSION`` 1):

- ``manifest.json``: ``format`` ("wield-demonstrations"), ``version``, ``schema`` (``name``,
  ``fingerprint``, ``layout``) the observations and actions were made for, ``count``, ``trajectories``,
  ``rules`` (steps per rule), ``observation_keys`` (null for a plain array observation), ``action_heads``,
  ``content_sha256`` (hash of every array's name, dtype, shape and bytes: the dataset's identity) and free
  ``metadata`` (how it was made: seeds, files, rules, reward source).
- ``arrays.npz``: ``observation.<key>`` and ``next_observation.<key>`` (one row per step; ``observation``
  / ``next_observation`` for a plain array), ``action.<head>`` (int64), ``mask.<head>`` /
  ``next_mask.<head>`` (bool, True = allowed), ``margin.<head>`` (float32, NaN = no expert loss on that
  head), ``reward`` (float32), ``terminated`` (bool: a true end; a step where a limit cut the episode is
  stored as not terminated, which is all one-step TD targets need: they bootstrap from it), ``trajectory``
  and ``step`` (int64).
- ``steps.jsonl``: one JSON object per step for people and tools: ``trajectory``, ``step``, ``rule``,
  ``item`` (e.g. the query), ``system_action`` (e.g. the index), ``action``, ``margins``, ``reward``.

Loading for a schema whose fingerprint differs is a ConfigError that names both fingerprints: the agent
would read the arrays with the wrong layout. A file whose arrays no longer match ``content_sha256`` is a
DataError.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from wield.agents.base import Transition
from wield.agents.heads import ActionHeads
from wield.errors import ConfigError, DataError
from wield.io import atomic_write_bytes, atomic_write_json, atomic_write_text, read_bytes, read_json, to_jsonable
from wield.schemas.base import Schema

FORMAT = "wield-demonstrations"
FORMAT_VERSION = 1
MANIFEST, ARRAYS, STEPS = "manifest.json", "arrays.npz", "steps.jsonl"


@dataclass
class Demonstration:
    """One labelled step. ``margins`` maps head names to signed margins; heads left out get no expert loss."""

    transition: Transition
    margins: dict[str, float]
    trajectory: int
    step: int
    rule: str
    item: Any = None
    system_action: Any = None


def describe(value: Any) -> Any:
    """A JSON-safe description of a system object: its ``to_dict()`` / ``to_list()``, else ``str``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    for method in ("to_dict", "to_list"):
        if callable(getattr(value, method, None)):
            return to_jsonable(getattr(value, method)())
    converted = to_jsonable(value)
    try:
        json.dumps(converted)
        return converted
    except TypeError:
        return str(value)


@dataclass
class DemonstrationDataset:
    """Demonstrations for one schema layout (by fingerprint), with how they were made in ``metadata``."""

    schema_name: str
    fingerprint: str
    layout: dict[str, Any]
    heads: list[str]
    demonstrations: list[Demonstration] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str | None = None

    @classmethod
    def for_schema(cls, schema: Schema, demonstrations: Iterable[Demonstration] = (),
                   metadata: Mapping[str, Any] | None = None) -> "DemonstrationDataset":
        heads = ActionHeads.from_space(schema.action_space).names
        return cls(schema.name, schema.fingerprint(), to_jsonable(dict(schema.layout())), heads,
                   list(demonstrations), dict(metadata or {}))

    def __len__(self) -> int:
        return len(self.demonstrations)

    def __iter__(self) -> Iterator[Demonstration]:
        return iter(self.demonstrations)

    @property
    def n_trajectories(self) -> int:
        return len({d.trajectory for d in self.demonstrations})

    def rule_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.demonstrations:
            counts[d.rule] = counts.get(d.rule, 0) + 1
        return counts

    def extend(self, other: "DemonstrationDataset") -> None:
        """Append ``other``'s demonstrations (same layout), renumbering its trajectories after ours."""
        if other.fingerprint != self.fingerprint:
            raise ConfigError("demonstrations", other.fingerprint, [self.fingerprint],
                              "datasets for different schema layouts cannot be combined")
        offset = max((d.trajectory for d in self.demonstrations), default=-1) + 1
        for d in other.demonstrations:
            self.demonstrations.append(Demonstration(d.transition, dict(d.margins), d.trajectory + offset,
                                                     d.step, d.rule, d.item, d.system_action))

    def check_schema(self, schema: Schema, source: str | None = None) -> None:
        """ConfigError unless the dataset was made for ``schema``'s layout."""
        expected = schema.fingerprint()
        if self.fingerprint != expected:
            where = source or self.path or "demonstration dataset"
            raise ConfigError("demonstrations", where, [expected],
                              f"made for schema fingerprint {self.fingerprint} ({self.schema_name}, layout "
                              f"{_layout_summary(self.layout)}); this run's schema has fingerprint {expected} "
                              f"(layout {_layout_summary(dict(schema.layout()))}); rebuild the demonstrations "
                              "for this deployment")

    # ------------------------------------------------------------------------------------------ arrays
    def _arrays(self) -> tuple[dict[str, np.ndarray], list[str] | None]:
        if not self.demonstrations:
            raise ConfigError("demonstrations", 0, reason="a dataset needs at least one demonstration")
        first = self.demonstrations[0].transition.observation
        keys = sorted(first) if isinstance(first, Mapping) else None
        single = self.heads == ["action"]
        heads = ActionHeads({h: 0 for h in self.heads}, {h: 0 for h in self.heads}, single)
        arrays: dict[str, np.ndarray] = {}
        for prefix, attr in (("observation", "observation"), ("next_observation", "next_observation")):
            values = [getattr(d.transition, attr) for d in self.demonstrations]
            if keys is None:
                arrays[prefix] = np.stack([np.asarray(v) for v in values])
            else:
                for key in keys:
                    arrays[f"{prefix}.{key}"] = np.stack([np.asarray(v[key]) for v in values])
        actions = [heads.split_action(d.transition.action) for d in self.demonstrations]
        for head in self.heads:
            arrays[f"action.{head}"] = np.array([a[head] for a in actions], dtype=np.int64)
            arrays[f"margin.{head}"] = np.array([d.margins.get(head, math.nan) for d in self.demonstrations],
                                                dtype=np.float32)
        for prefix, attr in (("mask", "mask"), ("next_mask", "next_mask")):
            for head in self.heads:
                rows = [_head_mask(getattr(d.transition, attr), head, single) for d in self.demonstrations]
                width = max((len(r) for r in rows if r is not None), default=0)
                arrays[f"{prefix}.{head}"] = np.array([r if r is not None else np.ones(width, bool) for r in rows],
                                                      dtype=bool)
        arrays["reward"] = np.array([d.transition.reward for d in self.demonstrations], dtype=np.float32)
        arrays["terminated"] = np.array([d.transition.terminated for d in self.demonstrations], dtype=bool)
        arrays["trajectory"] = np.array([d.trajectory for d in self.demonstrations], dtype=np.int64)
        arrays["step"] = np.array([d.step for d in self.demonstrations], dtype=np.int64)
        return arrays, keys

    def content_hash(self) -> str:
        return content_sha256(self._arrays()[0])

    def identity(self) -> dict[str, Any]:
        """What a run record stores so the dataset it used can be recognised: path, hash, rules, size."""
        return {"path": self.path, "sha256": self.content_hash(), "count": len(self),
                "trajectories": self.n_trajectories, "rules": self.rule_counts(),
                "schema_fingerprint": self.fingerprint}

    # ------------------------------------------------------------------------------------- save / load
    def save(self, path: str | Path) -> dict[str, Any]:
        """Write the dataset directory at ``path``; returns the manifest."""
        directory = Path(path)
        if directory.exists() and not directory.is_dir():
            raise ConfigError("out", str(path), reason="exists and is not a directory")
        arrays, keys = self._arrays()
        buffer = io.BytesIO()
        np.savez_compressed(buffer, allow_pickle=False, **arrays)
        steps = "".join(json.dumps(to_jsonable({
            "trajectory": d.trajectory, "step": d.step, "rule": d.rule, "item": d.item,
            "system_action": d.system_action, "action": d.transition.action,
            "margins": d.margins, "reward": d.transition.reward}), sort_keys=True) + "\n"
            for d in self.demonstrations)
        manifest = {
            "format": FORMAT, "version": FORMAT_VERSION,
            "schema": {"name": self.schema_name, "fingerprint": self.fingerprint, "layout": self.layout},
            "count": len(self), "trajectories": self.n_trajectories, "rules": self.rule_counts(),
            "observation_keys": keys, "action_heads": self.heads, "content_sha256": content_sha256(arrays),
            "files": {"arrays": ARRAYS, "steps": STEPS}, "metadata": self.metadata,
        }
        atomic_write_bytes(directory / ARRAYS, buffer.getvalue())
        atomic_write_text(directory / STEPS, steps)
        atomic_write_json(directory / MANIFEST, manifest)  # last: a directory with a manifest is complete
        self.path = str(directory)
        return manifest

    @classmethod
    def load(cls, path: str | Path, schema: Schema | None = None) -> "DemonstrationDataset":
        """Read a dataset directory; with ``schema``, refuse one made for another layout."""
        directory = Path(path)
        if not (directory / MANIFEST).is_file():
            raise ConfigError("demonstrations", str(path),
                              reason=f"not a demonstration dataset (no {MANIFEST}); make one with "
                                     "'wield demonstrate CASE_STUDY --out DIR'")
        try:
            manifest = read_json(directory / MANIFEST)
        except (OSError, ValueError) as exc:
            raise DataError(f"{directory / MANIFEST}: unreadable manifest ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise DataError(f"{directory / MANIFEST}: not a {FORMAT} manifest")
        if manifest.get("version") != FORMAT_VERSION:
            raise DataError(f"{directory / MANIFEST}: format version {manifest.get('version')!r}; "
                            f"this Wield reads version {FORMAT_VERSION}")
        required = {"schema": dict, "action_heads": list, "content_sha256": str, "count": int,
                    "observation_keys": list}
        for key, kind in required.items():
            if not isinstance(manifest.get(key), kind):
                raise DataError(f"{directory / MANIFEST}: the key {key!r} is missing or not a {kind.__name__}")
        schema_info = manifest["schema"]
        if not {"name", "fingerprint", "layout"} <= set(schema_info):
            raise DataError(f"{directory / MANIFEST}: 'schema' needs name, fingerprint and layout")
        dataset = cls(schema_info["name"], schema_info["fingerprint"], schema_info["layout"],
                      list(manifest["action_heads"]), [], dict(manifest.get("metadata") or {}), str(directory))
        if schema is not None:  # before reading arrays: a layout mismatch is the more useful message
            dataset.check_schema(schema, str(directory))
        try:
            # regular files only (a FIFO would hang the reader, /dev/zero fill the memory), arrays never pickled
            with np.load(io.BytesIO(read_bytes(directory / ARRAYS)), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            steps = read_bytes(directory / STEPS).decode("utf-8")
            rows = [json.loads(line) for line in steps.splitlines() if line]
        except (OSError, ValueError) as exc:
            raise DataError(f"{directory}: unreadable demonstration arrays or steps ({exc})") from exc
        if content_sha256(arrays) != manifest["content_sha256"]:
            raise DataError(f"{directory / ARRAYS}: contents do not match the manifest's content_sha256 "
                            "(the file was changed or truncated)")
        if len(rows) != manifest["count"]:
            raise DataError(f"{directory / STEPS}: {len(rows)} rows, the manifest says {manifest['count']}")
        dataset.demonstrations = _demonstrations_from_arrays(arrays, rows, manifest["observation_keys"],
                                                             dataset.heads)
        return dataset


def content_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order (independent of zip metadata)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _head_mask(mask: Any, head: str, single: bool) -> np.ndarray | None:
    if mask is None:
        return None
    value = mask if single else mask.get(head) if isinstance(mask, Mapping) else None
    return None if value is None else np.asarray(value, dtype=bool)


def _layout_summary(layout: Mapping[str, Any]) -> str:
    parts = []
    for key, value in layout.items():
        if isinstance(value, (list, tuple)) and len(value) > 6:
            parts.append(f"{key}: {len(value)} entries")
        else:
            parts.append(f"{key}: {value}")
    return "{" + "; ".join(parts) + "}"


def _demonstrations_from_arrays(arrays: Mapping[str, np.ndarray], rows: Sequence[Mapping[str, Any]],
                                keys: list[str] | None, heads: list[str]) -> list[Demonstration]:
    single = heads == ["action"]

    def observation(prefix: str, i: int) -> Any:
        if keys is None:
            return arrays[prefix][i].copy()
        return {key: arrays[f"{prefix}.{key}"][i].copy() for key in keys}

    def per_head(prefix: str, i: int, kind: type) -> Any:
        values = {h: kind(arrays[f"{prefix}.{h}"][i]) if kind is int else arrays[f"{prefix}.{h}"][i].copy()
                  for h in heads}
        return values["action"] if single else values

    demonstrations = []
    for i, row in enumerate(rows):
        margins = {h: float(arrays[f"margin.{h}"][i]) for h in heads if not math.isnan(arrays[f"margin.{h}"][i])}
        transition = Transition(observation("observation", i), per_head("action", i, int),
                                float(arrays["reward"][i]), observation("next_observation", i),
                                bool(arrays["terminated"][i]), mask=per_head("mask", i, np.ndarray),
                                next_mask=per_head("next_mask", i, np.ndarray))
        demonstrations.append(Demonstration(transition, margins, int(arrays["trajectory"][i]),
                                            int(arrays["step"][i]), str(row.get("rule", "")), row.get("item"),
                                            row.get("system_action")))
    return demonstrations
