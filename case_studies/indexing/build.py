"""Assemble the indexing task from its parts: collection -> engine -> system, schema, converter, env.

Both the experiment runner and the registered gymnasium environment build through here, so there is one
place that decides how the parts fit together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.engine import IndexingEngine
from case_studies.indexing.schema import IndexingSchema
from case_studies.indexing.sqlite_engine import SQLiteEngine
from case_studies.indexing.statistics import ColumnStatistics
from case_studies.indexing.system import IndexingSystem
from wield.envs import WieldEnv
from wield.errors import ConfigError

SYSTEMS = ("sqlite",)


@dataclass
class IndexingTask:
    """The assembled parts of one indexing task."""

    collection: object
    statistics: ColumnStatistics
    schema: IndexingSchema
    converter: IndexingConverter
    system: IndexingSystem

    def environment(self, schedule) -> WieldEnv:
        return WieldEnv(self.system, self.schema, self.converter, schedule)


def open_engine(collection, system: str = "sqlite", workdir: str | os.PathLike | None = None,
                cache_dir: str | os.PathLike | None = None) -> IndexingEngine:
    """An engine holding ``collection``, private to the caller."""
    if system == "sqlite":
        import tempfile

        return SQLiteEngine.for_collection(collection, workdir or Path(tempfile.gettempdir()), cache_dir)
    raise ConfigError("system", system, SYSTEMS)


def build_indexing_task(collection, *, k: int = 3, metric: str = "work", aggregate: str = "mean",
                        repetitions: int = 3, size_weight: float = 1.0, runtime_weight: float = 1.0,
                        system: str = "sqlite", workdir: str | os.PathLike | None = None,
                        cache_dir: str | os.PathLike | None = None, cache: bool = True) -> IndexingTask:
    """Build schema, converter and system for ``collection``; statistics are taken now (training start)."""
    statistics = ColumnStatistics.from_collection(collection)
    schema = IndexingSchema(collection.field_names, k=k,
                            column_selectivity={f: statistics.column_selectivity(f)
                                                for f in collection.field_names})
    converter = IndexingConverter(schema, statistics, size_weight=size_weight, runtime_weight=runtime_weight)
    engine = open_engine(collection, system, workdir, cache_dir)
    try:
        indexing_system = IndexingSystem(engine, metric=metric, aggregate=aggregate,
                                         repetitions=repetitions, cache=cache)
    except BaseException:
        engine.close()
        raise
    return IndexingTask(collection, statistics, schema, converter, indexing_system)
