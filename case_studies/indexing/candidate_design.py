"""The candidate task design of indexing (``--actions candidates``): one action head that picks one of the
query's candidate indexes, each described in the state by what it would cost and whom it would serve.

The study's design (``schema.py``, ``--actions positional``) gives the agent k heads, one per key position,
each naming one of the query's attributes or no-op. Its action values name query positions, so one index
is a joint choice of k heads, and its state says nothing about the rest of the workload or about memory.
This design keeps the task (the same system, reward, episode and objective) and changes how the agent sees
and acts on it, as SWIRL (Kossmann et al., 2022) does for index selection: actions are candidate indexes
with invalid-action masking, and the state describes each candidate with features that do not depend on
the query's position in the workload or on which fields the collection has.

Action: ``index``, Discrete(1 + SLOTS): 0 is no-op, value j builds the query's j-th candidate
(``advisor.query_candidates``: each field alone, the full index and its prefixes, equality fields followed
by a range field or the sort keys; at most k keys; in that order, the first SLOTS of them). The mask allows
no-op, every candidate the query has, and none that is already built.

State (a gymnasium Dict of Boxes):

- ``candidates``: SLOTS x FEATURES, one row per candidate slot (zeros for an empty slot):
  present; width / k; its estimated fraction of matched rows for this query (the product of the
  query's predicate selectivities over the keys a B-tree seek can use: equality keys and then one range,
  as -log10 / 6, clipped to [0, 1]); whether it serves the query's sort; its estimated bytes as a share of
  the workload's full index (rows x (the key fields' mean value width in the column sample + an 8-byte row
  pointer): an estimate from the statistics, the same on every engine, so a model trained on one engine sees
  the same state on another); whether an index already built starts with it
  (it adds nothing for this query); whether an index already built starts with its leading field; the share
  of the workload's queries that use its leading field; the share of the workload's queries that have it
  among their own candidates.
- ``workload``: progress through the episode (step / queries); indexes built / queries; the estimated bytes
  already built as a share of the full index's; whether the query is an OR; whether it sorts; the share of
  the workload's queries one of whose fields leads an index already built.

A context without ``workload`` (a caller converting one query) is read as a workload of that query alone.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from case_studies.indexing.advisor import query_candidates
from case_studies.indexing.converter import IndexingConverter, context_workload
from case_studies.indexing.cost_estimate import StatisticsCostModel
from case_studies.indexing.evaluation import full_index_configuration
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.schema import IndexingSchema
from wield.errors import ConfigError

ACTIONS = ("positional", "candidates", "shortlist")  # shortlist: shortlist_design.py
SLOTS = 10
CANDIDATE_FEATURES = ("present", "width", "selectivity", "serves_sort", "bytes_share", "built",
                      "leading_field_built", "leading_field_share", "candidate_share")
WORKLOAD_FEATURES = ("progress", "indexes_built", "bytes_built", "is_or", "sorts", "queries_served")
HEAD = "index"


class SlotTableSchema(IndexingSchema):
    """A design whose state is a table of ``slots`` rows of ``row_features`` (``candidates``) and a
    ``workload`` row, and whose one head ``index`` picks a row or no-op (0): the candidate design's layout, and
    the shortlist design's (``shortlist_design.py``). Subclasses name the design and the features."""

    design = ""
    row_features: tuple[str, ...] = ()
    workload_features: tuple[str, ...] = ()

    def __init__(self, fields: Sequence[str], k: int = 3, slots: int = SLOTS, **kwargs: Any) -> None:
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise ConfigError("slots", slots, reason=f"the number of {self.design} slots must be an integer >= 1")
        self.slots = slots
        super().__init__(fields, k=k, **kwargs)
        self.head_names = (HEAD,)
        self._state_space = gym.spaces.Dict({
            "candidates": gym.spaces.Box(0.0, 1.0, (slots, len(self.row_features)), np.float32),
            "workload": gym.spaces.Box(0.0, 1.0, (len(self.workload_features),), np.float32),
        })
        self._action_space = gym.spaces.Dict({HEAD: gym.spaces.Discrete(1 + slots)})

    @property
    def values_per_head(self) -> int:
        return 1 + self.slots

    def allowed_slots(self, context: Any) -> list[bool]:
        """Per slot from the first, whether it may be picked in ``context`` (slots past the list: no)."""
        raise NotImplementedError

    def action_mask(self, context: Any = None) -> dict[str, np.ndarray]:
        """No-op always; the slots ``allowed_slots`` allows (every value without a context)."""
        mask = np.zeros(1 + self.slots, dtype=bool)
        mask[0] = True
        if context is None:
            mask[:] = True
            return {HEAD: mask}
        allowed = self.allowed_slots(context)[: self.slots]
        mask[1: 1 + len(allowed)] = allowed
        return {HEAD: mask}

    def layout(self) -> dict[str, Any]:
        return {"actions": self.design, "fields": list(self.fields), "k": self.k, "slots": self.slots,
                "candidate_features": list(self.row_features), "workload_features": list(self.workload_features),
                "heads": list(self.head_names)}


class CandidateSchema(SlotTableSchema):
    """Layout of the candidate design: SLOTS candidate rows and one head over them (module docstring)."""

    name = "indexing-candidates"
    design = "candidates"
    row_features = CANDIDATE_FEATURES
    workload_features = WORKLOAD_FEATURES

    def candidates(self, query) -> list[IndexSpec]:
        """The query's candidate indexes in slot order (slot j + 1 builds the j-th)."""
        return query_candidates(query, self.k)[: self.slots]

    def allowed_slots(self, context: Any) -> list[bool]:
        """A slot when the query has a candidate there that is not built yet."""
        built = {spec.canonical() for spec in context["state"]}
        return [spec not in built for spec in self.candidates(context["item"])]


def _log_fraction(fraction: float) -> float:
    return float(min(1.0, max(0.0, -math.log10(max(fraction, 1e-12)) / 6.0)))


ROW_POINTER_BYTES = 8


def value_width(values: np.ndarray) -> float:
    """Mean bytes of a column's sampled values: text by its length (+1), anything else 8."""
    if values.dtype.kind not in "OUS":
        return 8.0
    if not len(values):
        return 1.0
    return float(np.mean([1 + len(str(value)) if value is not None else 1 for value in values]))


class CandidateConverter(IndexingConverter):
    """State, action and demonstration conversions of the candidate design; the reward is the task's own
    (``IndexingConverter``)."""

    schema: CandidateSchema

    def __init__(self, schema: CandidateSchema, statistics=None, **weights: float) -> None:
        super().__init__(schema, statistics, **weights)
        self._widths: dict[str, float] = {}
        # per predicate its selectivity, remembered: the sample is scanned once, not per candidate
        self._estimates = StatisticsCostModel(statistics) if statistics is not None else None
        self._workload: Sequence | None = None
        self._workload_facts: tuple[float, list[set[str]], dict[IndexSpec, int]] = (1.0, [], {})

    def estimated_bytes(self, spec: IndexSpec) -> float:
        """The estimated bytes of an index (module docstring); without statistics, its width."""
        if self.statistics is None:
            return float(len(spec.keys))
        for field in spec.fields:
            if field not in self._widths:
                self._widths[field] = value_width(np.asarray(self.statistics.sample[field]))
        return self.statistics.n_rows * (sum(self._widths[field] for field in spec.fields) + ROW_POINTER_BYTES)

    def forget_workload(self) -> None:
        """Drop what was worked out for the last workload and the model's per-query figures
        (``StatisticsCostModel.forget_queries``): the next workload's state is computed as a new one's is."""
        self._workload = None
        if self._estimates is not None:
            self._estimates.forget_queries()

    def _facts(self, workload: Sequence) -> tuple[float, list[set[str]], dict[IndexSpec, int]]:
        """(full index bytes, each query's fields, in how many queries' candidates each index is) of the
        workload, computed once per workload object (held, so its identity cannot be reused)."""
        if workload is not self._workload:
            full_bytes = float(sum(self.estimated_bytes(spec) for spec in full_index_configuration(workload)))
            counts: dict[IndexSpec, int] = {}
            for query in workload:
                for spec in self.schema.candidates(query):
                    counts[spec] = counts.get(spec, 0) + 1
            self._workload_facts = (max(1e-9, full_bytes), [set(q.attributes()) for q in workload], counts)
            self._workload = workload
        return self._workload_facts

    def _selectivity(self, predicate) -> float:
        """``statistics.predicate_selectivity``, remembered per predicate (``StatisticsCostModel.selectivity``)."""
        assert self._estimates is not None
        return self._estimates.selectivity(predicate)

    def _seek_fraction(self, query, spec: IndexSpec) -> float:
        return 1.0 if self._estimates is None else self._estimates.seek_fraction(query, spec)

    def system_to_agent_state(self, system_state: Sequence[IndexSpec], context: Any = None) -> dict:
        query = context["item"]
        workload = context_workload(context)
        self.check_fields(query)
        full_bytes, query_fields, counts = self._facts(workload)
        built = [spec.canonical() for spec in system_state]
        leading = {spec.keys[0][0] for spec in built}
        n = max(1, len(workload))
        sort_fields = {key.field for key in query.sort}
        rows = np.zeros((self.schema.slots, len(CANDIDATE_FEATURES)), dtype=np.float32)
        for slot, spec in enumerate(self.schema.candidates(query)):
            first = spec.keys[0][0]
            rows[slot] = (
                1.0,
                len(spec.keys) / self.schema.k,
                _log_fraction(self._seek_fraction(query, spec)),
                float(bool(sort_fields) and bool(sort_fields & set(spec.fields))),
                min(1.0, self.estimated_bytes(spec) / full_bytes),
                float(any(index.starts_with(spec) for index in built)),
                float(first in leading),
                sum(first in fields for fields in query_fields) / n,
                counts.get(spec, 0) / n,
            )
        used = sum(self.estimated_bytes(spec) for spec in built)
        workload_row = np.array([
            min(1.0, context.get("step", 0) / n),
            min(1.0, len(built) / n),
            min(1.0, used / full_bytes),
            float(query.logic == "or" and len(query.predicates) > 1),
            float(bool(query.sort)),
            sum(bool(fields & leading) for fields in query_fields) / n,
        ], dtype=np.float32)
        return {"candidates": rows, "workload": workload_row}

    def agent_to_system_action(self, agent_action: dict, context: Any = None) -> IndexSpec | None:
        """Slot 0 -> None (no-op); slot j -> the query's j-th candidate; a slot the query has no candidate
        for (the mask forbids it) is a no-op for a learner that ignores masks."""
        value = int(agent_action[HEAD])
        candidates = self.schema.candidates(context["item"])
        return candidates[value - 1] if 1 <= value <= len(candidates) else None

    def system_to_agent_action(self, system_action: IndexSpec | None, context: Any = None) -> dict:
        """The slot of ``system_action`` among the query's candidates (for demonstrations)."""
        if system_action is None:
            return {HEAD: 0}
        candidates = self.schema.candidates(context["item"])
        wanted = system_action.canonical()
        if wanted not in candidates:
            raise ConfigError("index", str(system_action), [str(spec) for spec in candidates],
                              reason="the candidate design can only build one of the query's candidates")
        return {HEAD: 1 + candidates.index(wanted)}
