"""Work measured on a slice of the table (sqlite_slice.py) equals work measured on the index built on the whole
table, step by step (the adapter's results with slices: test_indexing_fast_path.py)."""

from __future__ import annotations

import gc
import itertools
import os

import pytest

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines.sqlite_slice import TableSlices, may_skip_scan, statistics_of
from case_studies.indexing.engines.sqlite_whatif import signature
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.measurement_store import MeasurementStore
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


@pytest.fixture
def counting(collection, tmp_path):
    """(engine, slices) counting every VM step; both closed after the test."""
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    engine.work_granularity = 1  # every VM step, not hundreds
    slices = engine.table_slices()
    try:
        yield engine, slices
    finally:
        slices.close()
        engine.close()


def measured_on_the_full_table(engine, query, used: tuple[IndexSpec, ...]):
    """(program, result, statistics) of ``query`` with exactly ``used`` built on the whole table (the
    planner's choice among them), which are then dropped again."""
    for spec in used:
        engine.create_index(spec)
    program = engine.program(query)
    full = engine.run_query(query, repetitions=0)
    statistics = {spec: engine.index_statistics(spec) for spec in used}
    for spec in used:
        engine.drop_index(spec)
    return program, full, statistics


def served_exactly(slices, query, used, statistics, program, full) -> bool:
    """Whether a slice served the program of ``query`` over ``used``; if it did, it counted exactly the
    steps and rows of the full indexes (asserted)."""
    on_slice = slices.program(query, used, statistics)
    result = slices.run(query, used) if on_slice is not None else None
    if result is None:
        return False
    assert signature(on_slice) == signature(program), (query, used)
    assert (result.work, result.rows) == (full.work, full.rows), (query, used, full.plan)
    return True


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
                    on_slice = slices.program(query, (spec,), {spec: statistics})
                    result = slices.run(query, (spec,)) if on_slice is not None else None
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


def test_a_skip_scan_slice_counts_exactly_the_steps_of_the_full_index(collection, tmp_path):
    """A skip-scan steps over leading keys the query does not constrain, group by group of their values:
    its slice holds a row of every group and the sought key's boundary rows within each (group rows);
    without them the steps differ (checked: most programs here then count fewer)."""
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    engine.work_granularity = 1
    slices = engine.table_slices()
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=12))
    fields = engine.translator.fields
    served = without_groups_differ = 0
    try:
        for query in generator.generate(0):
            if query.logic != "and":
                continue
            constrained = [p.field for p in query.predicates]
            sought = constrained[0]
            for skipped in itertools.chain(([field] for field in fields if field not in constrained),
                                           [["is_adult", "title_type"]] if "title_type" not in constrained else []):
                for direction in ("asc", "desc"):
                    spec = IndexSpec(tuple((field, "asc") for field in skipped) + ((sought, direction),))
                    engine.create_index(spec)
                    program = engine.program(query, spec.name)
                    full = engine.run_query(query, repetitions=0, force=spec.name)
                    statistics = engine.index_statistics(spec)
                    engine.drop_index(spec)
                    if not any("ANY(" in line for line in full.plan):
                        continue  # not a skip-scan
                    on_slice = slices.program(query, (spec,), {spec: statistics})
                    result = slices.run(query, (spec,)) if on_slice is not None else None
                    if result is None:
                        continue
                    served += 1
                    assert signature(on_slice) == signature(program), (query, spec)
                    assert (result.work, result.rows) == (full.work, full.rows), (query, spec, full.plan)
                    # the same program on a slice without the group rows: the steps differ
                    bare = TableSlices(engine, directory=tmp_path)
                    bare._group_rows = _NoGroups()
                    try:
                        if bare.program(query, (spec,), {spec: statistics}) is not None:
                            bare_result = bare.run(query, (spec,))
                            without_groups_differ += bare_result is None or bare_result.work != full.work
                    finally:
                        bare.close()
    finally:
        slices.close()
        engine.close()
    assert served >= 100, served
    assert without_groups_differ >= served // 2, (without_groups_differ, served)


def test_group_rows_are_found_once_per_collection_and_kept_in_the_measurement_store(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    engine.work_granularity = 1
    spec = IndexSpec((("is_adult", "asc"), ("start_year", "asc")))
    query = Query((Predicate("start_year", "between", (1990, 1995)),))
    engine.create_index(spec)
    statistics, full = engine.index_statistics(spec), engine.run_query(query, repetitions=0, force=spec.name)
    engine.drop_index(spec)
    assert any("ANY(is_adult)" in line for line in full.plan)
    found = []
    try:
        for _ in range(2):  # a later trial's process: a new engine's slices, the same store
            store = MeasurementStore(tmp_path / "measurements" / "sqlite-x.sqlite")
            slices = TableSlices(engine, directory=tmp_path, store=store)
            try:
                assert slices.program(query, (spec,), {spec: statistics}) is not None
                result = slices.run(query, (spec,))
                assert result is not None and (result.work, result.rows) == (full.work, full.rows)
                found.append(slices.groups_found)
            finally:
                slices.close()
                store.close()
    finally:
        engine.close()
    assert found == [1, 0]


def test_a_prefix_index_statistics_are_derived_exactly_from_a_longer_index(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    longer = IndexSpec((("is_adult", "asc"), ("start_year", "desc"), ("genre", "asc")))
    try:
        measured = {}
        prefixes = (IndexSpec((("is_adult", "asc"), ("start_year", "asc"))), IndexSpec((("is_adult", "asc"),)))
        for spec in (longer, *prefixes):
            engine.create_index(spec)
            measured[spec] = engine.index_statistics(spec)
            engine.drop_index(spec)
        found: dict = {}
        for spec, line in measured.items():
            assert statistics_of(spec, {longer: measured[longer]}, found) == line
        assert statistics_of(IndexSpec((("genre", "asc"),)), {longer: measured[longer]}) is None
        assert may_skip_scan(measured[longer], 1) and not may_skip_scan(None, 1) and may_skip_scan(None, 0)
    finally:
        engine.close()


class _NoGroups(dict):
    """A group-row cache that answers "no group rows" for every key (what a slice without them holds)."""

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key) -> tuple:
        return ()


def test_a_slice_declines_what_it_cannot_serve(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    slices = engine.table_slices()
    on_year = IndexSpec((("start_year", "asc"), ("genre", "asc")))
    on_votes = IndexSpec((("num_votes", "asc"),))
    try:
        either = Query((Predicate("start_year", "eq", 1990), Predicate("genre", "eq", "Drama")), logic="or")
        # an OR is served with an index on each branch's key, never with one on a key it has no predicate on
        unconstrained = Query((Predicate("num_votes", "gt", 10),))  # no predicate on any of the index's keys
        twice = Query((Predicate("start_year", "gt", 1950), Predicate("start_year", "lt", 1990)))
        for query in (unconstrained, twice):
            assert not slices.serves(query, (on_year,))
            assert slices.program(query, (on_year,), {}) is None
        # a skip-scan over a leading key with too many values (by its statistics) is declined before its slice
        # is made; without statistics too
        on_votes_genre = IndexSpec((("num_votes", "asc"), ("genre", "asc")))
        on_genre_only = Query((Predicate("genre", "eq", "Drama"),))
        engine.create_index(on_votes_genre)
        statistics = engine.index_statistics(on_votes_genre)
        assert slices.serves(on_genre_only, (on_votes_genre,))
        assert slices.program(on_genre_only, (on_votes_genre,), {on_votes_genre: statistics}) is None
        assert slices.program(on_genre_only, (on_votes_genre,), {}) is None and slices.made == 0
        on_genre = IndexSpec((("genre", "asc"),))
        assert slices.serves(either, (on_year, on_genre)) and not slices.serves(either, (on_genre, on_votes))
        everything = Query((Predicate("start_year", "gte", -10**9),))  # the whole table: too large a slice
        assert slices.program(everything, (on_year,), {}) is None and slices.too_large == 1
    finally:
        slices.close()
        engine.close()


def test_an_or_served_by_an_index_per_branch_counts_exactly_the_steps_of_the_full_indexes(collection, counting):
    engine, slices = counting
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=40, or_probability=1.0))
    served = 0
    for query in generator.generate(2):
        if query.logic != "or":
            continue
        fields = list(dict.fromkeys(p.field for p in query.predicates))
        for second in ("asc", "desc"):
            used = tuple(sorted(IndexSpec(((field, "asc"),) + tuple((other, second) for other in fields
                                                                   if other != field)[:1]).canonical()
                                for field in fields))
            program, full, statistics = measured_on_the_full_table(engine, query, used)
            if len(full.indexes_used) != len(used):  # the planner did not take one index per branch
                continue
            served += served_exactly(slices, query, used, statistics, program, full)
    assert served >= 5, served


def test_an_or_served_by_skip_scans_counts_exactly_the_steps_of_the_full_indexes(collection, counting):
    """An OR's branch may be a skip-scan: its index starts with keys the query has no predicate on."""
    engine, slices = counting
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=40, or_probability=1.0))
    served = 0
    for query in generator.generate(3):
        fields = list(dict.fromkeys(p.field for p in query.predicates))
        if query.logic != "or":
            continue
        for stepped_over in ("is_adult", "title_type", "is_original_title", "language"):
            if stepped_over in fields:
                continue
            for direction in ("asc", "desc"):
                candidates = sorted({IndexSpec(((stepped_over, "asc"), (field, direction))).canonical()
                                     for field in fields} | {IndexSpec(((fields[0], "asc"),))})
                for spec in candidates:
                    engine.create_index(spec)
                chosen = engine.run_query(query, repetitions=0).indexes_used
                for spec in candidates:
                    engine.drop_index(spec)
                used = tuple(spec for spec in candidates if spec.name in chosen)  # the planner's choice
                program, full, statistics = measured_on_the_full_table(engine, query, used)
                if len(used) < 2 or not any("ANY(" in line for line in full.plan):
                    continue  # not an index per branch, or no skip-scan
                served += served_exactly(slices, query, used, statistics, program, full)
    assert served >= 5, served


def test_slices_never_closed_leave_no_files_but_a_forked_child_leaves_its_parents_alone(collection, tmp_path):
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    directory = tmp_path / "slices"
    directory.mkdir()
    slices = TableSlices(engine, directory=directory)
    spec = IndexSpec((("start_year", "asc"),))
    query = Query((Predicate("start_year", "eq", 1990),))
    try:
        assert slices.program(query, (spec,), {}) is not None
        made = list(directory.glob("wield-*-slice-*.sqlite"))
        assert len(made) == 1
        child = os.fork()
        if child == 0:  # a forked child dropping its copy must not remove its parent's file
            del slices
            gc.collect()
            os._exit(0)
        os.waitpid(child, 0)
        assert made[0].exists()
        del slices  # never closed: collected
        gc.collect()
        assert not list(directory.iterdir())
    finally:
        engine.close()
