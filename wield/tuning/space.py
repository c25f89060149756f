"""The search space of ``wield tune``: which ``[agent]`` hyperparameters the study samples, and from where.

A space is a table of hyperparameter names (the learner's ``[agent]`` keys, ``wield.agents.hyperparameters``)
to one of two kinds of entry, written in a file's ``[tune.space]`` table (TOML; YAML and JSON hold the same
table under ``tune: space:``)::

    [tune.space]
    learning_rate = {low = 1e-5, high = 1e-2, log = true}    # a float range (log: sampled on a log scale)
    epsilon_decay_steps = {low = 100, high = 2000}           # an integer range (both bounds integers)
    target_sync_every = {low = 8, high = 64, step = 8}       # a range on a grid of ``step``
    gamma = {choices = [0.9, 0.95, 0.99]}                    # one of these values
    hidden_sizes = {choices = [[64], [64, 64], [128, 128]]}  # values may be lists or tables

A range's bounds are numbers with ``low < high``; ``log`` (default false) needs ``low > 0`` and no ``step``; a
range whose bounds are both integers samples integers. ``choices`` is a non-empty list of distinct values.
Anything else (another key in an entry, a bare value, ``low`` above ``high``, a name the learner does not
take, a bound the learner refuses) is a one-line ``ConfigError`` naming ``tune.space.KEY`` and what it allows.

``default_space(learner)`` is the built-in space of a learner (``DEFAULT_SPACES``: DQN and DQfD, the
indexing case study's learners); other learners need a file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from wield.errors import ConfigError

SPACE_FIELD = "tune.space"
RANGE_KEYS = ("low", "high", "log", "step")
CHOICE_KEYS = ("choices",)
_PRIMITIVE = (bool, int, float, str)

# The built-in spaces, as a [tune.space] table would give them: around the defaults of DQNConfig
# (learning_rate 1e-4, batch_size 16, hidden_sizes [128, 128], gamma 0.99, epsilon_decay_steps 500,
# target_sync_every 24), each a factor of 3-100 either side.
_DQN_SPACE: dict[str, dict[str, Any]] = {
    "learning_rate": {"low": 1e-5, "high": 1e-2, "log": True},
    "batch_size": {"choices": [16, 32, 64]},
    "hidden_sizes": {"choices": [[64], [64, 64], [128, 128]]},
    "gamma": {"choices": [0.9, 0.95, 0.99]},
    "epsilon_decay_steps": {"low": 100, "high": 2000, "log": True},
    "target_sync_every": {"low": 8, "high": 128, "log": True},
}
DEFAULT_SPACES: dict[str, dict[str, dict[str, Any]]] = {"dqn": _DQN_SPACE, "dqfd": _DQN_SPACE}


@dataclass(frozen=True)
class Dimension:
    """One hyperparameter's entry: a range (``low``, ``high``, ``log``, ``step``) or ``choices``."""

    name: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple[Any, ...] | None = None

    @property
    def kind(self) -> str:
        """``"choices"``, ``"int"`` (both bounds integers) or ``"float"``."""
        if self.choices is not None:
            return "choices"
        return "int" if isinstance(self.low, int) and isinstance(self.high, int) else "float"

    def labels(self) -> list[Any]:
        """What Optuna records for each choice: the value itself when it is a plain number, text or boolean,
        else its JSON text (Optuna's categorical parameters hold only such values)."""
        assert self.choices is not None
        if all(isinstance(c, _PRIMITIVE) for c in self.choices):
            return list(self.choices)
        return [json.dumps(c) for c in self.choices]

    def value(self, recorded: Any) -> Any:
        """The hyperparameter's value for what Optuna recorded (a choice's label, or the number)."""
        if self.choices is None:
            return recorded
        return self.choices[self.labels().index(recorded)]

    def suggest(self, trial: Any) -> Any:
        """Sample this dimension in the Optuna ``trial``; returns the hyperparameter's value."""
        if self.choices is not None:
            return self.value(trial.suggest_categorical(self.name, self.labels()))
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low or 0), int(self.high or 0), log=self.log,
                                     step=int(self.step) if self.step is not None else 1)
        return trial.suggest_float(self.name, float(self.low or 0), float(self.high or 0), log=self.log,
                                   step=None if self.step is None else float(self.step))

    def as_table(self) -> dict[str, Any]:
        """The entry as a ``[tune.space]`` table holds it."""
        if self.choices is not None:
            return {"choices": list(self.choices)}
        table: dict[str, Any] = {"low": self.low, "high": self.high}
        if self.log:
            table["log"] = True
        if self.step is not None:
            table["step"] = self.step
        return table

    def describe(self) -> str:
        if self.choices is not None:
            return f"{self.name} in {json.dumps(list(self.choices))}"
        scale = ", log" if self.log else f", step {self.step}" if self.step is not None else ""
        return f"{self.name} in [{self.low}, {self.high}]{scale}"


Space = dict[str, Dimension]


def parse_space(table: Any) -> Space:
    """The dimensions of a ``[tune.space]`` table, each entry checked (module docstring)."""
    if not isinstance(table, Mapping) or not table:
        raise ConfigError(SPACE_FIELD, table, reason="must be a non-empty table of hyperparameter = "
                                                     "{low = .., high = ..} or {choices = [..]}")
    return {str(name): _dimension(str(name), entry) for name, entry in table.items()}


def _dimension(name: str, entry: Any) -> Dimension:
    field = f"{SPACE_FIELD}.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError(field, entry, reason="must be a table: {low = .., high = .., log = true|false, "
                                               "step = ..} or {choices = [..]}")
    keys = set(entry)
    if "choices" in keys:
        if keys - set(CHOICE_KEYS):
            raise ConfigError(field, dict(entry), CHOICE_KEYS, reason=f"a choice entry takes only 'choices' "
                                                                      f"(not {', '.join(sorted(keys - {'choices'}))})")
        return _choices(name, field, entry["choices"])
    unknown = sorted(keys - set(RANGE_KEYS))
    if unknown:
        raise ConfigError(field, dict(entry), RANGE_KEYS + CHOICE_KEYS, reason=f"unknown key '{unknown[0]}'")
    if "low" not in keys or "high" not in keys:
        raise ConfigError(field, dict(entry), reason="a range needs both 'low' and 'high' (or give 'choices')")
    low, high, log, step = entry["low"], entry["high"], entry.get("log", False), entry.get("step")
    for bound, value in (("low", low), ("high", high), ("step", step)):
        if value is None and bound == "step":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{field}.{bound}", value, reason="must be a finite number")
    if not isinstance(log, bool):
        raise ConfigError(f"{field}.log", log, (True, False))
    if not low < high:
        raise ConfigError(field, dict(entry), reason=f"'low' ({low}) must be below 'high' ({high})")
    if log and low <= 0:
        raise ConfigError(f"{field}.low", low, reason="must be > 0 with log = true")
    if log and step is not None:
        raise ConfigError(f"{field}.step", step, reason="cannot be combined with log = true")
    if step is not None and step <= 0:
        raise ConfigError(f"{field}.step", step, reason="must be > 0")
    integers = isinstance(low, int) and isinstance(high, int)
    if integers and step is not None and not isinstance(step, int):
        raise ConfigError(f"{field}.step", step, reason="must be an integer when 'low' and 'high' are integers")
    return Dimension(name, low, high, log, step)


def _choices(name: str, field: str, choices: Any) -> Dimension:
    if not isinstance(choices, list) or not choices:
        raise ConfigError(f"{field}.choices", choices, reason="must be a non-empty list of values")
    texts = [json.dumps(c, sort_keys=True) for c in choices]
    if len(set(texts)) != len(texts):
        raise ConfigError(f"{field}.choices", choices, reason="lists a value twice")
    if any(c is None for c in choices):
        raise ConfigError(f"{field}.choices", choices, reason="holds null (an unset value is not a choice)")
    return Dimension(name, choices=tuple(choices))


def default_space(learner: str) -> Space:
    """The built-in space of ``learner``; a ``ConfigError`` naming the learners that have one otherwise."""
    if learner not in DEFAULT_SPACES:
        raise ConfigError("space", None, reason=f"the learner '{learner}' has no built-in search space: give "
                                                f"--space FILE with a [tune.space] table (built-in spaces: "
                                                f"{', '.join(DEFAULT_SPACES)})")
    return parse_space(DEFAULT_SPACES[learner])


def read_space(path: str) -> Space:
    """The ``[tune.space]`` table of the TOML, YAML or JSON file ``path`` (``wield.cli.config_file``)."""
    from wield.cli.config_file import read_config_file

    data = read_config_file(path)
    tune = data.get("tune")
    if not isinstance(tune, Mapping) or "space" not in tune:
        raise ConfigError("space", path, reason="the file has no [tune.space] table (tune: space: in YAML)")
    extra = sorted(set(tune) - {"space"})
    if extra:
        raise ConfigError(f"tune.{extra[0]}", tune[extra[0]], ("space",),
                          reason="not a key of [tune] (the other settings are flags of wield tune)")
    return parse_space(tune["space"])


def check_space(space: Space, learner: str, block: Mapping[str, Any] | None = None) -> None:
    """Refuse names ``learner`` does not take and bounds or choices it refuses (each tried alone over the
    base ``[agent]`` block ``block``), before any trial runs."""
    from wield.agents import hyperparameters

    allowed = hyperparameters.hyperparameter_keys(learner)
    for name, dimension in space.items():
        if name not in allowed:
            raise ConfigError(f"{SPACE_FIELD}.{name}", dimension.as_table(), allowed,
                              reason=f"not a hyperparameter of {learner}")
        values = list(dimension.choices) if dimension.choices is not None else [dimension.low, dimension.high]
        for value in values:
            try:
                hyperparameters.check(learner, {**dict(block or {}), learner: {name: value}})
            except (ConfigError, ValueError, TypeError) as exc:
                raise ConfigError(f"{SPACE_FIELD}.{name}", value, reason=f"{learner} refuses it ({exc})") from None


def space_table(space: Space) -> dict[str, dict[str, Any]]:
    """``space`` as a ``[tune.space]`` table (what ``tune.json`` records)."""
    return {name: dimension.as_table() for name, dimension in space.items()}
