"""Work measured on a slice of the table (sqlite_slice.py) equals work measured on the index built on the whole
table, step by step (the adapter's results with slices: test_indexing_fast_path.py)."""

from __future__ import annotations

import itertools

import pytest

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines.sqlite_whatif import signature
from case_studies.indexing.index_spec import IndexSpec
from workloads import Predicate, Query, QueryWorkloadConfig, generate_imdb_collection
from workloads.query_generator import QueryWorkloadGenerator


@pytest.fixture(scope="module")
def collection():
    return generate_imdb_collection(5_000, seed=4)


def candidate_indexes(query) -> list[IndexSpec]:
    """Every index of one or two of the query's fields, in every order and direction."""
    specs = set()
    for width in (1, 2):
        for fields in itertools.permutations(query.attributes(), width):
            for directions in itertools.product(("asc", "desc"), repeat=width):
                specs.add(IndexSpec(tuple(zip(fields, directions))).canonical())
    return sorted(specs)


def test_a_slice_counts_exactly_the_steps_of_the_full_index(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    engine.work_granularity = 1  # every VM step, not hundreds
    slices = engine.table_slices()
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=12))
    served = declined = 0
    try:
        for seed in (0, 1):
            for query in generator.generate(seed):
                for spec in candidate_indexes(query):
                    engine.create_index(spec)
                    program = engine.program(query, spec.name)
                    full = engine.run_query(query, repetitions=0, force=spec.name)
                    statistics = engine.index_statistics(spec)
                    engine.drop_index(spec)
                    on_slice = slices.program(query, spec, statistics)
                    result = slices.run(query, spec) if on_slice is not None else None
                    if result is None:
                        declined += 1
                        continue
                    served += 1
                    assert signature(on_slice) == signature(program), (query, spec)
                    assert (result.work, result.rows) == (full.work, full.rows), (query, spec, full.plan)
    finally:
        slices.close()
        engine.close()
    assert served >= 100 and declined > 0
    assert slices.made > 0 and slices.index_builds >= slices.made


def test_a_slice_declines_what_it_cannot_serve(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    slices = engine.table_slices()
    on_year = IndexSpec((("start_year", "asc"), ("genre", "asc")))
    try:
        either = Query((Predicate("start_year", "eq", 1990), Predicate("genre", "eq", "Drama")), logic="or")
        unconstrained = Query((Predicate("genre", "eq", "Drama"),))  # no predicate on the leading key
        twice = Query((Predicate("start_year", "gt", 1950), Predicate("start_year", "lt", 1990)))
        for query in (either, unconstrained, twice):
            assert slices.leading_predicate(query, on_year) is None
            assert slices.program(query, on_year, None) is None
        everything = Query((Predicate("start_year", "gte", -10**9),))  # the whole table: too large a slice
        assert slices.program(everything, on_year, None) is None and slices.too_large == 1
    finally:
        slices.close()
        engine.close()
