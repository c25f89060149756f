"""Seeded workload generators: document collections, query workloads and their schedules."""

from workloads.collection import Collection, FieldSpec, load_collection
from workloads.imdb import generate_imdb_collection
from workloads.queries import Predicate, Query, SortKey
from workloads.query_generator import (IMDB_TEMPLATES, QueryTemplate, QueryWorkloadConfig,
                                       QueryWorkloadGenerator)
from workloads.schedule import WorkloadSchedule, make_query_schedule

__all__ = ["Collection", "FieldSpec", "load_collection", "generate_imdb_collection", "Predicate", "Query",
           "SortKey", "IMDB_TEMPLATES", "QueryTemplate", "QueryWorkloadConfig", "QueryWorkloadGenerator",
           "WorkloadSchedule", "make_query_schedule"]
