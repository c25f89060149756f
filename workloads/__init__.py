"""Seeded workload generators: document collections, query workloads and their episode schedules.

Engine-neutral: this package uses numpy, pandas and ``wield``'s errors, seeding and IO helpers only.

Every name below is imported on first use (``wield.lazy``), so importing the package imports none of its
modules (nor numpy's, pandas' or torch's) until a name is used.
"""

from typing import TYPE_CHECKING

from wield.lazy import lazy_exports

if TYPE_CHECKING:
    from workloads.collection import FIELD_KINDS, Collection, FieldSpec
    from workloads.files import load_collection
    from workloads.evaluate import predicate_mask, query_mask, result_size, selectivity
    from workloads.imdb import generate_imdb_collection
    from workloads.queries import AGGREGATES, DIRECTIONS, LOGIC, OPERATORS, Predicate, Query, SortKey
    from workloads.query_generator import (DEFAULT_OPERATOR_WEIGHTS, OPERATOR_CLASSES, QueryWorkloadConfig,
                                           QueryWorkloadGenerator)
    from workloads.schedule import WorkloadSchedule, make_query_schedule, redraw_seeds, regenerate_query_schedule
    from workloads.templates import IMDB_TEMPLATES, QueryTemplate, generic_templates

_EXPORTS = {
    "FIELD_KINDS": "workloads.collection", "Collection": "workloads.collection",
    "FieldSpec": "workloads.collection", "load_collection": "workloads.files",
    "predicate_mask": "workloads.evaluate", "query_mask": "workloads.evaluate",
    "result_size": "workloads.evaluate", "selectivity": "workloads.evaluate",
    "generate_imdb_collection": "workloads.imdb", "AGGREGATES": "workloads.queries",
    "DIRECTIONS": "workloads.queries", "LOGIC": "workloads.queries", "OPERATORS": "workloads.queries",
    "Predicate": "workloads.queries", "Query": "workloads.queries", "SortKey": "workloads.queries",
    "DEFAULT_OPERATOR_WEIGHTS": "workloads.query_generator", "OPERATOR_CLASSES": "workloads.query_generator",
    "QueryWorkloadConfig": "workloads.query_generator", "QueryWorkloadGenerator": "workloads.query_generator",
    "WorkloadSchedule": "workloads.schedule", "make_query_schedule": "workloads.schedule",
    "regenerate_query_schedule": "workloads.schedule", "redraw_seeds": "workloads.schedule",
    "IMDB_TEMPLATES": "workloads.templates",
    "QueryTemplate": "workloads.templates", "generic_templates": "workloads.templates",
}

__all__ = [
    "FIELD_KINDS", "Collection", "FieldSpec", "load_collection", "generate_imdb_collection",
    "OPERATORS", "LOGIC", "DIRECTIONS", "AGGREGATES", "Predicate", "SortKey", "Query",
    "predicate_mask", "query_mask", "selectivity", "result_size",
    "QueryTemplate", "IMDB_TEMPLATES", "generic_templates",
    "OPERATOR_CLASSES", "DEFAULT_OPERATOR_WEIGHTS", "QueryWorkloadConfig", "QueryWorkloadGenerator",
    "WorkloadSchedule", "make_query_schedule", "redraw_seeds", "regenerate_query_schedule",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
