"""The shortlist task design of indexing (``--actions shortlist``): at every step the agent may build any of
the workload's candidate indexes, shown as a shortlist ranked and described by statistics-only cost estimates.

The candidate design (``candidate_design.py``) lets step t build one of query t's own candidates: an episode
decides query by query, so an index that would serve queries 2, 5 and 8 competes at step 2 with what serves
query 2 best. That order alone left a rule that builds each query's best candidate on the same estimates
18.5% below the advisor's reward on development workloads, and a DQN greedy policy given those estimates per
candidate 18.3% below it on new query sets (``--class C4``; docs/design.md section 5.16). The advisor ranks every
candidate of the workload at every step. This design does what SWIRL (Kossmann et al., 2022) does for index
selection: its actions are the workload's candidates, with invalid-action masking, described by what the
cost estimates say they would do. The task is unchanged (the same system, reward, episode of one step per
query and objective); an episode of q steps can build at most q indexes, and a no-op step builds nothing.

Shortlist: the workload's candidates (``advisor.workload_candidates``) not built yet whose estimated bytes keep
the set within the advisor's memory cap, ranked by estimated workload cost saved per estimated byte
(``estimated_advisor.EstimatedWorkload``: ``cost_estimate.StatisticsCostModel`` on the column statistics, no
engine evaluation); the first SLOTS of them. The ranking is the estimated advisor's: an index raises the
estimated reward level exactly when its saving per byte exceeds w_m / w_t x the no-index cost per byte of the
full index, so slot 1 raises it whenever any slot does, and a policy that builds slot 1 while its estimated
gain is positive and then nothing makes the estimated advisor's choice (while the episode has steps left).
The verdict's estimated-advisor rung is the bar a policy on this design has to clear.

Action: ``index``, Discrete(1 + SLOTS): 0 is no-op, value j builds the j-th shortlisted index. The mask
allows no-op and every filled slot.

State (a gymnasium Dict of Boxes):

- ``candidates``: SLOTS x FEATURES, one row per slot (zeros for an empty slot): present; width / k; the
  estimated change of the reward level if it is built (0.5 + the change, clipped to [0, 1]); whether that
  change is positive; the share of the workload's estimated cost (with no index) it saves; its estimated
  bytes as a share of the workload's full index; its saving per byte relative to slot 1's; the share of the
  workload's queries whose estimated cost it lowers; the share of the queries that have it among their own
  candidates; whether an index already built starts with its leading field.
- ``workload``: progress through the episode (step / queries); indexes built / queries; the estimated
  runtime share and bytes share of the set built so far; filled slots / SLOTS.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from case_studies.indexing.advisor import MEMORY_CAP
from case_studies.indexing.candidate_design import HEAD, SLOTS, SlotTableSchema
from case_studies.indexing.converter import IndexingConverter, context_workload
from case_studies.indexing.cost_estimate import StatisticsCostModel
from case_studies.indexing.estimated_advisor import EstimatedOption, EstimatedWorkload
from case_studies.indexing.index_spec import IndexSpec
from wield.errors import ConfigError

SHORTLIST_FEATURES = ("present", "width", "estimated_gain", "improves", "runtime_saved", "bytes_share",
                      "saving_per_byte", "queries_lowered", "candidate_share", "leading_field_built")
SHORTLIST_WORKLOAD_FEATURES = ("progress", "indexes_built", "runtime_share", "bytes_built", "slots_filled")


class Shortlist:
    """The ranked options of a workload and an index set (module docstring), computed once per workload
    object and set (the workload is held, so its identity cannot be reused). It carries the reward's weights
    and aggregate (set by ``ShortlistConverter``), which ``EstimatedWorkload`` reads as a converter's."""

    def __init__(self, model: StatisticsCostModel | None, k: int, slots: int, *, size_weight: float = 1.0,
                 runtime_weight: float = 1.0, aggregate: str = "mean", memory_cap: float = MEMORY_CAP) -> None:
        self.model, self.k, self.slots = model, k, slots
        self.size_weight, self.runtime_weight = size_weight, runtime_weight
        self.aggregate, self.memory_cap = aggregate, memory_cap
        self._workload: Sequence[Any] | None = None
        self._estimated: EstimatedWorkload | None = None
        self._ranked: dict[tuple[IndexSpec, ...], tuple[list[float], float, list[EstimatedOption]]] = {}
        # a ranked set with one of its shortlisted options added: that option's per-query costs and bytes
        # (the figures ``estimated.costs`` and ``estimated.size`` give, bit for bit), so a step that builds
        # a slot does not ask the model for every query again
        self._reached: dict[tuple[IndexSpec, ...], tuple[list[float], float]] = {}
        self._levels: dict[tuple[IndexSpec, ...], tuple[float, float]] = {}  # a ranked set's (share, level)

    def estimated(self, workload: Sequence[Any]) -> EstimatedWorkload:
        """The workload's estimated reference figures (the last workload's, kept)."""
        if self.model is None:
            raise ConfigError("statistics", None, reason="the shortlist design needs the task's column statistics")
        if workload is not self._workload or self._estimated is None:
            self._estimated = EstimatedWorkload(self.model, self, workload, self.k, memory_cap=self.memory_cap,
                                                aggregate=self.aggregate)
            self._workload, self._ranked, self._reached, self._levels = workload, {}, {}, {}
        return self._estimated

    def ranked(self, workload: Sequence[Any], built: Sequence[IndexSpec]
               ) -> tuple[list[float], float, list[EstimatedOption]]:
        """(each query's estimated cost under ``built``, the estimated bytes of ``built``, the first
        ``slots`` options ranked by saving per byte)."""
        estimated = self.estimated(workload)
        key = tuple(spec.canonical() for spec in built)
        if key not in self._ranked:
            reached = self._reached.get(key)
            costs, used = reached if reached is not None else (estimated.costs(key), estimated.size(key))
            options = estimated.options(key, costs, used, best=self.slots)
            self._ranked[key] = (costs, used, options)
            for option in options:
                self._reached[(*key, option.spec)] = (option.costs, used + option.size)
        return self._ranked[key]

    def forget_sets(self) -> None:
        """Drop what was worked out per index set (option tables, figures of sets reached, levels), keeping the
        workload's estimates: the next play of the same workload works its sets out again, as a play of a new
        workload with its estimates already made would (``benchmarks/estimated_advisor.py --play``)."""
        self._ranked, self._reached, self._levels = {}, {}, {}

    def forget_workload(self) -> None:
        """Drop everything worked out for the last workload, its estimates and the model's per-query figures
        too (``StatisticsCostModel.forget_queries``): the next workload is estimated as a new one is."""
        self._workload, self._estimated = None, None
        self.forget_sets()
        if self.model is not None:
            self.model.forget_queries()

    def standing(self, workload: Sequence[Any], built: Sequence[IndexSpec]) -> tuple[float, float]:
        """(the estimated runtime share, the estimated reward level) of ``built`` (``ranked``'s costs and bytes)."""
        costs, used, _ = self.ranked(workload, built)
        key = tuple(spec.canonical() for spec in built)
        if key not in self._levels:
            estimated = self.estimated(workload)
            self._levels[key] = (estimated.runtime_share(costs), estimated.level(used, costs))
        return self._levels[key]


class ShortlistSchema(SlotTableSchema):
    """Layout of the shortlist design: SLOTS ranked workload candidates and one head over them (module
    docstring). Its mask reads the shortlist, so the schema holds it (the converter shares it)."""

    name = "indexing-shortlist"
    design = "shortlist"
    row_features = SHORTLIST_FEATURES
    workload_features = SHORTLIST_WORKLOAD_FEATURES

    def __init__(self, fields: Sequence[str], k: int = 3, slots: int = SLOTS, statistics: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(fields, k=k, slots=slots, **kwargs)
        self.shortlist = Shortlist(StatisticsCostModel(statistics) if statistics is not None else None,
                                   self.k, slots)

    def options(self, context: Any) -> list[EstimatedOption]:
        """The shortlisted options at ``context`` (slot j + 1 builds the j-th)."""
        return self.shortlist.ranked(context_workload(context), context["state"])[2]

    def offered(self, context: Any) -> list[IndexSpec]:
        """The indexes an action can build at ``context``, in slot order (for the labelling rules)."""
        return [option.spec for option in self.options(context)]

    def allowed_slots(self, context: Any) -> list[bool]:
        """Every filled slot."""
        return [True] * len(self.options(context))


class ShortlistConverter(IndexingConverter):
    """State, action and demonstration conversions of the shortlist design; the reward is the task's own
    (``IndexingConverter``). The shortlist is ranked under the converter's reward weights."""

    schema: ShortlistSchema

    def __init__(self, schema: ShortlistSchema, statistics=None, aggregate: str = "mean", **weights: float) -> None:
        super().__init__(schema, statistics, **weights)
        shortlist = schema.shortlist
        shortlist.size_weight, shortlist.runtime_weight = self.size_weight, self.runtime_weight
        shortlist.aggregate = aggregate
        # the workload last converted (held, so its identity cannot be reused), its fields checked, and how
        # many of its queries have each index among their own candidates
        self._candidate_counts: tuple[Sequence[Any] | None, dict[IndexSpec, int]] = (None, {})
        # the workload last converted and its ``candidates`` tables by index set (``_slot_rows``)
        self._rows: tuple[Sequence[Any] | None, dict[tuple[IndexSpec, ...], np.ndarray]] = (None, {})

    def _counts(self, workload: Sequence[Any], estimated: EstimatedWorkload) -> dict[IndexSpec, int]:
        """How many of ``workload``'s queries have each index among their candidates."""
        if self._candidate_counts[0] is not workload:
            counts: dict[IndexSpec, int] = {}
            for found in estimated.query_candidates:
                for spec in found:
                    counts[spec] = counts.get(spec, 0) + 1
            self._candidate_counts = (workload, counts)
        return self._candidate_counts[1]

    def system_to_agent_state(self, system_state: Sequence[IndexSpec], context: Any = None) -> dict:
        workload = context_workload(context)
        if self._candidate_counts[0] is not workload:
            for query in workload:  # before the estimates read a field the schema does not have
                self.check_fields(query)
        shortlist = self.schema.shortlist
        estimated = shortlist.estimated(workload)
        _, used, options = shortlist.ranked(workload, system_state)
        share, _ = shortlist.standing(workload, system_state)
        n = max(1, len(workload))
        workload_row = np.array([
            min(1.0, context.get("step", 0) / n),
            min(1.0, len(system_state) / n),
            min(1.0, share),
            min(1.0, used / estimated.full_bytes),
            len(options) / self.schema.slots,
        ], dtype=np.float32)
        return {"candidates": self._slot_rows(workload, system_state).copy(), "workload": workload_row}

    def forget_sets(self) -> None:
        """Drop the slot tables and the shortlist's per-set figures, keeping the workload's estimates
        (``Shortlist.forget_sets``)."""
        self.schema.shortlist.forget_sets()
        self._rows = (None, {})

    def forget_workload(self) -> None:
        """Drop everything worked out for the last workload (``Shortlist.forget_workload``, the slot tables
        and candidate counts): the next workload's state is computed as a new workload's is."""
        self.schema.shortlist.forget_workload()
        self._rows, self._candidate_counts = (None, {}), (None, {})

    def _slot_rows(self, workload: Sequence[Any], system_state: Sequence[IndexSpec]) -> np.ndarray:
        """The ``candidates`` table of ``system_state`` (module docstring), computed once per workload and set: a
        step that builds nothing sees the table of the step before."""
        key = tuple(spec.canonical() for spec in system_state)
        if self._rows[0] is not workload:
            self._rows = (workload, {})
        if key not in self._rows[1]:
            self._rows[1][key] = self._table(workload, system_state)
        return self._rows[1][key]

    def _table(self, workload: Sequence[Any], system_state: Sequence[IndexSpec]) -> np.ndarray:
        shortlist = self.schema.shortlist
        estimated = shortlist.estimated(workload)
        costs, used, options = shortlist.ranked(workload, system_state)
        share, current = shortlist.standing(workload, system_state)
        counts = self._counts(workload, estimated)
        leading = {spec.keys[0][0] for spec in system_state}
        n = max(1, len(workload))
        top = options[0].per_byte if options and options[0].per_byte > 0 else 1.0
        rows = np.zeros((self.schema.slots, len(SHORTLIST_FEATURES)), dtype=np.float32)
        # per slot, how many queries its index lowers the estimated cost of (by more than 1%)
        lowered_counts = ((np.array([option.costs for option in options]) < np.asarray(costs) * 0.99).sum(axis=1)
                          if options else [])
        for slot, option in enumerate(options):
            gain = option.level - current
            lowered = int(lowered_counts[slot])
            rows[slot] = (
                1.0,
                len(option.spec.keys) / self.schema.k,
                0.5 + max(-0.5, min(0.5, gain)),
                float(gain > 0),
                min(1.0, max(0.0, share - option.runtime_share)),
                min(1.0, option.size / estimated.full_bytes),
                min(1.0, max(0.0, option.per_byte / top)),
                lowered / n,
                min(1.0, counts.get(option.spec, 0) / n),
                float(option.spec.keys[0][0] in leading),
            )
        return rows

    def agent_to_system_action(self, agent_action: dict, context: Any = None) -> IndexSpec | None:
        """Slot 0 -> None (no-op); slot j -> the j-th shortlisted index; an empty slot (the mask forbids it)
        is a no-op for a learner that ignores masks."""
        value = int(agent_action[HEAD])
        options = self.schema.options(context)
        return options[value - 1].spec if 1 <= value <= len(options) else None

    def system_to_agent_action(self, system_action: IndexSpec | None, context: Any = None) -> dict:
        """The slot of ``system_action`` in the shortlist (for demonstrations)."""
        if system_action is None:
            return {HEAD: 0}
        specs = self.schema.offered(context)
        wanted = system_action.canonical()
        if wanted not in specs:
            raise ConfigError("index", str(system_action), [str(spec) for spec in specs],
                              reason="the shortlist design can only build one of the shortlisted indexes")
        return {HEAD: 1 + specs.index(wanted)}
