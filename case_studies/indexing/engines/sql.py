"""Translate engine-neutral queries into parameterised SQL (shared by the SQLite and PostgreSQL adapters).

Values are always bound parameters, never formatted into the text. Identifiers (the table and field names)
are validated against the collection's fields and double-quoted, so a value containing quotes or SQL
syntax is data, and an unknown field is an error naming the allowed fields.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from wield.errors import ConfigError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")  # fullmatch: "$" would accept a trailing newline
_COMPARISONS = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def quote_identifier(name: str) -> str:
    """Double-quote a validated identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ConfigError("identifier", name, reason="only letters, digits and underscores, at most 63 characters, "
                                                     "not starting with a digit")
    return f'"{name}"'


class SQLTranslator:
    """Builds SQL for one table with known fields; ``placeholder`` is '?' (SQLite) or '%s' (psycopg)."""

    def __init__(self, table: str, fields: Iterable[str], placeholder: str = "?") -> None:
        self.table = quote_identifier(table)
        self.fields = tuple(fields)
        self._field_set = set(self.fields)
        self.placeholder = placeholder

    def column(self, field: str) -> str:
        if field not in self._field_set:
            raise ConfigError("query.field", field, self.fields)
        return quote_identifier(field)

    def predicate(self, predicate) -> tuple[str, list[Any]]:
        """SQL text and bound values of one predicate."""
        column, p = self.column(predicate.field), self.placeholder
        if predicate.op in _COMPARISONS:
            return f"{column} {_COMPARISONS[predicate.op]} {p}", [predicate.value]
        if predicate.op == "between":
            low, high = predicate.value
            return f"{column} BETWEEN {p} AND {p}", [low, high]
        if predicate.op == "in":
            values = list(predicate.value)
            if not values:
                raise ConfigError("query.in", values, reason="'in' needs at least one value")
            return f"{column} IN ({', '.join([p] * len(values))})", values
        raise ConfigError("query.op", predicate.op, [*_COMPARISONS, "between", "in"])

    def select(self, query, table_hint: str = "") -> tuple[str, list[Any]]:
        """SQL text and parameters for a workloads.Query; ``table_hint`` follows the table name (SQLite's
        ``INDEXED BY "name"`` or ``NOT INDEXED``, built by the engine, never from user input)."""
        clauses, params = [], []
        for predicate in query.predicates:
            text, values = self.predicate(predicate)
            clauses.append(text)
            params.extend(values)
        if query.logic not in ("and", "or"):
            raise ConfigError("query.logic", query.logic, ("and", "or"))
        where = f" WHERE {f' {query.logic.upper()} '.join(clauses)}" if clauses else ""
        table = f"{self.table} {table_hint}" if table_hint else self.table
        if query.aggregate == "count":
            return f"SELECT COUNT(*) FROM {table}{where}", params
        if query.aggregate is not None:
            raise ConfigError("query.aggregate", query.aggregate, (None, "count"))
        sql = f"SELECT * FROM {table}{where}"
        if query.sort:
            keys = []
            for key in query.sort:
                if key.direction not in ("asc", "desc"):
                    raise ConfigError("query.sort.direction", key.direction, ("asc", "desc"))
                keys.append(f"{self.column(key.field)} {key.direction.upper()}")
            sql += " ORDER BY " + ", ".join(keys)
        if query.limit is not None:
            sql += f" LIMIT {self.placeholder}"
            params.append(int(query.limit))
        return sql, params

    def create_index(self, spec, name: str | None = None) -> str:
        keys = ", ".join(f"{self.column(f)} {d.upper()}" for f, d in spec.keys)
        return f"CREATE INDEX IF NOT EXISTS {quote_identifier(name or spec.name)} ON {self.table} ({keys})"

    def create_table(self, columns: Sequence[tuple[str, str]]) -> str:
        body = ", ".join(f"{quote_identifier(name)} {sql_type}" for name, sql_type in columns)
        return f"CREATE TABLE {self.table} ({body})"

    def insert(self) -> str:
        columns = ", ".join(quote_identifier(f) for f in self.fields)
        return f"INSERT INTO {self.table} ({columns}) VALUES ({', '.join([self.placeholder] * len(self.fields))})"
