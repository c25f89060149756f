"""The Wield placer: a task graph of two PPO learners, a grouper and a placer, with incremental rewards.

- ``grouper`` (PPO, higher learning rate, its own update schedule) assigns every operation to one of
  ``n_groups`` groups; it starts from the layer-major blocks (a fixed prior added to its logits, which
  also keeps its entropy low, so it has no entropy bonus).
- ``placer`` (PPO) acts on the grouper's decision: it assigns every group to a device with a
  permutation-invariant network embedding each group by summing properties of its neighbouring groups.
- Incremental rewards: an episode has two steps. Step one places a random half of the groups and keeps
  the rest on their current devices, then measures; step two places the other half, then measures. Each
  measurement is one graph evaluation; the reward is ``-step_time / reference`` (the sequential compute
  time on the fastest device), and an invalid (out-of-memory) placement earns ``-invalid_penalty``.

During step two the grouper's grouping is kept (its mask forces every operation's group), so the grouper
learns from whole episodes and the placer from each half.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from case_studies.placement.features import GROUP_FEATURES, OP_FEATURES, GraphView, group_view
from case_studies.placement.networks import GrouperNetwork, PlacerNetwork
from case_studies.placement.system import PlacementSystem
from wield.agents.ppo import PPOAgent, PPOConfig
from wield.errors import ConfigError
from wield.seeding import derive_seed, make_rng
from wield.agents import hyperparameters
from wield.tasks import Task, TaskGraph


@dataclass
class WieldPlacerConfig:
    n_groups: int = 0  # 0: min(256, 20 x devices), as the grappler baseline
    grouper_learning_rate: float = 3e-2
    placer_learning_rate: float = 1e-2
    grouper_update_episodes: int = 8
    placer_update_episodes: int = 4
    epochs: int = 4
    entropy_coef: float = 0.01
    invalid_penalty: float = 5.0
    prior_width: float = 0.3

    def validate(self) -> "WieldPlacerConfig":
        if not isinstance(self.n_groups, int) or self.n_groups < 0:
            raise ConfigError("n_groups", self.n_groups, reason="an integer >= 0 (0 = min(256, 20 x devices))")
        for name in ("grouper_update_episodes", "placer_update_episodes", "epochs"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(name, getattr(self, name), reason="an integer >= 1")
        return self


def default_groups(n_devices: int) -> int:
    return min(256, 20 * n_devices)


hyperparameters.register_learner("wield", WieldPlacerConfig)  # a config file's [agent] block (or [agent.wield])


class WieldPlacer:
    """The grouper/placer task graph and the loop that trains it against placement systems."""

    def __init__(self, n_devices: int, config: WieldPlacerConfig | None = None, seed: int = 0) -> None:
        self.config = (config or WieldPlacerConfig()).validate()
        self.n_devices = n_devices
        self.n_groups = self.config.n_groups or default_groups(n_devices)
        self.seed = seed
        c = self.config
        grouper = PPOAgent(lambda: GrouperNetwork(OP_FEATURES, self.n_groups),
                           PPOConfig(learning_rate=c.grouper_learning_rate, epochs=c.epochs,
                                     entropy_coef=0.0), seed=derive_seed(seed, "grouper"))
        placer = PPOAgent(lambda: PlacerNetwork(GROUP_FEATURES, n_devices),
                          PPOConfig(learning_rate=c.placer_learning_rate, epochs=c.epochs,
                                    entropy_coef=c.entropy_coef), seed=derive_seed(seed, "placer"))
        self.tasks = TaskGraph([
            Task("grouper", grouper, preprocess=self._grouper_input, update_every=2 * c.grouper_update_episodes),
            Task("placer", placer, preprocess=self._placer_input, mask_fn=self._placer_mask,
                 update_every=2 * c.placer_update_episodes),
        ], edges=[("grouper", "placer")])
        self._rng = make_rng(seed, "wield-placer", "halves")
        self._place_rng = make_rng(seed, "wield-placer", "sampled-halves")
        self._current: dict[int, np.ndarray] = {}  # per graph: the devices its groups were last placed on
        self._views: dict[int, tuple[GraphView, np.ndarray]] = {}
        self.history: list[dict[str, float]] = []

    # ------------------------------------------------------------------------ task input / output
    def view(self, system: PlacementSystem) -> tuple[GraphView, np.ndarray]:
        key = id(system.graph)
        if key not in self._views:
            view = GraphView.build(system.graph)
            self._views[key] = (view, view.prior_logits(self.n_groups, self.config.prior_width))
        return self._views[key]

    def _grouper_input(self, observation: dict[str, Any], parents: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"features": observation["view"].features, "prior": observation["prior"]}

    def _placer_input(self, observation: dict[str, Any], parents: dict[str, Any]) -> dict[str, np.ndarray]:
        features, adjacency = group_view(observation["view"], parents["grouper"], self.n_groups)
        current = np.eye(self.n_devices, dtype=np.float32)[observation["current"]]
        return {"features": features, "adjacency": adjacency, "current": current}

    def _placer_mask(self, observation: dict[str, Any], parents: dict[str, Any]) -> np.ndarray:
        mask = np.zeros((self.n_groups, self.n_devices), dtype=bool)
        mask[observation["free"]] = True
        kept = ~observation["free"]
        mask[np.flatnonzero(kept), observation["current"][kept]] = True
        return mask

    def _forced_grouping(self, groups: np.ndarray) -> np.ndarray:
        mask = np.zeros((groups.size, self.n_groups), dtype=bool)
        mask[np.arange(groups.size), groups] = True
        return mask

    # ------------------------------------------------------------------------------------ training
    def _reward(self, system: PlacementSystem, result) -> float:
        if not result.valid:
            return -self.config.invalid_penalty
        return -result.step_time / system.reference_time

    def _halves(self, rng) -> np.ndarray:
        """Which groups the first step of an episode places (a random half); the second places the rest."""
        return rng.permutation(self.n_groups) < self.n_groups // 2

    def _initial_devices(self, system: PlacementSystem) -> np.ndarray:
        """Where a graph's groups start: the devices training left them on, or (a graph training never saw)
        random devices, as training starts."""
        key = id(system.graph)
        if key not in self._current:
            rng = make_rng(self.seed, "wield-placer", "start", system.graph.fingerprint())
            self._current[key] = rng.integers(0, self.n_devices, self.n_groups)
        return self._current[key]

    def return_of(self, system: PlacementSystem, result) -> float:
        """The return of one complete placement: its reward, ``-step_time / reference`` (-``invalid_penalty``
        for an invalid one); what the training curve, the greedy policy and random placements are compared in."""
        return self._reward(system, result)

    def train(self, systems: Sequence[PlacementSystem], budget: int, progress=None) -> None:
        """Train until ``budget`` graph evaluations have been spent (round-robin over ``systems``)."""
        # where each graph's groups start (drawn up front); a graph counts as seen once an episode placed it
        start = {id(system.graph): self._rng.integers(0, self.n_devices, self.n_groups) for system in systems}
        spent = 0
        episode = 0
        while spent + 2 <= budget:
            system = systems[episode % len(systems)]
            view, prior = self.view(system)
            first_half = self._halves(self._rng)
            devices = self._current.get(id(system.graph), start[id(system.graph)])
            observation = {"view": view, "prior": prior, "current": devices, "free": first_half}
            outputs = self.tasks.act(observation)
            groups = outputs["grouper"]
            devices = np.asarray(outputs["placer"])
            result = system.measure(devices[groups])
            observation = {"view": view, "prior": prior, "current": devices, "free": ~first_half}
            self.tasks.observe(self._reward(system, result), observation, terminated=False)
            outputs = self.tasks.act(observation, masks={"grouper": self._forced_grouping(groups)})
            devices = np.asarray(outputs["placer"])
            second = system.measure(devices[outputs["grouper"]])
            self._current[id(system.graph)] = devices
            self.tasks.observe(self._reward(system, second), observation, terminated=True)
            spent += 2
            episode += 1
            self.history.append({"episode": episode, "step_time_ms": second.step_time * 1e3,
                                 "valid": float(second.valid), "return": self._reward(system, second),
                                 "decisions": 2})  # two steps: each half of the groups placed
            if progress is not None:
                progress(2)

    def place(self, system: PlacementSystem, explore: bool = False) -> np.ndarray:
        """The policy's placement of ``system``'s graph (greedy by default); does not measure.

        It plays an episode as training does, from a state training shows: the groups start on the devices
        training left them on (random devices for a graph training never saw), the policy places a random
        half of the groups, then the other half with the grouping kept. The greedy placement draws its
        halves from a fixed seed, so it is the same on every call; sampled placements draw new halves."""
        view, prior = self.view(system)
        rng = make_rng(self.seed, "wield-placer", "greedy-halves") if not explore else self._place_rng
        first_half = self._halves(rng)
        current = self._initial_devices(system)
        observation = {"view": view, "prior": prior, "current": current, "free": first_half}
        outputs = self.tasks.act(observation, explore=explore)
        groups = outputs["grouper"]
        devices = np.asarray(outputs["placer"])
        observation = {"view": view, "prior": prior, "current": devices, "free": ~first_half}
        outputs = self.tasks.act(observation, masks={"grouper": self._forced_grouping(groups)}, explore=explore)
        self.tasks.reset()
        return np.asarray(outputs["placer"])[outputs["grouper"]]

    def state_dict(self) -> dict[str, Any]:
        return self.tasks.state_dict()
