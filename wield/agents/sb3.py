"""Stable-Baselines3 and sb3-contrib algorithms as Wield agents: reference learners from a well-kept library.

``SB3Agent(algorithm, observation_space, action_space, seed=..., budget=...)`` wraps one of ``SB3_ALGORITHMS``:

- ``sb3-ppo``: Stable-Baselines3 PPO (ignores action masks: an invalid head value reaches the environment,
  which must cope, e.g. the indexing converter treats it as a no-op);
- ``sb3-maskable-ppo``: sb3-contrib MaskablePPO, sampling only the actions ``action_masks()`` allows;
- ``sb3-a2c``: Stable-Baselines3 A2C (no masks);
- ``sb3-dqn``: Stable-Baselines3 DQN, for a single ``Discrete`` action space only (SB3's DQN has no
  ``MultiDiscrete`` actions); any other space is a ``ConfigError`` naming the algorithms that fit.

Training runs the library's own loop (``model.learn``) on the environment's standard view
(``wield.envs.StandardView``: ``MultiDiscrete``/``Discrete`` actions, a flat ``Box`` observation,
``action_masks()``). ``wield.workflows.train_online`` hands such an agent the environment
(``EnvironmentLearner``) and still gets one ``EpisodeResult`` per episode, so run records, curves and the
best-configuration tracking work as for Wield's DQN. Budget accounting is the same as DQN's: one environment
step is one transition and one system evaluation; training stops after exactly the requested episodes (an
on-policy rollout cut short by the budget is not used for an update). ``act`` is the trained policy as a
Wield agent: named heads in, named heads out (``explore=False``: the deterministic policy; masks respected by
MaskablePPO).

Hyperparameters are the library's defaults except where they are in units of the budget (the run's
transitions, ``budget``): PPO/MaskablePPO collect ``budget // 20`` steps per rollout (between 8 and 2,048;
mini-batches of at most 64), so they update 20 times in the budget; DQN follows Wield's DQN schedule
(epsilon 1.0 -> 0.05 over 500 transitions, target sync every 24, learning starts after 16, a replay buffer
holding the whole budget). ``hyperparameters`` overrides any constructor argument of the SB3 class.

Seeds: the library's generators (python, numpy's global, torch's global, the action space) are seeded from
``derive_seed(seed, "sb3")`` (reduced to 32 bits, as numpy's legacy seeding requires) when the model is
built and again when training starts, so equal seeds and inputs give equal runs. SB3 writes no logs: the
model's logger has no output format (no ``/tmp/SB3-*`` directories), except in a tracked trial
(``--log tensorboard,mlflow``), where its one output format forwards to the trial's trackers (``silence``).

Stable-Baselines3 is an optional extra, imported only when an ``SB3Agent`` is built: without it the error
is one line saying ``pip install 'wield[sb3]'``.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np

from wield.agents.optimizers import with_exact_adam
from wield.agents.base import Action, ActionMask, EnvironmentLearner, Observation, RewardFn
from wield.agents.heads import ActionHeads
from wield.agents.sb3_classes import INSTALL_HINT, SB3_ALGORITHMS, SB3_NOTES, import_sb3_class
from wield.errors import ConfigError
from wield.seeding import derive_seed

__all__ = ["SB3Agent", "SB3_ALGORITHMS", "SB3_NOTES", "INSTALL_HINT", "import_sb3_class", "check_fits",
           "fitting_algorithms", "default_hyperparameters", "rollout_steps", "silence", "library_seed",
           "standard_spaces"]

def fitting_algorithms(action_space: gym.spaces.Space) -> tuple[str, ...]:
    """The SB3 algorithms whose action spaces take ``action_space``'s standard view."""
    heads = ActionHeads.from_space(action_space)
    return tuple(name for name in SB3_ALGORITHMS if name != "sb3-dqn" or heads.single)


def check_fits(algorithm: str, action_space: gym.spaces.Space) -> None:
    """Raise ``ConfigError`` when ``algorithm`` cannot act in ``action_space`` (SB3 DQN: Discrete only)."""
    if algorithm not in SB3_ALGORITHMS:
        raise ConfigError("agent", algorithm, tuple(SB3_ALGORITHMS))
    fitting = fitting_algorithms(action_space)
    if algorithm not in fitting:
        heads = ActionHeads.from_space(action_space)
        raise ConfigError("agent", algorithm, fitting, reason=(
            f"Stable-Baselines3 DQN needs a single Discrete action space; this environment's actions are a Dict of "
            f"{len(heads.sizes)} heads (MultiDiscrete({list(heads.sizes.values())}) in the standard view)"))


def rollout_steps(budget: int) -> int:
    """On-policy rollout length for a budget of transitions: about 20 updates in the budget, within [8, 2048];
    the largest such length that divides the budget when there is one, so the last rollout is complete."""
    target = int(min(2048, max(8, budget // 20)))
    divisors = [steps for steps in range(target, 7, -1) if budget % steps == 0]
    return divisors[0] if divisors else target


def default_hyperparameters(algorithm: str, budget: int) -> dict[str, Any]:
    """The constructor arguments that depend on the budget (see the module docstring)."""
    if algorithm in ("sb3-ppo", "sb3-maskable-ppo"):
        steps = rollout_steps(budget)
        return {"n_steps": steps, "batch_size": min(64, steps)}
    if algorithm == "sb3-dqn":
        return {"buffer_size": max(budget, 1000), "learning_starts": 16, "target_update_interval": 24,
                "exploration_initial_eps": 1.0, "exploration_final_eps": 0.05,
                "exploration_fraction": min(1.0, 500 / max(budget, 1))}
    return {}


def silence(model: Any) -> Any:
    """Give a Stable-Baselines3 model a logger that writes nothing anywhere; returns the model. (The library's
    default logger makes a ``/tmp/SB3-<time>`` folder at every ``learn`` call.) In a tracked trial
    (``wield run|compare --log ...``, ``wield.tracking``) the logger's only output is the trial's trackers:
    what the library records (``train/loss``, ``train/entropy_loss``, ``rollout/...``) goes to them as
    ``sb3/<key>`` at the library's timestep count; still no files of its own."""
    from stable_baselines3.common.logger import KVWriter, Logger

    from wield.tracking import active

    active_session = active()
    if active_session is None:
        model.set_logger(Logger(folder=None, output_formats=[]))
        return model
    session = active_session

    class TrackerOutput(KVWriter):
        """SB3's logger output format that forwards the recorded numbers to Wield's trackers."""

        def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
            session.log_scalars({f"sb3/{key}": value for key, value in key_values.items()}, step)

        def close(self) -> None:
            pass

    model.set_logger(Logger(folder=None, output_formats=[TrackerOutput()]))
    return model


def library_seed(seed: int) -> int:
    """The 32-bit seed given to Stable-Baselines3 for a Wield seed."""
    return derive_seed(seed, "sb3") % 2**32


class _Spaces(gym.Env):
    """An environment that only declares spaces: the model is built before it sees the real environment."""

    def __init__(self, observation_space: gym.spaces.Space, action_space: gym.spaces.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # pragma: no cover
        raise RuntimeError("a spaces-only environment cannot be played")

    def step(self, action: Any):  # pragma: no cover
        raise RuntimeError("a spaces-only environment cannot be played")


def standard_spaces(observation_space: gym.spaces.Space,
                    action_space: gym.spaces.Space) -> tuple[gym.spaces.Space, gym.spaces.Space]:
    """The observation and action spaces of ``wield.envs.StandardView`` for these Wield spaces."""
    from wield.envs.standard import StandardView

    view = StandardView(_Spaces(observation_space, action_space))
    assert isinstance(view.observation_space, gym.spaces.Box)  # the standard view always flattens to a Box
    return view.observation_space, view.action_space


class _EpisodeRecorder(gym.Wrapper):
    """Between the Wield environment and its standard view: plays the schedule's episodes in order (SB3 resets
    without options), builds each episode's ``EpisodeResult`` and stops touching the system once the requested
    episodes are done (the vector environment's automatic reset then costs nothing)."""

    def __init__(self, env: gym.Env, start_episode: int, episodes: int,
                 on_episode: Callable[[Any], None]) -> None:
        super().__init__(env)
        self.next_episode, self.end = start_episode, start_episode + episodes
        self.on_episode = on_episode
        self.transitions = 0
        self._steps: list[Any] = []
        self._total = 0.0
        self._started = 0.0
        self._last: tuple[Any, dict[str, Any]] | None = None

    @property
    def finished(self) -> bool:
        return self.next_episode >= self.end

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if self.finished and self._last is not None:
            return self._last  # the budget is spent: no further episode starts on the system
        observation, info = self.env.reset(options={"episode": self.next_episode})
        self._steps, self._total = [], float(info.get("skipped_reward", 0.0))
        self._started = time.perf_counter()
        return observation, info

    def step(self, action: Any):
        from wield.workflows.training import EpisodeResult, StepRecord

        observation, reward, terminated, truncated, info = self.env.step(action)
        self.transitions += 1
        self._steps.append(StepRecord(len(self._steps), float(reward), info.get("system_action"),
                                      info.get("system_state"), info.get("metrics", {})))
        self._total += float(reward)
        if terminated or truncated:
            episode = int(info.get("episode_index", self.next_episode))
            self.next_episode += 1
            self._last = (observation, {"action_mask": info.get("action_mask")})
            self.on_episode(EpisodeResult(episode, self._total, self._steps, time.perf_counter() - self._started))
        return observation, reward, terminated, truncated, info


class _TaskReward(gym.Wrapper):
    """Outside the episode recorder: the library is rewarded with the task's ``reward_fn(reward, info)``."""

    def __init__(self, env: gym.Env, reward_fn: RewardFn) -> None:
        super().__init__(env)
        self.reward_fn = reward_fn

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, float(self.reward_fn(float(reward), info)), terminated, truncated, info


class SB3Agent(EnvironmentLearner):
    """A Stable-Baselines3 / sb3-contrib algorithm trained on the standard view, acting as a Wield agent."""

    def __init__(self, algorithm: str, observation_space: gym.spaces.Space, action_space: gym.spaces.Space, *,
                 seed: int = 0, budget: int, hyperparameters: Mapping[str, Any] | None = None) -> None:
        check_fits(algorithm, action_space)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
            raise ConfigError("budget", budget, reason="must be an integer >= 1 (transitions)")
        cls = import_sb3_class(algorithm)
        self.algorithm, self.budget, self.seed = algorithm, budget, int(seed)
        self.observation_space, self.action_space = observation_space, action_space
        self.heads = ActionHeads.from_space(action_space)
        self.uses_masks = SB3_ALGORITHMS[algorithm][2]
        self.hyperparameters = {**default_hyperparameters(algorithm, budget), **dict(hyperparameters or {})}
        spaces_only = _Spaces(*standard_spaces(observation_space, action_space))
        settings = {**self.hyperparameters,  # Adam with an exact square root: the same steps on every CPU
                    "policy_kwargs": with_exact_adam(self.hyperparameters.get("policy_kwargs"))}
        self.model = cls("MlpPolicy", spaces_only, seed=library_seed(self.seed), device="cpu", verbose=0,
                         **settings)
        silence(self.model)
        self._steps_observed = 0

    # ----------------------------------------------------------------------------------------- training
    def learn_episodes(self, env: gym.Env, episodes: int, *, start_episode: int = 0,
                       on_episode: Callable[[Any], None], reward_fn: RewardFn | None = None) -> None:
        """Train with the library's loop on ``env``'s standard view for exactly ``episodes`` episodes (on
        ``reward_fn(reward, info)`` when given; the episodes are reported with the environment's rewards)."""
        from stable_baselines3.common.callbacks import BaseCallback

        from wield.envs.standard import StandardView

        recorder = _EpisodeRecorder(env, start_episode, episodes, on_episode)
        trained_on: gym.Env = recorder if reward_fn is None else _TaskReward(recorder, reward_fn)
        class StopAfterEpisodes(BaseCallback):
            """Ends the library's loop at the last episode's last step. An on-policy rollout that the step
            completes is still trained on when the loop ends after it anyway (the budget is reached)."""

            def _on_step(self) -> bool:
                if not recorder.finished:
                    return True
                target = self.locals.get("n_rollout_steps")
                complete = target is not None and int(self.locals.get("n_steps", 0)) + 1 >= int(target)
                return complete and self.num_timesteps >= self.model._total_timesteps

        self.model.set_env(StandardView(trained_on))
        self.model.set_random_seed(library_seed(self.seed))
        first = True
        while not recorder.finished:  # episodes longer than the budget says: go on until they are done
            self.model.learn(total_timesteps=self.budget if first else max(1, self.budget // 10),
                             callback=StopAfterEpisodes(), reset_num_timesteps=first, progress_bar=False)
            first = False
        self._steps_observed += recorder.transitions

    # ------------------------------------------------------------------------------------------- acting
    def act(self, observation: Observation, explore: bool = True, mask: ActionMask = None) -> Action:
        flat = np.asarray(gym.spaces.flatten(self.observation_space, observation), dtype=np.float32)
        kwargs = {"action_masks": self.heads.flat_mask(mask)} if self.uses_masks else {}
        action, _ = self.model.predict(flat, deterministic=not explore, **kwargs)
        values = np.asarray(action, dtype=np.int64).reshape(-1)
        return self.heads.join_action(dict(zip(self.heads.sizes, (int(v) for v in values), strict=True)))

    # -------------------------------------------------------------------------------------- persistence
    def state_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "policy": self.model.policy.state_dict(),
                "hyperparameters": {k: v for k, v in self.hyperparameters.items()
                                    if isinstance(v, (int, float, str, bool))},
                "steps_observed": self._steps_observed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("algorithm") != self.algorithm:
            raise ConfigError("algorithm", state.get("algorithm"), (self.algorithm,),
                              reason="the saved model is of another algorithm")
        self.model.policy.load_state_dict(state["policy"])
        self._steps_observed = int(state.get("steps_observed", 0))
