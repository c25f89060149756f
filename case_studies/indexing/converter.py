"""The indexing converter: (query, current indexes) <-> agent state; head values <-> compound index.

Reward per step (docs/design.md section 5): r = -(w_m * size + w_t * runtime), where both terms are normalised
per workload so that the weights mean the same thing on every workload and collection size:

- size = bytes of all secondary indexes / bytes of the workload's full-index baseline (the union of every
  query's full compound index). 1.0 means "as much memory as indexing everything".
- runtime = aggregate query cost (mean or p99, in the run's cost metric) / the same aggregate with no
  secondary index. 1.0 means "no faster than no index".

An index pays off when the share of the workload's cost it saves exceeds w_m / w_t times the share of the
full-index memory it takes. The study used equal weights on scales it did not publish; here too the default
is w_m = w_t = 1 (``defaults.py`` says why: at equal weights indiscriminate indexing scores below no index,
so what a policy learned shows in its return; at w_m = 0.5 random play came close to the reward's optimum).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from case_studies.indexing.defaults import RUNTIME_WEIGHT, SIZE_WEIGHT
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.schema import IndexingSchema, attribute_token
from case_studies.indexing.statistics import ColumnStatistics
from wield.converters import Converter
from wield.errors import ConfigError


# What a learner is rewarded with per step: the level above, or its change since the previous decision
# (``wield.tasks.ImprovementReward`` from ``start_level``; the environment reports the level either way).
STEP_REWARDS = ("level", "improvement")


def context_workload(context: Any) -> Sequence[Any]:
    """The workload a step's context holds; a context without one (a caller converting one query) is read as a
    workload of its query alone."""
    given = context.get("workload")
    return given if given else [context["item"]]


class IndexingConverter(Converter[IndexingSchema]):
    """Converts between index configurations / queries and the positional agent representation."""

    def __init__(self, schema: IndexingSchema, statistics: ColumnStatistics | None = None,
                 size_weight: float = SIZE_WEIGHT, runtime_weight: float = RUNTIME_WEIGHT) -> None:
        super().__init__(schema)
        for name, value in (("size_weight", size_weight), ("runtime_weight", runtime_weight)):
            if not np.isfinite(value) or value < 0:
                raise ConfigError(name, value, reason="weights must be finite and >= 0")
        self.statistics = statistics
        self.size_weight = float(size_weight)
        self.runtime_weight = float(runtime_weight)
        self._field_index = {f: i for i, f in enumerate(schema.fields)}

    # -- state -----------------------------------------------------------------------------------
    def query_tokens(self, query, indexes: Sequence[IndexSpec] = ()) -> list[str]:
        """Tokens of a query, with IDX_* marks for attributes that existing indexes cover."""
        directions: dict[str, tuple[int, str]] = {}
        for spec in indexes:
            for position, (field, direction) in enumerate(spec.keys):
                if field not in directions or position < directions[field][0]:
                    directions[field] = (position, direction)

        def attribute(field: str) -> list[str]:
            tokens = [attribute_token(field)]
            if field in directions:
                tokens.append("IDX_ASC" if directions[field][1] == "asc" else "IDX_DESC")
            return tokens

        tokens: list[str] = []
        for predicate in query.predicates:
            tokens += attribute(predicate.field) + [predicate.op]
        if len(query.predicates) > 1:
            tokens.append(query.logic.upper())
        for key in query.sort:
            tokens += ["SORT_ASC" if key.direction == "asc" else "SORT_DESC"] + attribute(key.field)
        if query.aggregate == "count":
            tokens.append("COUNT")
        if query.limit is not None:
            tokens.append("LIMIT")
        return tokens[: self.schema.max_tokens]

    def check_fields(self, query) -> None:
        """Refuse a query on a field the schema does not have, naming it and the allowed fields."""
        for field in query.attributes():
            if field not in self._field_index:
                raise ConfigError("query.field", field, self.schema.fields)

    def forget_workload(self) -> None:
        """Drop what was worked out for the workloads converted so far, so that the next one's state is
        computed as a new workload's is (a decision timed as a new workload's: ``budgeted.policy_search``).
        This design remembers nothing per workload; the designs built on cost estimates do."""

    def system_to_agent_state(self, system_state: Sequence[IndexSpec], context: Any = None) -> dict:
        query = context["item"]
        schema = self.schema
        self.check_fields(query)
        attributes = np.zeros(len(schema.fields), dtype=np.int8)
        for field in query.attributes():
            attributes[self._field_index[field]] = 1
        query_selectivity = np.ones(schema.k, dtype=np.float32)
        if self.statistics is not None:
            addressable = schema.addressable_attributes(query)
            for predicate in query.predicates:
                if predicate.field in addressable:
                    position = addressable.index(predicate.field)
                    query_selectivity[position] = min(query_selectivity[position],
                                                      self.statistics.predicate_selectivity(predicate))
        return {
            "tokens": schema.vocabulary.encode(self.query_tokens(query, system_state), schema.max_tokens),
            "selectivity": schema.column_selectivity.copy(),
            "attributes": attributes,
            "query_selectivity": query_selectivity,
        }

    # -- actions ---------------------------------------------------------------------------------
    def agent_to_system_action(self, agent_action: dict, context: Any = None) -> IndexSpec | None:
        """Head values -> a compound index on the query's attributes; None when every head is no-op.

        A head naming an attribute that an earlier head already placed is skipped (an index cannot repeat
        a field). A value naming an attribute the query does not have is invalid: the action mask forbids
        it, and a learner that ignores masks (any gymnasium library) gets it treated as a no-op.
        """
        attributes = self.schema.addressable_attributes(context["item"])
        keys: list[tuple[str, str]] = []
        for head in self.schema.head_names:
            key = self.schema.decode_key(int(agent_action[head]))
            if key is None or not 0 <= key[0] < len(attributes):
                continue
            field = attributes[key[0]]
            if field not in (f for f, _ in keys):
                keys.append((field, key[1]))
        return IndexSpec(tuple(keys)) if keys else None

    def system_to_agent_action(self, system_action: IndexSpec | None, context: Any = None) -> dict:
        """The head values that build ``system_action`` for the current query (for demonstrations)."""
        action = {head: 0 for head in self.schema.head_names}
        if system_action is None:
            return action
        if len(system_action.keys) > self.schema.k:
            raise ConfigError("index", str(system_action),
                              reason=f"has {len(system_action.keys)} keys; this schema's k is {self.schema.k}")
        attributes = self.schema.addressable_attributes(context["item"])
        for head, (field, direction) in zip(self.schema.head_names, system_action.keys):
            if field not in attributes:
                raise ConfigError("index.field", field, attributes,
                                  reason="an agent can only index the current query's first k attributes")
            action[head] = self.schema.encode_key(attributes.index(field), direction)
        return action

    # -- reward ----------------------------------------------------------------------------------
    def normalised_costs(self, metrics: dict) -> tuple[float, float]:
        """(size share of the full index, runtime share of no index) for measured metrics."""
        size = metrics["index_bytes"] / max(1.0, metrics["full_index_bytes"])
        runtime = metrics["cost"] / max(1e-12, metrics["no_index_cost"])
        return float(size), float(runtime)

    def system_to_agent_reward(self, metrics: dict, context: Any = None) -> float:
        size, runtime = self.normalised_costs(metrics)
        return -(self.size_weight * size + self.runtime_weight * runtime)

    def start_level(self) -> float:
        """The reward of the configuration every episode starts from, no secondary index: -w_t."""
        return self.system_to_agent_reward({"index_bytes": 0, "full_index_bytes": 1, "cost": 1.0,
                                            "no_index_cost": 1.0})
