"""SearchSpace: a case study's configuration space for black-box optimisers (OpenTuner, random search).

A learner acts step by step through a schema's action heads; an optimiser proposes a whole configuration
at once. A case study that wants optimiser baselines describes its configuration as named integer and
categorical parameters; ``wield.agents`` optimisers search that space and the case study decodes a
configuration (a ``dict`` parameter name -> value) into a system configuration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from wield.errors import ConfigError


@dataclass(frozen=True)
class IntegerParameter:
    """An integer in ``[low, high]`` (both inclusive)."""

    name: str
    low: int
    high: int

    def __post_init__(self) -> None:
        if int(self.high) < int(self.low):
            raise ConfigError(f"{self.name}.high", self.high, reason=f"must be >= low ({self.low})")

    @property
    def size(self) -> int:
        return int(self.high) - int(self.low) + 1

    def contains(self, value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
            and int(self.low) <= int(value) <= int(self.high)

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(int(self.low), int(self.high) + 1))

    def describe(self) -> str:
        return f"integer {self.low}..{self.high}"


@dataclass(frozen=True)
class CategoricalParameter:
    """One of ``options`` (JSON-serialisable values)."""

    name: str
    options: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.options:
            raise ConfigError(f"{self.name}.options", list(self.options), reason="needs at least one option")

    @property
    def size(self) -> int:
        return len(self.options)

    def contains(self, value: Any) -> bool:
        return value in self.options

    def sample(self, rng: np.random.Generator) -> Any:
        return self.options[int(rng.integers(len(self.options)))]

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)


Parameter = IntegerParameter | CategoricalParameter


class SearchSpace:
    """An ordered set of named parameters; a configuration assigns every one of them a value."""

    def __init__(self, parameters: Iterable[Parameter]) -> None:
        self.parameters: tuple[Parameter, ...] = tuple(parameters)
        if not self.parameters:
            raise ConfigError("search space", [], reason="needs at least one parameter")
        names = [p.name for p in self.parameters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError("search space", duplicates[0], reason="parameter names must be unique")
        self._by_name = {p.name: p for p in self.parameters}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def __getitem__(self, name: str) -> Parameter:
        return self._by_name[name]

    def __len__(self) -> int:
        return len(self.parameters)

    def log10_size(self) -> float:
        """log10 of the number of configurations (the count itself overflows quickly)."""
        return float(sum(math.log10(p.size) for p in self.parameters))

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """A configuration drawn uniformly from the space."""
        return {p.name: p.sample(rng) for p in self.parameters}

    def validate(self, configuration: Mapping[str, Any]) -> dict[str, Any]:
        """``configuration`` as a plain dict in parameter order; a missing, unknown or out-of-range value is
        a ``ConfigError`` naming the parameter and what it allows."""
        unknown = sorted(set(configuration) - set(self._by_name))
        if unknown:
            raise ConfigError("configuration", unknown[0], self.names)
        result = {}
        for p in self.parameters:
            if p.name not in configuration:
                raise ConfigError(p.name, None, reason=f"missing; expected {p.describe()}")
            value = configuration[p.name]
            if not p.contains(value):
                raise ConfigError(p.name, value, reason=f"expected {p.describe()}")
            result[p.name] = int(value) if isinstance(p, IntegerParameter) else value
        return result

    def describe(self) -> list[dict[str, Any]]:
        """A JSON-serialisable description (saved in run records)."""
        return [{"name": p.name, "type": "integer", "low": int(p.low), "high": int(p.high)}
                if isinstance(p, IntegerParameter) else
                {"name": p.name, "type": "categorical", "options": list(p.options)} for p in self.parameters]
