"""Stable-Baselines3 hyperparameters checked before any work: Wield's bounds on the keys it knows, then the
library's own checks, run by building the model once on a spaces-only environment.

Stable-Baselines3 checks few values itself and late: a ``learning_rate`` of ``inf`` or text trains for
minutes and then fails (or trains nothing), an ``n_steps`` of 0 fails inside the first rollout. Here every
key with a known meaning must be a value of its kind within bounds (a ``ConfigError`` naming
``agent.<key>``, the value and what is allowed), and a model is then built with the values (a tiny replay
buffer stands in for a large one), so the constructor's own assertions (``batch_size > 1``, the policy's
keyword arguments) refuse a bad block at the same moment, as a usage error naming the class and its message.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

from wield.configs import is_finite_number, is_integer
from wield.errors import ConfigError

MAX_STEPS = 10_000_000  # the most steps, samples or epochs a count may name
MAX_LAYER = 65_536  # the widest hidden layer
MAX_LAYERS = 64

# key -> (kind, low, high): "number" a finite number (low exclusive when "number>"), "integer", "fraction"
# a number in [0, 1], "bool", "optional-number>" None or a finite number > 0
_BOUNDS: dict[str, tuple[str, float | None, float | None]] = {
    "learning_rate": ("number>", 0, None),
    "gamma": ("fraction", 0, 1),
    "gae_lambda": ("fraction", 0, 1),
    "ent_coef": ("number", 0, None),
    "vf_coef": ("number", 0, None),
    "max_grad_norm": ("number>", 0, None),
    "clip_range": ("number>", 0, None),
    "clip_range_vf": ("optional-number>", 0, None),
    "target_kl": ("optional-number>", 0, None),
    "rms_prop_eps": ("number>", 0, None),
    "tau": ("fraction", 0, 1),
    "exploration_fraction": ("fraction", 0, 1),
    "exploration_initial_eps": ("fraction", 0, 1),
    "exploration_final_eps": ("fraction", 0, 1),
    "n_steps": ("integer", 1, MAX_STEPS),
    "batch_size": ("integer", 1, MAX_STEPS),
    "n_epochs": ("integer", 1, 100_000),
    "buffer_size": ("integer", 1, MAX_STEPS),
    "learning_starts": ("integer", 0, MAX_STEPS),
    "gradient_steps": ("integer", -1, 100_000),
    "target_update_interval": ("integer", 1, MAX_STEPS),
    "stats_window_size": ("integer", 1, 100_000),
    "sde_sample_freq": ("integer", -1, MAX_STEPS),
    "normalize_advantage": ("bool", None, None),
    "use_sde": ("bool", None, None),
    "use_rms_prop": ("bool", None, None),
}
_CHECK_BUFFER = 64  # the replay buffer of the model built only to run the library's checks


def check_values(algorithm: str, values: Mapping[str, Any]) -> None:
    """Refuse a value of ``values`` outside Wield's bounds for its key (see ``_BOUNDS``), then build
    ``algorithm``'s model once with them so that the library's own checks run now."""
    for key, value in values.items():
        if key in _BOUNDS:
            _check_bound(key, value, *_BOUNDS[key])
    if "train_freq" in values:
        frequency = values["train_freq"]
        parts = frequency if isinstance(frequency, (list, tuple)) else [frequency]
        if not (parts and is_integer(parts[0]) and 1 <= parts[0] <= MAX_STEPS):
            raise ConfigError("agent.train_freq", frequency, reason=f"must be an integer in [1, {MAX_STEPS:,}] "
                                                                    "(or [n, 'step'|'episode'])")
    if "policy_kwargs" in values:
        _check_policy_kwargs(values["policy_kwargs"])
    _build_once(algorithm, values)


def _check_bound(key: str, value: Any, kind: str, low: float | None, high: float | None) -> None:
    field = f"agent.{key}"
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(field, value, [True, False])
        return
    if kind == "integer":
        assert low is not None and high is not None
        if not (is_integer(value) and low <= value <= high):
            raise ConfigError(field, value, reason=f"must be an integer in [{low:g}, {high:,.0f}]")
        return
    if kind == "optional-number>" and value is None:
        return
    ok = is_finite_number(value)
    if ok and low is not None:
        ok = value > low if kind.endswith(">") else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        if kind == "fraction":
            allowed = "a number in [0, 1]"
        else:
            allowed = f"a finite number {'>' if kind.endswith('>') else '>='} {low:g}"
            allowed += ", or None" if kind.startswith("optional") else ""
        raise ConfigError(field, value, reason=f"must be {allowed}")


def _check_policy_kwargs(kwargs: Any) -> None:
    if not isinstance(kwargs, Mapping):
        raise ConfigError("agent.policy_kwargs", kwargs, reason="must be a table of the policy's keyword arguments")
    architecture = kwargs.get("net_arch")
    if architecture is None:
        return
    layers = [*architecture.values()] if isinstance(architecture, Mapping) else [architecture]
    sizes = [size for layer in layers for size in (layer if isinstance(layer, (list, tuple)) else [layer])]
    if not (len(sizes) <= MAX_LAYERS and all(is_integer(s) and 1 <= s <= MAX_LAYER for s in sizes)):
        raise ConfigError("agent.policy_kwargs.net_arch", architecture, reason=(
            f"must be a list of at most {MAX_LAYERS} layer widths, each an integer in [1, {MAX_LAYER:,}] "
            "(or a table of such lists: pi, vf, qf)"))


def _build_once(algorithm: str, values: Mapping[str, Any]) -> None:
    """Build ``algorithm``'s model on a spaces-only environment with ``values`` (a small replay buffer); what
    its constructor refuses is a ``ConfigError``."""
    import gymnasium as gym
    import numpy as np

    from wield.agents.sb3_classes import import_sb3_class

    class _Spaces(gym.Env):  # spaces only: the model is built, never trained
        def __init__(self, observation_space: gym.spaces.Space, action_space: gym.spaces.Space) -> None:
            self.observation_space, self.action_space = observation_space, action_space

    from stable_baselines3.common.vec_env import DummyVecEnv

    cls = import_sb3_class(algorithm)
    observation, action = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32), gym.spaces.Discrete(2)
    spaces = DummyVecEnv([lambda: _Spaces(observation, action)] * 2)  # 2 environments, as few as a run has
    trial = dict(values)
    if "buffer_size" in trial:
        trial["buffer_size"] = min(int(trial["buffer_size"]), _CHECK_BUFFER)
        trial["learning_starts"] = min(int(trial.get("learning_starts", 0)), _CHECK_BUFFER)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # advice about the real run's sizes (n_steps * n_envs / batch_size)
            cls("MlpPolicy", spaces, device="cpu", verbose=0, **trial)
    except (AssertionError, ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
        message = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise ConfigError("agent", dict(values), reason=f"{cls.__name__} (Stable-Baselines3) refuses these "
                                                        f"hyperparameters: {message}") from None
