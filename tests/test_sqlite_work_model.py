"""The work model (sqlite_work_model.py) counts exactly the VM steps and rows of executing a program, on the
generated collection and on a table of mixed types and NULLs (the adapter's use of it, checked against
executions: test_indexing_fast_path.py)."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace

import pytest

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.system import WORK_CHECK_EVERY, WORK_CHECKS, IndexingSystem
from wield.errors import SystemFailure
from workloads import Predicate, Query, QueryWorkloadConfig, SortKey, generate_imdb_collection
from workloads.query_generator import QueryWorkloadGenerator

from tests.test_sqlite_slices import candidate_indexes


def counted_and_executed(engine: SQLiteEngine, query, spec: IndexSpec):
    """(counted, executed) results of ``query`` forcing ``spec`` (built), counted None if declined."""
    program = engine.program(query, spec.name)
    return engine.program_work(query, (spec,), program), engine.run_query(query, repetitions=0, force=spec.name)


def test_counted_work_equals_executed_work_on_the_generated_collection(tmp_path):
    collection = generate_imdb_collection(4_000, seed=3)
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=10))
    counted = declined = 0
    try:
        for granularity in (1, 100):
            engine.work_granularity = granularity  # 1: every VM step
            for query in generator.generate(0) + generator.generate(1):
                for spec in candidate_indexes(query)[::2]:  # seeks, skip-scans, full scans
                    engine.create_index(spec)
                    result, executed = counted_and_executed(engine, query, spec)
                    engine.drop_index(spec)
                    if result is None:
                        declined += 1
                        continue
                    counted += 1
                    assert (result.work, result.rows) == (executed.work, executed.rows), (query, spec)
    finally:
        engine.close()
    assert counted >= 150 and counted > 4 * declined  # most programs of one index are interpreted


def test_an_or_over_one_index_per_branch_is_counted_exactly(tmp_path):
    """An OR served by one index per branch: each branch a seek or skip-scan loop, rows found by an earlier
    branch skipped (``RowSetTest``), every row found going through one subroutine (``Gosub``)."""
    collection = generate_imdb_collection(4_000, seed=3)
    engine = open_engine(collection, "sqlite", cache_dir=tmp_path / "cache")
    engine.work_granularity = 1
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=20))
    rng = random.Random(2)
    counted = 0
    try:
        for query in [query for seed in range(4) for query in generator.generate(seed) if query.logic == "or"]:
            fields = list(dict.fromkeys(predicate.field for predicate in query.predicates))
            used = tuple(IndexSpec(((field, rng.choice(["asc", "desc"])), (rng.choice(
                [other for other in collection.field_names if other != field]), "asc"))) for field in fields)
            for spec in used:
                engine.create_index(spec)
            program = engine.program(query)  # the planner's choice among exactly these indexes
            result, executed = engine.program_work(query, used, program), engine.run_query(query, repetitions=0)
            for spec in used:
                engine.drop_index(spec)
            if result is not None:
                counted += len(executed.indexes_used) > 1
                assert (result.work, result.rows) == (executed.work, executed.rows), (query, used)
    finally:
        engine.close()
    assert counted >= 10  # programs that opened several indexes


@pytest.fixture
def mixed(tmp_path):
    """A table with NULLs, integers and reals in one column, text among numbers, long text."""
    path = tmp_path / "mixed.sqlite"
    rng = random.Random(7)
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE "t" ("a" INTEGER, "b" REAL, "c" TEXT, "d" INTEGER)')
    rows = []
    for _ in range(3_000):
        a = rng.choice([None, rng.randint(-5, 40), rng.randint(0, 30) + 0.5, "x" + str(rng.randint(0, 9))])
        b = rng.choice([None, rng.random() * 10, rng.randint(0, 10)])
        c = rng.choice([None, "", "alpha", "beta", "gamma" * rng.randint(1, 30), str(rng.randint(0, 99))])
        d = rng.randint(0, 6)
        rows.append((a, b, c, d))
    conn.executemany('INSERT INTO "t" VALUES (?, ?, ?, ?)', rows)
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    engine = SQLiteEngine(path, table="t")
    engine.work_granularity = 1
    yield engine
    engine.close()


def mixed_queries(rng: random.Random, count: int) -> list[Query]:
    values = {"a": lambda: rng.choice([rng.randint(-5, 40), rng.randint(0, 30) + 0.5, "x5", "7"]),
              "b": lambda: rng.choice([rng.random() * 10, rng.randint(0, 10)]),
              "c": lambda: rng.choice(["alpha", "beta", "gamma", "5", 5]),
              "d": lambda: rng.randint(0, 6)}
    queries = []
    while len(queries) < count:
        fields = rng.sample(sorted(values), rng.randint(1, 3))
        predicates = []
        for field in fields:
            op = rng.choice(["eq", "lt", "lte", "gt", "gte", "between", "in"])
            if op == "between":
                value = tuple(sorted((values[field](), values[field]()), key=lambda v: (isinstance(v, str), v)))
            elif op == "in":
                value = tuple(dict.fromkeys(values[field]() for _ in range(3)))
            else:
                value = values[field]()
            predicates.append(Predicate(field, op, value))
        shape = rng.choice(["rows", "count", "sorted", "limited", "sorted and limited"])
        sort = (SortKey(rng.choice(sorted(values)), rng.choice(["asc", "desc"])),) if "sorted" in shape else ()
        limit = rng.choice([1, 5, 50]) if "limited" in shape else None
        queries.append(Query(tuple(predicates), sort=sort, limit=limit,
                             aggregate="count" if shape == "count" else None))
    return queries


def test_counted_work_equals_executed_work_with_nulls_mixed_types_and_directions(mixed):
    rng = random.Random(11)
    counted = 0
    for query in mixed_queries(rng, 120):
        leading = rng.choice([p.field for p in query.predicates])
        others = [field for field in "abcd" if field != leading]
        spec = IndexSpec(((leading, rng.choice(["asc", "desc"])), (rng.choice(others), rng.choice(["asc", "desc"]))))
        mixed.create_index(spec)
        result, executed = counted_and_executed(mixed, query, spec)
        mixed.drop_index(spec)
        if result is not None:
            counted += 1
            assert (result.work, result.rows) == (executed.work, executed.rows), (query, spec)
    assert counted >= 50


def skip_scan_runs(engine: SQLiteEngine, rng: random.Random, queries):
    """For each query with a field it does not constrain: an index over one or two such fields, then one it
    constrains (a skip-scan for the planner to choose), built and forced; (query, spec, program, counted,
    executed)."""
    for query in queries:
        sought = rng.choice([p.field for p in query.predicates])
        skipped = [field for field in "dbca" if field not in {p.field for p in query.predicates}][:rng.randint(1, 2)]
        if not skipped:
            continue
        spec = IndexSpec(tuple((field, rng.choice(["asc", "desc"])) for field in (*skipped, sought)))
        engine.create_index(spec)
        program = engine.program(query, spec.name)
        result, executed = engine.program_work(query, (spec,), program), engine.run_query(query, 0, force=spec.name)
        engine.drop_index(spec)
        yield query, spec, program, result, executed


def test_skip_scans_over_one_and_two_keys_are_counted_exactly(mixed):
    rng = random.Random(5)
    counted = 0
    for query, spec, program, result, executed in skip_scan_runs(mixed, rng, mixed_queries(rng, 80)):
        if result is not None:
            counted += any(instruction[0] == "Rewind" for instruction in program) and "ANY(" in " ".join(
                executed.plan)
            assert (result.work, result.rows) == (executed.work, executed.rows), (query, spec)
    assert counted >= 10


def test_a_skip_scan_a_limit_ends_early_is_counted_exactly(mixed):
    """A LIMIT that stops a skip-scan in one of its groups: the groups after it never run."""
    rng = random.Random(8)
    early = 0
    limited = [query for query in mixed_queries(rng, 800) if query.limit is not None and not query.sort]
    for query, spec, _, result, executed in skip_scan_runs(mixed, rng, limited):
        if result is not None:
            assert (result.work, result.rows) == (executed.work, executed.rows), (query, spec)
            # a skip-scan whose LIMIT was reached left early (declined before, so this counted none)
            early += "ANY(" in " ".join(executed.plan) and executed.rows == query.limit
    assert early >= 15


def test_a_scan_of_the_table_is_counted_exactly(mixed):
    """No index: every row visited by rowid (the no-index cost every reward is normalised by)."""
    for query in mixed_queries(random.Random(3), 150):
        program = mixed.program(query, "")
        result, executed = mixed.program_work(query, (), program), mixed.run_query(query, 0, force="")
        assert result is not None and (result.work, result.rows) == (executed.work, executed.rows), query


@pytest.mark.parametrize("query, keys", [
    # a skip-scan whose lower bound only skips NULLs (Null, then a seek past NULL within the group)
    (Query((Predicate("c", "lte", "alpha"),), limit=1), (("d", "asc"), ("c", "asc"))),
    (Query((Predicate("c", "lt", "beta"),)), (("d", "desc"), ("c", "asc"))),
    (Query((Predicate("b", "lt", 5.0),), aggregate="count"), (("d", "asc"), ("b", "desc"))),
    # a skip-scan with no seek in the group: the range starts at the group's first entry
    (Query((Predicate("b", "gt", 5.0),), aggregate="count"), (("d", "asc"), ("b", "desc"))),
    (Query((Predicate("b", "gte", 2),), limit=5), (("d", "desc"), ("b", "desc"))),
    # a loop from the index's last entry, its range end bound after the Last
    (Query((Predicate("b", "gt", 5.0),), sort=(SortKey("b", "desc"),)), (("b", "asc"),)),
    (Query((Predicate("b", "gt", 5.0), Predicate("d", "eq", 2)), sort=(SortKey("b", "desc"),), limit=5),
     (("b", "asc"), ("d", "asc"))),
])
def test_one_sided_ranges_are_counted_exactly(mixed, query, keys):
    """Ranges bounded on one side that the model declined before (and now counts)."""
    spec = IndexSpec(keys)
    mixed.create_index(spec)
    result, executed = counted_and_executed(mixed, query, spec)
    assert result is not None and (result.work, result.rows) == (executed.work, executed.rows)


def test_a_skip_scan_over_an_in_list_is_counted_exactly(mixed):
    """A skip-scan whose sought key has an IN list: a seek and a loop per value within every group."""
    rng = random.Random(9)
    counted = 0
    for _ in range(300):
        sought = rng.choice("abcd")
        others = [field for field in "dbca" if field != sought]
        skipped = others[:rng.randint(1, 2)]
        values = [rng.choice([rng.randint(-5, 40), rng.randint(0, 30) + 0.5, "x5", "7", "alpha", 5])
                  for _ in range(rng.randint(1, 4))]
        predicates = [Predicate(sought, "in", tuple(dict.fromkeys(values)))]
        if rng.random() < 0.5:  # a test in the loop's body too
            predicates.append(Predicate(rng.choice(others), rng.choice(["lt", "gte", "eq"]), rng.randint(0, 6)))
        query = Query(tuple(predicates), aggregate=rng.choice([None, "count"]))
        spec = IndexSpec(tuple((field, rng.choice(["asc", "desc"])) for field in (*skipped, sought)))
        mixed.create_index(spec)
        program = mixed.program(query, spec.name)
        result, executed = mixed.program_work(query, (spec,), program), mixed.run_query(query, 0, force=spec.name)
        mixed.drop_index(spec)
        if result is not None:
            assert (result.work, result.rows) == (executed.work, executed.rows), (query, spec)
            # declined before: counted here only by the skip-scan over the list
            counted += "ANY(" in " ".join(executed.plan) and any(i[0] == "IfNoHope" for i in program)
    assert counted >= 40


def test_an_in_list_seeking_the_index_is_counted_and_two_are_declined_not_guessed(mixed):
    spec = IndexSpec((("a", "asc"), ("d", "asc")))
    mixed.create_index(spec)
    for in_seek in (Query((Predicate("a", "in", (3, "7", 1, 3, 2.0)), Predicate("b", "lt", 5.0))),  # a seek a value
                    Query((Predicate("a", "in", (1, 2, 3)), Predicate("c", "in", ("alpha", "beta", "", "5"))))):
        result, executed = mixed.program_work(in_seek, (spec,), mixed.program(in_seek, spec.name)), \
            mixed.run_query(in_seek, 0, force=spec.name)
        assert result is not None and (result.work, result.rows) == (executed.work, executed.rows), in_seek
    two = Query((Predicate("a", "in", (1, 2, 3)), Predicate("d", "in", (2, 4))))  # SeekHit, IfNoHope
    assert mixed.program_work(two, (spec,), mixed.program(two, spec.name)) is None


def test_an_in_lists_loops_share_the_statements_limit_and_its_sort_kept_to_the_limit(mixed):
    """Each value of an IN list on the sought key is a loop of its own, but a LIMIT's counter and a sort kept
    to its LIMIT last the statement: the second loop starts from what the first left (found at 1,000,000
    rows, where the model counted 300 steps too many)."""
    counted = limited = 0
    for leading in ("d", "a"):
        spec = IndexSpec(((leading, "asc"), ("c", "desc")))
        mixed.create_index(spec)
        values = (5, 1, 3) if leading == "d" else (3, "7", 1, 2.0)
        for limit in (1, 7, 40, 400):
            for sort in ((), (SortKey("b", "asc"),), (SortKey("b", "desc"), SortKey("c", "asc")),
                         (SortKey(leading, "desc"),)):
                query = Query((Predicate(leading, "in", values),), sort=sort, limit=limit)
                program = mixed.program(query, spec.name)
                result = mixed.program_work(query, (spec,), program)
                executed = mixed.run_query(query, 0, force=spec.name)
                if result is None:  # (a descending walk of the list's values is declined)
                    continue
                assert (result.work, result.rows) == (executed.work, executed.rows), query
                counted += any(instruction[0] == "IfNotZero" for instruction in program)
                limited += any(instruction[0] == "DecrJumpZero" for instruction in program)
        mixed.drop_index(spec)
    assert counted >= 16 and limited >= 6  # sorts kept to their LIMIT, and LIMITs, over several loops


class _SkewedEngine:
    """An engine whose counted work is one step of the progress handler too high from the ``wrong_from``-th
    count on: a work model that disagrees with SQLite."""

    def __init__(self, engine, wrong_from: int) -> None:
        self._engine, self._wrong_from, self._calls = engine, wrong_from, 0

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def program_work(self, query, used, instructions):
        counted = self._engine.program_work(query, used, instructions)
        if counted is None:
            return None
        self._calls += 1
        return replace(counted, work=counted.work + 100) if self._calls >= self._wrong_from else counted


def single_index_questions(collection, count: int) -> list[tuple[Query, tuple[IndexSpec, ...]]]:
    generator = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=10))
    questions = []
    for query in [query for seed in range(2, 8) for query in generator.generate(seed)]:
        fields = {predicate.field for predicate in query.predicates}
        questions += [(query, (spec,)) for spec in candidate_indexes(query) if spec.keys[0][0] in fields]
    return questions[:count]


def test_counted_work_is_checked_and_a_model_that_disagrees_is_switched_off_or_stops_the_run(tmp_path):
    collection = generate_imdb_collection(4_000, seed=3)
    questions = single_index_questions(collection, 8 * WORK_CHECK_EVERY)
    # each adapter with its own cache: a measurement store shared would answer the later ones
    slow = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "slow"), cost_cache=False)
    expected = [slow.query_result(query, configuration).work for query, configuration in questions]
    slow.close()

    right = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "right"))
    assert [right.query_result(query, configuration).work for query, configuration in questions] == expected
    counters = right.counters
    assert counters.works_counted > 2 * WORK_CHECK_EVERY
    assert WORK_CHECKS < counters.work_checks <= WORK_CHECKS + counters.works_counted // WORK_CHECK_EVERY + 1
    right.close()

    # Without slices a check is cheap only where the index is built: after the first WORK_CHECKS, a check due
    # on any other program waits (no index is built on the whole table for a check), and the results stand.
    unsliced = IndexingSystem(open_engine(collection, "sqlite", cache_dir=tmp_path / "unsliced"), slices=False)
    assert [unsliced.query_result(query, configuration).work for query, configuration in questions] == expected
    counters = unsliced.counters
    assert counters.work_checks_deferred > 0 and counters.work_checks >= WORK_CHECKS
    assert counters.builds_for_programs + counters.builds_for_representatives <= WORK_CHECKS + counters.works_declined
    unsliced.close()

    wrong_at_once = IndexingSystem(_SkewedEngine(open_engine(collection, "sqlite", cache_dir=tmp_path / "once"),
                                                 wrong_from=1))
    with pytest.warns(RuntimeWarning, match="measured from now on"):
        works = [wrong_at_once.query_result(query, configuration).work for query, configuration in questions]
    assert wrong_at_once.counters.works_counted == 0 and wrong_at_once.counters.work_checks == 1
    assert works == expected
    wrong_at_once.close()

    wrong_later = IndexingSystem(_SkewedEngine(open_engine(collection, "sqlite", cache_dir=tmp_path / "later"),
                                               wrong_from=2 * WORK_CHECKS))
    try:
        with pytest.raises(SystemFailure, match="WIELD_COUNTED_WORK=0"):
            for query, configuration in questions:
                wrong_later.query_result(query, configuration)
        assert wrong_later.counters.works_counted > 0
    finally:
        wrong_later.close()
