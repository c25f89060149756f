"""A learner's hyperparameters from a configuration's ``agent`` block (``wield run NAME --config FILE.toml``
with ``[agent]``, ``--set agent.learning_rate=3e-4``), checked against the learner's own keys.

The block maps keys to values; a sub-table named after a learner (``[agent.dqn]``, ``[agent.sb3-ppo]``)
holds values for that learner only, so one block serves a comparison of several learners. The keys:

- ``dqn``: the fields of ``DQNConfig`` (``learning_rate``, ``batch_size``, ``hidden_sizes``, ``gamma``,
  ``epsilon_decay_steps``, ...); ``dqfd``: those of ``DQfDConfig`` (DQN's plus ``expert_margin``, ...);
- ``ppo``: the fields of ``PPOConfig``;
- ``sb3-ppo``, ``sb3-maskable-ppo``, ``sb3-a2c``, ``sb3-dqn``: the keyword arguments of the
  Stable-Baselines3 class's constructor (``learning_rate``, ``n_steps``, ``ent_coef``, ``policy_kwargs``,
  ...), except those Wield sets itself (``policy``, ``env``, ``seed``, ``device``, ``verbose``,
  ``tensorboard_log``: use ``--log tensorboard``).

An unknown key is a ``ConfigError`` naming it and the learner's keys; values are checked by the
configuration class (``DQNConfig``, ``PPOConfig``) or, for SB3, by ``wield.agents.sb3_checks`` (bounds, then
a model built once so the library's own checks run before any work).
A case study adds its own learners with ``register_learner(name, config_class)``.
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, fields
from typing import Any, Mapping

from wield.errors import ConfigError

_SB3_SET_BY_WIELD = {"self", "policy", "env", "seed", "device", "verbose", "tensorboard_log", "_init_setup_model",
                     "kwargs", "args"}


_REGISTERED: dict[str, type] = {}


def register_learner(name: str, config_class: type) -> None:
    """Let an ``agent`` block configure a case study's own learner ``name`` through the dataclass
    ``config_class`` (its fields are the keys; a ``validate()`` method, when it has one, checks the values),
    e.g. placement's ``wield`` grouper/placer with ``WieldPlacerConfig``."""
    _REGISTERED[name] = config_class


def _config_classes() -> dict[str, type]:
    from wield.agents.dqfd import DQfDConfig
    from wield.agents.dqn_config import DQNConfig
    from wield.agents.ppo import PPOConfig

    return {"dqn": DQNConfig, "dqfd": DQfDConfig, "ppo": PPOConfig, **_REGISTERED}


def learners() -> tuple[str, ...]:
    """Every learner whose hyperparameters an ``agent`` block may set."""
    from wield.agents.sb3_classes import SB3_ALGORITHMS

    return tuple(_config_classes()) + tuple(SB3_ALGORITHMS)


def hyperparameter_keys(learner: str) -> tuple[str, ...]:
    """The keys ``learner`` accepts (for SB3 this imports the library)."""
    classes = _config_classes()
    if learner in classes:
        return tuple(f.name for f in fields(classes[learner]))
    from wield.agents.sb3_classes import SB3_ALGORITHMS, import_sb3_class

    if learner not in SB3_ALGORITHMS:
        raise ConfigError("agent", learner, learners(), reason="no hyperparameters are known for this learner")
    signature = inspect.signature(import_sb3_class(learner))  # the constructor's parameters
    return tuple(name for name in signature.parameters if name not in _SB3_SET_BY_WIELD)


def for_learner(learner: str, block: Mapping[str, Any] | None) -> dict[str, Any]:
    """The values of ``block`` that apply to ``learner`` (its top-level values and its own sub-table),
    checked against ``learner``'s keys; a sub-table naming no learner is an error too."""
    if not block:
        return {}
    if not isinstance(block, Mapping):
        raise ConfigError("agent", block, reason="must be a table of hyperparameters")
    known = learners()
    values: dict[str, Any] = {}
    for key, value in block.items():
        if isinstance(value, Mapping) and key in known:
            continue
        if isinstance(value, Mapping) and key != "policy_kwargs":
            raise ConfigError(f"agent.{key}", dict(value), known, reason="a sub-table of [agent] names a learner")
        values[key] = value
    own = block.get(learner)
    values.update(dict(own) if isinstance(own, Mapping) else {})
    allowed = hyperparameter_keys(learner)
    for key, value in values.items():
        if key not in allowed:
            raise ConfigError(f"agent.{key}", value, allowed, reason=f"not a hyperparameter of {learner}")
    return values


def make_config(learner: str, block: Mapping[str, Any] | None, base: Any = None) -> Any:
    """``DQNConfig`` / ``DQfDConfig`` / ``PPOConfig`` of ``learner``: ``base`` (default: the class's
    defaults) with ``block``'s values for it, validated."""
    classes = _config_classes()
    if learner not in classes:
        raise ConfigError("agent", learner, tuple(classes), reason="not a learner with a configuration class")
    cls = classes[learner]
    values = for_learner(learner, block)
    start = asdict(base) if base is not None else {}
    config = cls(**{**start, **values})
    validate = getattr(config, "validate", None)
    return validate() if callable(validate) else config


def check(learner: str, block: Mapping[str, Any] | None) -> None:
    """Refuse a block that does not fit ``learner`` (before anything runs)."""
    if learner in _config_classes():
        make_config(learner, block)
    else:
        values = for_learner(learner, block)
        if values:  # SB3: Wield's bounds, then the library's own checks on a model built once (sb3_checks)
            from wield.agents.sb3_checks import check_values

            check_values(learner, values)
