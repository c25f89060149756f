"""``config.toml``: the command's every option and the learner's hyperparameters, written into a run record.

``wield run NAME`` writes ``config.toml`` into its run record as the record is started (with ``--class``: into
the experiment directory, not into the trials' records; ``wield.cli.experiment.run_experiment``; ``wield compare
NAME``: into the comparison directory): every
option of the command with the value the run used, defaults included (``documents = 20000``,
``metric = "work"``), and the ``[agent]`` table with the learner's hyperparameters (``wield.cli.config_file``
builds it: the values the learner used where the case study says what they are, ``CaseStudy.hyperparameters_used``,
else the ones given). ``wield run NAME --config RECORD/config.toml --out OTHER`` reruns it with the same options
(an experiment's, with ``--out`` its own directory, resumes it).
Left out, so that a rerun is not a copy of its output: ``out`` (the rerun's directory is its own), ``quiet``,
``verbose`` and ``json`` (how the command prints); an option the run left unset (``None``: TOML has no null) is
absent, which reads back as unset.

``config.json`` stays what it was (the case study's run configuration, read by ``wield reproduce``); the
command line that started the run is in ``run.json``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
from typing import Any, Iterator, Mapping

CONFIG_TOML = "config.toml"
HEADER = ("# Every option of this command (defaults included) and its learner's hyperparameters ([agent]).\n"
          "# Rerun it: wield {command} {case_study} --config config.toml --out OTHER_DIR   (flags given override it)\n")

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_TABLE: contextvars.ContextVar[tuple[str, str, dict[str, Any]] | None] = contextvars.ContextVar(
    "wield_command_config", default=None)


@contextlib.contextmanager
def recording_command_config(case_study: str | None, table: Mapping[str, Any] | None,
                             command: str = "run") -> Iterator[None]:
    """The first run record started in this context (``RunRecord.start``), or the experiment or comparison
    directory that takes it first (``pending_command_config``), gets ``config.toml`` with ``table`` of
    ``wield COMMAND CASE_STUDY``; ``None`` (other commands, a reproduction) writes none."""
    token = _TABLE.set((command, str(case_study), dict(table)) if table is not None else None)
    try:
        yield
    finally:
        _TABLE.reset(token)


def pending_command_config() -> tuple[str, str] | None:
    """The ``config.toml`` text that a record started now gets, with its file name, or ``None``; it is handed
    out once (an experiment's or a rerun's later records in the same process get none)."""
    found = _TABLE.get()
    if found is None:
        return None
    _TABLE.set(None)
    command, case_study, table = found
    return CONFIG_TOML, HEADER.format(command=command, case_study=case_study) + to_toml(table)


def to_toml(table: Mapping[str, Any]) -> str:
    """``table`` as TOML: scalars and lists at the top, then each sub-table (``[agent]``) with its own
    scalars and its sub-tables (``[agent.dqn]``); ``None`` values are left out (TOML has no null)."""
    scalars = {key: value for key, value in table.items() if value is not None and not isinstance(value, Mapping)}
    tables = {key: value for key, value in table.items() if isinstance(value, Mapping)}
    lines = [f"{_key(key)} = {toml_value(value)}" for key, value in scalars.items()]
    for key, sub in tables.items():
        lines += _table([key], sub)
    return "\n".join(lines) + "\n"


def _table(path: list[str], table: Mapping[str, Any]) -> list[str]:
    nested = {k: v for k, v in table.items() if isinstance(v, Mapping) and _is_table(k, v)}
    lines = ["", f"[{'.'.join(_key(part) for part in path)}]"]
    lines += [f"{_key(k)} = {toml_value(v)}" for k, v in table.items() if k not in nested and v is not None]
    for key, sub in nested.items():
        lines += _table([*path, key], sub)
    return lines


def _is_table(key: str, value: Mapping[str, Any]) -> bool:
    """A mapping inside ``[agent]`` is a learner's sub-table, except ``policy_kwargs`` (one SB3 value)."""
    return key != "policy_kwargs"


def _key(key: Any) -> str:
    text = str(key)
    bare = text and all(c.isalnum() and c.isascii() or c in "-_" for c in text)
    return text if bare else json.dumps(text)


def toml_value(value: Any) -> str:
    """One value as TOML (``tomllib`` reads it back equal; tuples become arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_ESCAPES.get(c, f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
                             for c in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value if item is not None) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    raise TypeError(f"{type(value).__name__} value {value!r} cannot be written as TOML")
