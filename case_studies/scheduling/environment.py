"""The scheduling environment: the serving simulator under Wield, with episodes that grow in length.

``make_env(...)`` is the gymnasium environment of the case study (``gymnasium.make("wield/Scheduling-v0")``):
one low-SLO workload served to the end, every decision of every GPU every millisecond. ``training_env``
builds the training schedule: episode ``i`` plays ``episode_lengths(...)[i]`` decisions of its workload
(each from time 0), the lengths doubling every other episode up to a maximum, so the first, poor policies
spend few steps. ``evaluation_env`` serves whole workloads (one per episode).

The reward is a ``rewards.Reward`` (``dense``, ``dense-no-gpu`` or ``sparse``; default ``DEFAULT_REWARD``: dense,
late batches charged at dispatch, scaled by 0.01); the state, actions and masks are ``task_design``'s (``masks``:
its mask design, ``fit`` by default, ``late``, ``late-idle`` or ``late-idle-joint``); the decision points are
``system.ServingSystem``'s.
"""

from __future__ import annotations

from typing import Sequence

from case_studies.scheduling.families import LOW_SLO_GPUS, low_slo_workload
from case_studies.scheduling.profile import BatchProfile
from case_studies.scheduling.rewards import DEFAULT_GPU_WEIGHT, DEFAULT_SCALE, Reward
from case_studies.scheduling.system import EpisodeTask, ServingSystem
from case_studies.scheduling.task_design import MASK_DESIGNS, SchedulingConverter, SchedulingSchema
from case_studies.scheduling.workload import Workload
from wield.envs import EpisodeList, WieldEnv
from wield.errors import ConfigError

__all__ = ["episode_lengths", "make_env", "training_env", "evaluation_env"]


def episode_lengths(episodes: int, first: int, maximum: int) -> list[int]:
    """Decisions per training episode: ``first``, doubled every other episode, at most ``maximum``
    (e.g. 3 episodes from 500: 500, 500, 1000)."""
    for name, value in (("episodes", episodes), ("first_decisions", first), ("max_decisions", maximum)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(name, value, reason="must be an integer >= 1")
    if maximum < first:
        raise ConfigError("max_decisions", maximum, reason=f"must be >= first_decisions ({first})")
    return [min(first * 2 ** (i // 2), maximum) for i in range(episodes)]


DEFAULT_REWARD = Reward("dense", DEFAULT_GPU_WEIGHT, "dispatch", DEFAULT_SCALE)


def _env(tasks: Sequence[EpisodeTask], reward: Reward, profile: BatchProfile | Sequence[BatchProfile] | None,
         masks: str = MASK_DESIGNS[0]) -> WieldEnv:
    schema = SchedulingSchema(masks=masks)
    converter = SchedulingConverter(schema, reward)
    return WieldEnv(ServingSystem(profile), schema, converter, EpisodeList([[task] for task in tasks]))


def training_env(workloads: Sequence[Workload], n_gpus: int, lengths: Sequence[int],
                 reward: Reward = DEFAULT_REWARD, profile: BatchProfile | Sequence[BatchProfile] | None = None,
                 masks: str = MASK_DESIGNS[0]) -> WieldEnv:
    """Episode ``i`` plays ``lengths[i]`` decisions of ``workloads[i mod len(workloads)]``; ``masks``: the mask
    design (``task_design.MASK_DESIGNS``)."""
    if not workloads:
        raise ConfigError("workloads", [], reason="training needs at least one workload")
    tasks = [EpisodeTask(workloads[i % len(workloads)], n_gpus, int(length)) for i, length in enumerate(lengths)]
    return _env(tasks, reward, profile, masks)


def evaluation_env(workloads: Sequence[Workload], n_gpus: int | Sequence[int], reward: Reward = DEFAULT_REWARD,
                   profile: BatchProfile | Sequence[BatchProfile] | None = None,
                   masks: str = MASK_DESIGNS[0]) -> WieldEnv:
    """One episode per workload, each served until every request is answered (``n_gpus``: one count for
    all, or one per workload); ``masks``: the mask design (``task_design.MASK_DESIGNS``)."""
    gpus = [n_gpus] * len(workloads) if isinstance(n_gpus, int) else list(n_gpus)
    return _env([EpisodeTask(w, g) for w, g in zip(workloads, gpus)], reward, profile, masks)


def make_env(rate: float = 2400.0, models: int = 48, slo_ms: float = 24.0, gpus: int = LOW_SLO_GPUS,
             duration_s: float = 1.0, seed: int = 0, reward: str = "dense",
             gpu_weight: float = DEFAULT_GPU_WEIGHT, late_charge: str = "dispatch",
             reward_scale: float = DEFAULT_SCALE, masks: str = MASK_DESIGNS[0]) -> WieldEnv:
    """The case study's gymnasium environment: one low-SLO workload (``rate`` r/s in total over ``models``
    ResNet-50 instances, one SLO, Poisson arrivals, ``duration_s`` seconds, seeded), served on ``gpus``
    GPUs until every request is answered; the reward is ``rewards.Reward(reward, gpu_weight, late_charge,
    reward_scale)``; ``masks``: the mask design (``task_design.MASK_DESIGNS``: fit, late or late-idle)."""
    workload = low_slo_workload(rate, models, slo_ms, duration_s, seed)
    return evaluation_env([workload], gpus, Reward(reward, gpu_weight, late_charge, reward_scale), masks=masks)
