"""Seeded workload generators: document collections, query workloads and their episode schedules.

Engine-neutral: this package uses numpy, pandas and ``wield``'s errors, seeding and IO helpers only.
"""

from workloads.collection import FIELD_KINDS, Collection, FieldSpec
from workloads.files import load_collection
from workloads.evaluate import predicate_mask, query_mask, result_size, selectivity
from workloads.imdb import generate_imdb_collection
from workloads.queries import AGGREGATES, DIRECTIONS, LOGIC, OPERATORS, Predicate, Query, SortKey
from workloads.query_generator import (DEFAULT_OPERATOR_WEIGHTS, OPERATOR_CLASSES, QueryWorkloadConfig,
                                       QueryWorkloadGenerator)
from workloads.schedule import WorkloadSchedule, make_query_schedule, regenerate_query_schedule
from workloads.templates import IMDB_TEMPLATES, QueryTemplate, generic_templates

__all__ = [
    "FIELD_KINDS", "Collection", "FieldSpec", "load_collection", "generate_imdb_collection",
    "OPERATORS", "LOGIC", "DIRECTIONS", "AGGREGATES", "Predicate", "SortKey", "Query",
    "predicate_mask", "query_mask", "selectivity", "result_size",
    "QueryTemplate", "IMDB_TEMPLATES", "generic_templates",
    "OPERATOR_CLASSES", "DEFAULT_OPERATOR_WEIGHTS", "QueryWorkloadConfig", "QueryWorkloadGenerator",
    "WorkloadSchedule", "make_query_schedule", "regenerate_query_schedule",
]
