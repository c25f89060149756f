"""The progressive randomisation classes C0-C6 (docs/design.md section 4).

Each class fixes what is deterministic in an experiment:

| class | evaluation     | workload instances                 | test distribution | optimisation seeds |
|-------|----------------|------------------------------------|-------------------|--------------------|
| C0    | blackbox       | one fixed task for every trial     | in                | fixed              |
| C1    | blackbox       | one fixed task for every trial     | in                | random             |
| C2    | blackbox       | a new task per trial               | in                | random             |
| C3    | generalisation | fixed training seeds and test set  | in                | random             |
| C4    | generalisation | new training and test sets / trial | in                | random             |
| C5    | generalisation | fixed, out-of-distribution test    | out               | random             |
| C6    | generalisation | new out-of-distribution test/trial | out               | random             |

Blackbox: train and evaluate on the same instance. Generalisation: train on a distribution of instances (a
new one each episode) and test on others.
"""

from __future__ import annotations

from dataclasses import dataclass

from wield.errors import ConfigError


@dataclass(frozen=True)
class RandomisationClass:
    """What one class fixes and what it randomises."""

    name: str
    generalisation: bool
    randomised_workload: bool
    out_of_distribution: bool
    random_optimisation_seed: bool
    use: str

    @property
    def mode(self) -> str:
        return "generalisation" if self.generalisation else "blackbox"

    @property
    def level(self) -> int:
        return int(self.name[1:])


CLASSES: dict[str, RandomisationClass] = {c.name: c for c in (
    RandomisationClass("C0", False, False, False, False, "iterate on the representation"),
    RandomisationClass("C1", False, False, False, True, "sensitivity to initialisation"),
    RandomisationClass("C2", False, True, False, True, "sensitivity to task parameters"),
    RandomisationClass("C3", True, False, False, True, "sample requirements"),
    RandomisationClass("C4", True, True, False, True, "production in controlled environments"),
    RandomisationClass("C5", True, False, True, True, "robustness to unforeseen inputs"),
    RandomisationClass("C6", True, True, True, True, "production without customisation"),
)}


def get_class(name: str) -> RandomisationClass:
    """The class called ``name`` (case-insensitive), or a ConfigError listing the classes."""
    key = str(name).upper()
    if key not in CLASSES:
        raise ConfigError("class", name, list(CLASSES))
    return CLASSES[key]
