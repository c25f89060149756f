"""MaskablePPO on the scheduling vector environment: the modelled study's training schedule in minutes.

The schedule (``thesis_schedule``): episodes of 3,000 decisions, doubling every other episode up to 60,000,
20 episodes (786,000 decisions), an evaluation after each. Here episode ``r`` is played by ``envs``
environments at once, each for ``lengths[r] / envs`` decisions of its own training instance (so the
experience per episode, and in all, is the schedule's), and its greedy policy is then evaluated on the
validation instances (``curve``, never the test) through the same vector environment; the policy of the
best evaluation is kept. Each environment's training workload is long enough for its longest episode.

The learner is sb3-contrib's ``MaskablePPO`` with its training step (``train``) unchanged; only its rollout
collection is batched (``VectorMaskablePPO.collect_rollouts``): actions are sampled from the same masked
distribution (``batched_policy.BatchedPolicy.sample``) with one network call for all environments, instead
of sb3-contrib's 24 masked ``Categorical`` objects per call (about 4.5 ms a call on one core).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from case_studies.scheduling.batched_policy import BatchedPolicy
from case_studies.scheduling.environment import episode_lengths
from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.rewards import Reward
from case_studies.scheduling.system import EpisodeTask
from case_studies.scheduling.task_design import MASK_DESIGNS
from case_studies.scheduling.tasks import DEFAULT_ENVS
from case_studies.scheduling.vector_env import SchedulingVectorEnv
from case_studies.scheduling.workload import Workload
from wield.errors import ConfigError

THESIS_FIRST, THESIS_MAX, THESIS_EPISODES = 3000, 60000, 20
# sb3-contrib MaskablePPO's settings for the vector environment: rollouts of 256 steps x 8 environments (fewer
# steps when the episodes are shorter), large minibatches (a masked distribution costs milliseconds per call
# whatever its size), a 64-64 network.
MASKABLE_SETTINGS: dict[str, Any] = {"n_steps": 256, "batch_size": 512, "n_epochs": 4, "learning_rate": 1e-3,
                                     "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.0,
                                     "policy_kwargs": {"net_arch": [64, 64]}}


def thesis_schedule(episodes: int = THESIS_EPISODES, first: int = THESIS_FIRST, maximum: int = THESIS_MAX) -> list[int]:
    """The modelled study's schedule (``environment.episode_lengths`` with its defaults): decisions per
    episode, ``first`` doubled every other episode, at most ``maximum``."""
    return episode_lengths(episodes, first, maximum)


def _vector_maskable_ppo():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

    class VectorMaskablePPO(MaskablePPO):
        """MaskablePPO whose rollouts are sampled in one batched call per step (see the module docstring)."""

        def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int, use_masking: bool = True):
            assert isinstance(rollout_buffer, MaskableRolloutBuffer) and self._last_obs is not None
            self.policy.set_training_mode(False)
            sampler = self._sampler
            rollout_buffer.reset()
            callback.on_rollout_start()
            n_steps = 0
            while n_steps < n_rollout_steps:
                masks = env.action_masks()
                with torch.no_grad():
                    observations = torch.as_tensor(self._last_obs, dtype=torch.float32)
                    actions, log_probs = sampler.sample(observations, masks)
                    values = self.policy.predict_values(observations)
                actions = actions.numpy()
                new_obs, rewards, dones, infos = env.step(actions)
                self.num_timesteps += env.num_envs
                callback.update_locals(locals())
                if not callback.on_step():
                    return False
                self._update_info_buffer(infos, dones)
                n_steps += 1
                for index in np.flatnonzero(dones):  # a training episode cut at its limit: bootstrap
                    if infos[index].get("TimeLimit.truncated", False):
                        terminal = torch.as_tensor(infos[index]["terminal_observation"][None], dtype=torch.float32)
                        with torch.no_grad():
                            rewards[index] += self.gamma * float(self.policy.predict_values(terminal)[0, 0])
                rollout_buffer.add(self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs,
                                   action_masks=masks)
                self._last_obs = new_obs
                self._last_episode_starts = dones
            with torch.no_grad():
                values = self.policy.predict_values(torch.as_tensor(new_obs, dtype=torch.float32))
            rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
            callback.on_rollout_end()
            return True

    return VectorMaskablePPO


@dataclass
class TrainingResult:
    """The kept policy (a ``BatchedPolicy`` over the model), the model, the validation score after every
    episode, the decisions trained on, and the wall seconds of training and of evaluation."""

    model: Any
    policy: BatchedPolicy
    curve: list[float] = field(default_factory=list)
    decisions: int = 0
    train_s: float = 0.0
    evaluate_s: float = 0.0
    best_episode: int = -1


def serve(policy: BatchedPolicy, workloads: Sequence[Workload], gpus: Sequence[int], reward: Reward,
          explore: bool = False, profile: BatchProfile | Sequence[BatchProfile] | None = None,
          masks: str = MASK_DESIGNS[0]) -> list[dict[str, Any]]:
    """Serve every workload to the end with ``policy`` (greedy unless ``explore``), all at once; per workload
    its serving metrics (``episode``) and ``return``. ``profile``: the execution times (the simulator's
    ``profile``; default: each workload's own); ``masks``: the mask design (``task_design.MASK_DESIGNS``)."""
    vector = SchedulingVectorEnv([[EpisodeTask(w, int(g))] for w, g in zip(workloads, gpus)], reward, profile=profile,
                                 masks=masks)
    observations = vector.reset()
    results: list[dict[str, Any] | None] = [None] * vector.num_envs
    while any(r is None for r in results):
        observations, _, dones, infos = vector.step(policy.act(observations, vector.action_masks(), explore))
        for index in np.flatnonzero(dones):
            if results[index] is None:
                results[index] = {"episode": infos[index]["serving"], "return": infos[index]["return"]}
    return results  # type: ignore[return-value]


def train_maskable_ppo(train: Callable[[int, int], Workload], gpus: int, lengths: Sequence[int], reward: Reward,
                       curve: Sequence[Workload], seed: int, envs: int = DEFAULT_ENVS,
                       hyperparameters: Mapping[str, Any] | None = None,
                       score: Callable[[list[dict[str, Any]]], float] | None = None,
                       on_episode: Callable[[int, int, float], None] | None = None,
                       model: Any = None, progress: bool | None = None,
                       profile: BatchProfile | Sequence[BatchProfile] | None = None,
                       masks: str = MASK_DESIGNS[0]) -> TrainingResult:
    """Train MaskablePPO on the schedule ``lengths`` (decisions per episode, in all environments together).

    ``train(env, episode)``: the training workload environment ``env`` plays in ``episode``; ``curve``: the
    validation workloads evaluated after every episode (score: mean SLO satisfaction, unless ``score``; of
    equal scores the later policy is kept); ``on_episode(episode, decisions, score)`` is called after each
    evaluation. ``model``: a model trained before (with as many environments) to train further (fine-tuning);
    ``hyperparameters`` then do not apply. ``progress`` shows a bar of the episodes (default: when the running
    trial may, ``wield.workflows.progress_wanted()``). ``profile``: the execution times of training and
    validation (the simulator's ``profile``; default: each workload's own). ``masks``: the mask design of
    training and validation (``task_design.MASK_DESIGNS``: fit, the default, late or late-idle); play the policy with the
    same design."""
    if isinstance(envs, bool) or not isinstance(envs, int) or envs < 1:
        raise ConfigError("envs", envs, reason="must be an integer >= 1")
    per_env = [max(1, math.ceil(int(length) / envs)) for length in lengths]
    episodes = [[EpisodeTask(train(e, r), gpus, per_env[r]) for r in range(len(lengths))] for e in range(envs)]
    vector = SchedulingVectorEnv(episodes, reward, profile=profile, masks=masks)
    from case_studies.scheduling.sb3_vec_env import SB3SchedulingVecEnv
    from wield.agents.optimizers import with_exact_adam
    from wield.agents.sb3 import silence

    if model is None:
        chosen = dict(hyperparameters or {})
        settings = {**MASKABLE_SETTINGS, **chosen}
        if "n_steps" not in chosen:  # at least one update per episode, however short the episodes
            settings["n_steps"] = max(8, min(int(settings["n_steps"]), min(per_env)))
        if "batch_size" not in chosen:
            settings["batch_size"] = min(int(settings["batch_size"]), int(settings["n_steps"]) * envs)
        settings["policy_kwargs"] = with_exact_adam(settings.get("policy_kwargs"))  # the same steps on every CPU
        model = _vector_maskable_ppo()("MlpPolicy", SB3SchedulingVecEnv(vector), seed=seed % 2**32, device="cpu", verbose=0,
                                       **settings)
    else:
        model.set_env(SB3SchedulingVecEnv(vector))
    model._sampler = BatchedPolicy.from_sb3(model, seed=seed)
    silence(model)  # what SB3 records (train/loss, train/entropy_loss, ...) goes to the trial's trackers as sb3/<key>
    greedy = BatchedPolicy.from_sb3(model, seed=seed)
    measure = score or (lambda results: float(np.mean([r["episode"]["slo_satisfaction"] for r in results])) / 100.0)
    result = TrainingResult(model, greedy)
    best = {"score": -math.inf, "state": None}
    started = time.perf_counter()

    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    from wield.workflows import progress_wanted

    # progress from the first decision: the bar counts decisions (the first episodes are the shortest, but an
    # episode-count bar sat at 0 for minutes on a loaded machine), the postfix the episodes and their scores
    bar = tqdm(total=sum(per_env) * envs, desc="training (maskable-ppo)", unit="decision", unit_scale=True,
               leave=False, disable=not (progress_wanted() if progress is None else progress))
    bar.set_postfix(episode=f"0/{len(lengths)}")

    class EvaluateAfterEpisodes(BaseCallback):
        def _on_step(self) -> bool:
            bar.update(min(self.num_timesteps, bar.total) - bar.n)
            done = min(vector.finished_episodes())
            while len(result.curve) < min(done, len(lengths)):
                clock = time.perf_counter()
                value = measure(serve(greedy, curve, [gpus] * len(curve), reward, profile=profile, masks=masks))
                result.evaluate_s += time.perf_counter() - clock
                result.curve.append(value)
                if value >= best["score"]:
                    best["score"], best["state"] = value, copy.deepcopy(model.policy.state_dict())
                    result.best_episode = len(result.curve) - 1
                if on_episode is not None:
                    on_episode(len(result.curve) - 1, per_env[len(result.curve) - 1] * envs, value)
                bar.set_postfix(episode=f"{len(result.curve)}/{len(lengths)}", score=f"{value:.3g}",
                                best=f"{best['score']:.3g}")
            return len(result.curve) < len(lengths)

    with bar:
        model.learn(total_timesteps=sum(per_env) * envs, callback=EvaluateAfterEpisodes(), reset_num_timesteps=True)
    result.train_s = time.perf_counter() - started - result.evaluate_s
    result.decisions = int(model.num_timesteps)
    if best["state"] is not None:
        model.policy.load_state_dict(best["state"])
    return result
