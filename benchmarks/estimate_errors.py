"""Which of the cost model's errors cost the estimated advisor its reward (issue 42, docs/design.md 5.25).

The advisor (``advisor.advise``) and the estimated advisor run the same greedy rule (an index's saving per byte,
while the reward improves, under the memory cap); they differ in where a set's per-query costs and index bytes
come from: the engine, or the statistics-only cost model (``cost_estimate.StatisticsCostModel``). This runs the
advisor's own rule on hybrid figures (``HybridSystem``: the engine's costs for one kind of query and the model's
for the rest, bytes from either) on new workloads of a named seed stream, scores every set it chooses on the
engine with the task's reward, and prints per variant the mean reward behind the unrestricted advisor, with its
standard error and the workloads worse and better:

- ``model``: the model's costs and bytes everywhere (the estimated advisor's choice; the line says on how many
  workloads its set is the estimated advisor's own) and ``engine``: the engine's everywhere (the advisor's);
- ``engine bytes`` / ``engine costs``: one of the two from the engine, the other from the model;
- ``model on K only``: the model's costs for the queries of kind K, the engine's for the rest (what K's errors
  alone cost), for K in ``or`` (an ``or`` of several predicates), ``count``, ``sorted`` (an order no equality
  fixes), ``limited`` (a limit without a sort) and ``plain`` (the rest), in that order of precedence.

The workloads are ``--workloads`` 10-query workloads of the training templates drawn with ``derive_seed(
--stream-seed, --stream, i)``, as ``benchmarks/estimated_advisor.py`` draws them; the engine's measurements go
to a fresh temporary cache. Use it to choose which model error to fix, and to check a fix on streams it was not
shaped on.

    python benchmarks/estimate_errors.py --collection flights --stream decision --workloads 20
    python benchmarks/estimate_errors.py --collection generated --stream eval --workloads 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimated_advisor import (add_collection_options, add_stream_options, collection_named,  # noqa: E402
                               parsed_options)

from case_studies.indexing.advisor import advise  # noqa: E402
from case_studies.indexing.budgeted import workload_evaluator  # noqa: E402
from case_studies.indexing.build import build_indexing_task, held_out_templates  # noqa: E402
from case_studies.indexing.cost_estimate import StatisticsCostModel  # noqa: E402
from case_studies.indexing.estimated_advisor import estimated_advice  # noqa: E402
from case_studies.indexing.evaluation import full_index_configuration  # noqa: E402
from case_studies.indexing.index_spec import IndexSpec  # noqa: E402
from case_studies.indexing.system import aggregate_costs  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402
from workloads import QueryWorkloadConfig, make_query_schedule  # noqa: E402

KINDS = ("or", "count", "sorted", "limited", "plain")


def query_kind(model: StatisticsCostModel, query: Any) -> str:
    """The query's kind (module docstring), the first that applies."""
    if query.logic == "or" and len(query.predicates) > 1:
        return "or"
    if query.aggregate:
        return "count"
    if model.ordered(query):
        return "sorted"
    return "limited" if query.limit else "plain"


class HybridSystem:
    """What ``advise`` reads of an indexing system, with each query's cost from the engine (``system``) where
    ``from_engine(query)`` and from ``model`` elsewhere, and index bytes from the engine where ``engine_bytes``
    (else the model's): the advisor's own rule on these figures."""

    def __init__(self, system: Any, model: StatisticsCostModel, from_engine: Callable[[Any], bool],
                 engine_bytes: bool) -> None:
        self.system, self.model, self.from_engine, self.engine_bytes = system, model, from_engine, engine_bytes
        self.aggregate = system.aggregate
        self._configuration: tuple[IndexSpec, ...] = ()

    def state(self) -> tuple[IndexSpec, ...]:
        return self._configuration

    def configure(self, configuration: Sequence[IndexSpec]) -> None:
        self._configuration = tuple(configuration)

    def measure(self, workload: Sequence[Any]) -> dict[str, list[float]]:
        measured = [self.from_engine(query) for query in workload]
        engine: list[float] = []
        if any(measured):
            self.system.configure(list(self._configuration))
            engine = [float(cost) for cost in self.system.measure(workload)["costs"]]
        return {"costs": [engine[i] if measured[i] else self.model.cost(query, self._configuration)
                          for i, query in enumerate(workload)]}

    def index_size(self, spec: IndexSpec) -> float:
        return self.system.index_size(spec) if self.engine_bytes else self.model.index_bytes(spec)

    def references(self, workload: Sequence[Any]) -> dict[str, float]:
        """The reward's normalisers on these figures: the cost with no index, the full index's bytes."""
        kept = self._configuration
        self.configure(())
        unindexed = self.measure(workload)["costs"]
        self.configure(kept)
        return {"no_index_cost": aggregate_costs(unindexed, self.aggregate),
                "full_index_bytes": sum(self.index_size(spec) for spec in full_index_configuration(workload))}


def variants(model: StatisticsCostModel) -> dict[str, tuple[Callable[[Any], bool], bool]]:
    """Per variant (module docstring): which queries' costs come from the engine, and whether the bytes do."""
    found: dict[str, tuple[Callable[[Any], bool], bool]] = {
        "model": (lambda query: False, False), "engine bytes": (lambda query: False, True),
        "engine costs": (lambda query: True, False), "engine": (lambda query: True, True)}
    for kind in KINDS:
        found[f"model on {kind} only"] = (lambda query, kind=kind: query_kind(model, query) != kind, True)
    return found


def errors_report(name: str, workloads: int, stream: str, stream_seed: int, documents: int = 20000) -> list[str]:
    collection = collection_named(name, documents)
    with tempfile.TemporaryDirectory(prefix="wield-estimate-errors-") as cache:
        task = build_indexing_task(collection, cache_dir=cache)
        try:
            system, converter = task.system, task.converter
            model = StatisticsCostModel(converter.statistics)
            config = QueryWorkloadConfig(n_queries=10, exclude_templates=held_out_templates(collection))
            figures = variants(model)
            behind: dict[str, list[float]] = {label: [] for label in figures}
            kinds = dict.fromkeys(KINDS, 0)
            as_estimated = 0
            for i in range(workloads):
                schedule = make_query_schedule(collection, config, derive_seed(stream_seed, stream, i), 1,
                                               per_episode=False)
                workload = list(schedule.task_for_episode(0))
                for query in workload:
                    kinds[query_kind(model, query)] += 1
                advisor = advise(system, converter, workload).reward
                score = workload_evaluator(system, converter, workload)  # a set's reward on the engine
                estimated = estimated_advice(model, converter, workload, task.schema.k, aggregate=system.aggregate)
                for label, (from_engine, engine_bytes) in figures.items():
                    chosen = advise(HybridSystem(system, model, from_engine, engine_bytes), converter,
                                    workload).configuration
                    as_estimated += label == "model" and set(chosen) == set(estimated.configuration)
                    behind[label].append(score(chosen) - advisor)
        finally:
            task.close()
    lines = [f"{name} ({len(collection):,} rows; {workloads} workloads of stream '{stream}', seed {stream_seed}; "
             f"queries by kind: {', '.join(f'{kind} {count}' for kind, count in kinds.items())}); the 'model' "
             f"variant chose the estimated advisor's set on {as_estimated} of {workloads}",
             "  reward behind the advisor (mean, standard error, workloads worse/better):"]
    for label, differences in behind.items():
        error = statistics.stdev(differences) / len(differences) ** 0.5
        lines.append(f"  {label:<22} {statistics.fmean(differences):+.4f} ({error:.4f}) "
                     f"{sum(d < -1e-9 for d in differences)}/{sum(d > 1e-9 for d in differences)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_collection_options(parser)
    add_stream_options(parser, workloads=20)
    args = parsed_options(parser, argv, "a standard error")
    for name in args.collection.split(","):
        for line in errors_report(name.strip(), args.workloads, args.stream, args.stream_seed, args.documents):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
