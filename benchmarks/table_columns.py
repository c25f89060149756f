"""Benchmark: what the SQLite adapter computes from the table's columns, against asking SQLite, side by side.

On one generated collection (1,000,000 documents by default) this prints, from one run:

1. reading the table's columns (``sqlite_columns.py``) from the table, and loading them again from beside
   the cached base database, as every later process does;
2. the boundary rows of skip-scan slices (for every group of some fields' values, a row with another
   field's smallest value, one with its largest and one where it is NULL): by ``GROUP BY`` scans of the
   table against computed from the columns, for random (groups, field) pairs, and a check that both find the
   same (group, value) pairs;
3. index sizes and ``sqlite_stat1`` lines: ``CREATE INDEX`` + ``ANALYZE`` + ``dbstat`` against computed
   (``sqlite_index_size.py``), for random indexes of one to three keys, and a check that they are equal;
4. the work of programs that force one index (the workload's queries, each with random indexes of one or
   two of its fields, or a field it does not constrain first: a skip-scan): executed on the index built on
   the whole table, measured on a slice of the table (``sqlite_slice.py``, slices kept and reused as the
   adapter does), and counted (``sqlite_work_model.py``), with a check that every count equals the
   execution. Build times are not included in the executed figure.

Usage: python benchmarks/table_columns.py [--documents N] [--pairs P] [--indexes I] [--programs Q] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.index_spec import IndexSpec
from workloads import QueryWorkloadConfig, generate_imdb_collection
from workloads.query_generator import QueryWorkloadGenerator


def scanned_boundaries(conn, table: str, groups: tuple[str, ...], field: str) -> set[tuple]:
    """(group values, field value) of every group's smallest, largest and NULL row, by GROUP BY scans."""
    table = f'"{table}"'
    by = ", ".join(f'"{name}"' for name in groups)
    keys, group_by = (f"{by}, ", f" GROUP BY {by}") if groups else ("", "")
    found = set()
    for how in ("min", "max"):
        found.update(tuple(row) for row in conn.execute(f'SELECT {keys}{how}("{field}") FROM {table}{group_by}'))
    found.update((*row[:-1], None) for row in conn.execute(
        f'SELECT {keys}count(*) FROM {table} WHERE "{field}" IS NULL{group_by}') if row[-1])
    return found


def values_of(conn, table: str, groups: tuple[str, ...], field: str, rowids) -> set[tuple]:
    keys = "".join(f'"{name}", ' for name in groups)
    return {tuple(conn.execute(f'SELECT {keys}"{field}" FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone())
            for rowid in rowids}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=10, help="random (groups, field) pairs for boundary rows")
    parser.add_argument("--indexes", type=int, default=10, help="random indexes for sizes")
    parser.add_argument("--programs", type=int, default=60, help="(query, index) programs for work")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="wield-bench-") as scratch:
        collection = generate_imdb_collection(args.documents, args.seed)
        fields = list(collection.field_names)
        engine = open_engine(collection, "sqlite", workdir=f"{scratch}/work", cache_dir=f"{scratch}/cache")
        print(f"{args.documents:,} documents, {len(fields)} columns; seed {args.seed}")

        started = time.perf_counter()
        for field in fields:
            engine.table_columns().column(field)
        read = time.perf_counter() - started
        again = open_engine(collection, "sqlite", workdir=f"{scratch}/work", cache_dir=f"{scratch}/cache")
        started = time.perf_counter()
        for field in fields:
            again.table_columns().column(field)
        loaded = time.perf_counter() - started
        again.close()
        print(f"columns: read from the table {read:.1f} s, loaded from beside the base database {loaded:.2f} s "
              f"({read / loaded:.0f}x)")

        pairs = [(tuple(rng.sample([f for f in fields if f != field], rng.randint(0, 2))), field)
                 for field in rng.sample(fields, min(args.pairs, len(fields)))]
        base = SQLiteEngine.base_database(collection, f"{scratch}/cache")  # the engine's content, read only here
        conn = sqlite3.connect(f"file:{base}?mode=ro", uri=True)
        scan_s = computed_s = 0.0
        same_boundaries = 0
        for groups, field in pairs:
            started = time.perf_counter()
            scanned = scanned_boundaries(conn, engine.table, groups, field)
            scan_s += time.perf_counter() - started
            started = time.perf_counter()
            rowids = engine.group_boundary_rowids(groups, field)
            computed_s += time.perf_counter() - started
            same_boundaries += values_of(conn, engine.table, groups, field, rowids) == scanned
        print(f"boundary rows, {len(pairs)} (groups, field) pairs: GROUP BY scans {scan_s / len(pairs):.3f} s "
              f"a pair, from the columns {computed_s / len(pairs):.3f} s ({scan_s / computed_s:.1f}x); "
              f"same (group, value) pairs: {same_boundaries} of {len(pairs)}")

        specs = [IndexSpec(tuple((field, rng.choice(("asc", "desc"))) for field in rng.sample(fields, rng.randint(1, 3))))
                 for _ in range(args.indexes)]
        build_s = computed_s = 0.0
        same = 0
        for spec in specs:
            started = time.perf_counter()
            engine.create_index(spec)  # with ANALYZE
            built = (engine.index_size(spec), engine.index_statistics(spec))
            build_s += time.perf_counter() - started
            engine.drop_index(spec)
            started = time.perf_counter()
            geometry = engine.index_geometry(spec)
            computed_s += time.perf_counter() - started
            same += built == (geometry.bytes, geometry.statistics)
        print(f"index sizes and statistics, {len(specs)} indexes: built {build_s / len(specs):.3f} s an index, "
              f"computed {computed_s / len(specs):.3f} s ({build_s / computed_s:.1f}x); equal: {same} of {len(specs)}")
        conn.close()
        counted_right, counted_all = compare_work(engine, collection, rng, args.programs)
        engine.close()
        return 0 if same == len(specs) and same_boundaries == len(pairs) and counted_right == counted_all else 1


def compare_work(engine, collection, rng: random.Random, programs: int) -> tuple[int, int]:
    """Section 4: (programs counted equal to their execution, programs counted)."""
    queries = QueryWorkloadGenerator(collection, QueryWorkloadConfig(n_queries=20)).generate(rng.randrange(1000))
    fields = list(collection.field_names)
    chosen = []
    while len(chosen) < programs:
        query = rng.choice(queries)
        own = query.attributes()
        leading = rng.choice(own) if rng.random() < 0.6 else rng.choice(["title_type", "is_adult", "genre", "region"])
        second = rng.choice([field for field in fields if field != leading])
        chosen.append((query, IndexSpec(((leading, rng.choice(("asc", "desc"))), (second, "asc")))))
    slices = engine.table_slices()
    started = time.perf_counter()  # the model's one-off per process: each column's distinct values, by SQLite
    engine.work_model().prepare(fields)
    tables_s = time.perf_counter() - started
    executed_s = sliced_s = counted_s = 0.0
    counted = right = sliced = 0
    both: list[tuple[float, float]] = []  # (slice, count) seconds of programs both served
    for query, spec in chosen:
        engine.create_index(spec)
        program = engine.program(query, spec.name)
        started = time.perf_counter()
        executed = engine.run_query(query, repetitions=0, force=spec.name)
        executed_s += time.perf_counter() - started
        before_count = counted_s
        started = time.perf_counter()
        result = engine.program_work(query, (spec,), program)
        counted_s += time.perf_counter() - started
        statistics = {spec: engine.index_statistics(spec)}
        engine.drop_index(spec)
        before_slice = sliced_s
        started = time.perf_counter()
        on_slice = slices.program(query, (spec,), statistics)
        slice_result = slices.run(query, (spec,)) if on_slice is not None else None
        sliced_s += time.perf_counter() - started
        sliced += slice_result is not None
        if result is not None:
            counted += 1
            right += (result.work, result.rows) == (executed.work, executed.rows)
            if slice_result is not None:
                both.append((sliced_s - before_slice, counted_s - before_count))
    slices.close()
    print(f"work of {len(chosen)} programs forcing one index: executed on the built index {executed_s / len(chosen):.3f} s "
          f"a program (the build not included), on slices {sliced_s / len(chosen):.3f} s ({sliced} served, "
          f"{slices.made} slices made), counted {counted_s / len(chosen):.3f} s after {tables_s:.1f} s once for "
          f"the distinct-value tables; counted {counted}, equal to the execution: {right} of {counted}")
    if both:
        slice_total, count_total = sum(pair[0] for pair in both), sum(pair[1] for pair in both)
        print(f"  the {len(both)} programs both served: slices {slice_total / len(both):.3f} s a program, counted "
              f"{count_total / len(both):.3f} s ({slice_total / count_total:.1f}x)")
    return right, counted


if __name__ == "__main__":
    raise SystemExit(main())
