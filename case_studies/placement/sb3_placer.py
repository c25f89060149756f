"""Stable-Baselines3 reference placers (``sb3-ppo``, ``sb3-maskable-ppo``, ``sb3-a2c``): a library learner on the
registered placement environment (``env.py``: one decision per episode, a device for each layer-major group,
measured once on the simulator), trained for the run's budget of graph evaluations.

One environment step is one graph evaluation, as for the other placers, so the budget is charged identically.
With several training graphs (generalisation classes) episode i places graph ``i mod len(graphs)``
(round-robin, as the Wield placer trains). ``place`` is the trained policy's placement of any graph of the
same topology (the group count depends only on the devices), greedy by default; it does not measure.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np

from case_studies.placement.env import system_placement_env
from case_studies.placement.system import PlacementSystem
from wield.agents.sb3 import SB3Agent
from wield.envs import WieldEnv
from wield.workflows import EpisodeResult, train_online


class _RoundRobin(gym.Env):
    """Episode i is an episode of ``envs[i mod len(envs)]`` (same spaces: same topology and group count)."""

    def __init__(self, envs: Sequence[WieldEnv]) -> None:
        self.envs = list(envs)
        self.observation_space, self.action_space = envs[0].observation_space, envs[0].action_space
        self.current = self.envs[0]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        episode = int((options or {}).get("episode", 0))
        self.current = self.envs[episode % len(self.envs)]
        observation, info = self.current.reset(options={"episode": 0})
        return observation, {**info, "episode_index": episode}

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.current.step(action)
        return observation, reward, terminated, truncated, info


class SB3Placer:
    """A Stable-Baselines3 algorithm (``wield.agents.sb3``) placing the groups of a graph on devices."""

    def __init__(self, algorithm: str, n_devices: int, seed: int = 0,
                 hyperparameters: Mapping[str, Any] | None = None) -> None:
        self.algorithm, self.n_devices, self.seed = algorithm, n_devices, int(seed)
        self.hyperparameters = dict(hyperparameters or {})  # keyword arguments of the SB3 class
        self.agent: SB3Agent | None = None
        # per training episode (one graph evaluation): step time, validity and the return, on the scale of
        # the placement verdict (``learning.py``: -step time / reference, INVALID_REWARD when it overflows)
        self.history: list[dict[str, float]] = []

    def train(self, systems: Sequence[PlacementSystem], budget: int,
              progress: Callable[[int], Any] | None = None) -> None:
        """Spend ``budget`` graph evaluations (one per episode) training on ``systems`` in turn."""
        envs = [system_placement_env(system) for system in systems]
        self.agent = SB3Agent(self.algorithm, envs[0].observation_space, envs[0].action_space, seed=self.seed,
                              budget=budget, hyperparameters=self.hyperparameters)
        env = envs[0] if len(envs) == 1 else _RoundRobin(envs)

        def on_episode(result: EpisodeResult) -> None:
            metrics = result.final_metrics
            self.history.append({"episode": len(self.history) + 1, "step_time_ms": float(metrics["step_time_ms"]),
                                 "valid": float(bool(metrics["valid"])), "return": float(result.total_reward),
                                 "decisions": len(result.steps)})
            if progress is not None:
                progress(1)

        train_online(env, self.agent, budget, progress=False, on_episode=on_episode)

    def place(self, system: PlacementSystem, explore: bool = False) -> np.ndarray:
        """The policy's operation-to-device placement of ``system``'s graph; does not measure."""
        if self.agent is None:
            raise RuntimeError("train the placer before placing")
        env = system_placement_env(system)
        observation, info = env.reset()
        action = self.agent.act(observation, explore=explore, mask=info.get("action_mask"))
        adapter = env.system
        devices = env.converter.agent_to_system_action(action)
        return np.asarray(devices, dtype=np.int64)[adapter.blocks]

    @property
    def policy(self) -> SB3Agent:
        """The trained agent (its ``state_dict`` is what a run record saves as model.pt)."""
        if self.agent is None:
            raise RuntimeError("train the placer first")
        return self.agent

    def state_dict(self) -> dict[str, Any]:
        return self.policy.state_dict()
