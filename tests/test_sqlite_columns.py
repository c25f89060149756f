"""A table's columns as arrays (sqlite_columns.py): the boundary rows of groups computed from them are the
rows SQLite's own GROUP BY finds, and the arrays kept beside a cached base database are loaded, not read
again, by later engines (and read again when damaged)."""

from __future__ import annotations

import random
import shutil

from case_studies.indexing.build import open_engine
from case_studies.indexing.engines.sqlite import SQLiteEngine
from case_studies.indexing.engines.sqlite_columns import TableColumns
from tests.test_sqlite_index_size import FIELDS, odd_table
from workloads import generate_imdb_collection


def sql_boundaries(conn, groups: tuple[str, ...], field: str) -> set[tuple]:
    """(group values, 'min'/'max'/'null', the field's value) of every boundary row, by GROUP BY scans."""
    by = ", ".join(f'"{name}"' for name in groups)
    keys = f"{by}, " if groups else ""
    group_by = f" GROUP BY {by}" if groups else ""
    found = set()
    for how in ("min", "max"):
        for row in conn.execute(f'SELECT {keys}{how}("{field}") FROM t{group_by}'):
            if row[-1] is not None:
                found.add((tuple(row[:-1]), how, row[-1]))
    for row in conn.execute(f'SELECT {keys}count(*) FROM t WHERE "{field}" IS NULL{group_by}'):
        if row[-1]:
            found.add((tuple(row[:-1]), "null", None))
    return found


def array_boundaries(conn, columns: TableColumns, groups: tuple[str, ...], field: str) -> set[tuple]:
    """The same, from the rows ``group_boundary_rowids`` gives (which is min, max or null told by value)."""
    found = set()
    rowids = columns.group_boundary_rowids(groups, field)
    assert len(rowids) == len(set(rowids))
    keys = "".join(f'"{name}", ' for name in groups)
    for rowid in rowids:
        row = conn.execute(f'SELECT {keys}"{field}" FROM t WHERE rowid = ?', (rowid,)).fetchone()
        group, value = tuple(row[:-1]), row[-1]
        if value is None:
            found.add((group, "null", None))
            continue
        where = " AND ".join(f'"{name}" IS ?' for name in groups) or "1"
        low, high = conn.execute(f'SELECT min("{field}"), max("{field}") FROM t WHERE {where}', group).fetchone()
        assert value in (low, high), (rowid, group, value, low, high)
        found.update((group, how, value) for how, bound in (("min", low), ("max", high)) if value == bound)
    return found


def test_group_boundary_rows_are_those_group_by_finds(tmp_path):
    conn = odd_table(tmp_path / "odd.sqlite", 2_000, 4096)
    columns = TableColumns(conn, "t", {field: f'"{field}"' for field in FIELDS})
    rng = random.Random(3)
    cases = [((), field) for field in FIELDS]
    cases += [(tuple(rng.sample([f for f in FIELDS if f != field], rng.randint(1, 2))), field)
              for field in FIELDS for _ in range(3)]
    for groups, field in cases:
        assert array_boundaries(conn, columns, groups, field) == sql_boundaries(conn, groups, field), (groups, field)
    conn.close()


def test_boundary_rows_pick_the_first_row_of_each_kind(tmp_path):
    """Among rows with equal values, the first by rowid: a deterministic choice, whatever the scan order."""
    conn = odd_table(tmp_path / "odd.sqlite", 500, 4096)
    columns = TableColumns(conn, "t", {field: f'"{field}"' for field in FIELDS})
    rowids = columns.group_boundary_rowids((), "small")
    expected = [conn.execute(f'SELECT min(rowid) FROM t WHERE "small" = (SELECT {how}("small") FROM t)').fetchone()[0]
                for how in ("min", "max")]
    expected.append(conn.execute('SELECT min(rowid) FROM t WHERE "small" IS NULL').fetchone()[0])
    assert list(rowids) == expected
    conn.close()


def test_columns_are_kept_beside_the_base_database_and_reread_when_damaged(tmp_path):
    collection = generate_imdb_collection(3_000, seed=0)
    first = open_engine(collection, "sqlite", workdir=tmp_path / "work", cache_dir=tmp_path / "cache")
    columns = first.table_columns()
    expected = {field: columns.column(field).rank.copy() for field in ("title_type", "start_year")}
    boundaries = first.group_boundary_rowids(("title_type",), "start_year")
    first.close()
    kept = sorted(path.name for path in (tmp_path / "cache").glob("*.columns-*/*.npz"))
    assert kept == ["column-start_year.npz", "column-title_type.npz", "rowids.npz"]

    second = open_engine(collection, "sqlite", workdir=tmp_path / "work", cache_dir=tmp_path / "cache")
    statements = []
    second._conn.set_trace_callback(statements.append)
    loaded = second.table_columns()
    assert (loaded.column("title_type").rank == expected["title_type"]).all()
    assert second.group_boundary_rowids(("title_type",), "start_year") == boundaries
    assert not [sql for sql in statements if "dense_rank" in sql or "ORDER BY rowid" in sql]  # nothing read

    damaged = next((tmp_path / "cache").glob("*.columns-*/column-start_year.npz"))
    damaged.write_bytes(damaged.read_bytes()[:100])
    second.close()
    third = open_engine(collection, "sqlite", workdir=tmp_path / "work", cache_dir=tmp_path / "cache")
    assert (third.table_columns().column("start_year").rank == expected["start_year"]).all()
    assert damaged.stat().st_size > 100  # read again and rewritten
    third.close()


def test_columns_are_read_when_their_directory_cannot_be_used(tmp_path):
    conn = odd_table(tmp_path / "odd.sqlite", 300, 4096)
    fields = {field: f'"{field}"' for field in FIELDS}
    expected = TableColumns(conn, "t", fields).column("small").rank
    kept = TableColumns(conn, "t", fields, directory=tmp_path / "kept")
    shutil.rmtree(tmp_path / "kept")  # e.g. removed with a rebuilt base database's stale arrays
    assert (kept.column("small").rank == expected).all()
    (tmp_path / "file").write_text("")
    blocked = TableColumns(conn, "t", fields, directory=tmp_path / "file" / "kept")  # no directory can be made
    assert blocked.directory is None and (blocked.column("small").rank == expected).all()
    conn.close()


def test_a_rebuilt_base_database_removes_the_columns_of_other_contents_only(tmp_path):
    collection = generate_imdb_collection(1_000, seed=0)
    engine = open_engine(collection, "sqlite", workdir=tmp_path / "work", cache_dir=tmp_path / "cache")
    engine.table_columns().column("genre")
    engine.close()
    kept = next((tmp_path / "cache").glob("*.columns-*"))
    stale = kept.with_name(kept.name.rsplit("-", 1)[0] + "-0123456789abcdef")  # an earlier content's
    stale.mkdir()
    reopened = open_engine(collection, "sqlite", workdir=tmp_path / "work", cache_dir=tmp_path / "cache")
    reopened.close()
    assert stale.is_dir()  # opening an engine leaves the cache as it is
    base = SQLiteEngine.base_database(collection, tmp_path / "cache")
    with open(base, "ab") as damage:  # a damaged base database no longer matches its record: rebuilt
        damage.write(b"\0")
    SQLiteEngine.base_database(collection, tmp_path / "cache", rebuild=True)  # the same content again
    assert not stale.exists() and (kept / "column-genre.npz").is_file()
