"""The system side: workload generator, schema, converter, simulator adapter and a labelling rule."""
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

from wield.converters import Converter
from wield.demonstrations import Label, LabellingRule
from wield.schemas import Schema
from wield.seeding import make_rng
from wield.systems import SystemAdapter


def job_schedule(seeds, n_jobs: int, tail: float = 1.0) -> SimpleNamespace:
    """Workload generator: per seed, one episode of job sizes >= 1 with a Pareto tail (tail > 1: heavier,
    out of distribution). Returns what WieldEnv reads: ``n_episodes`` and ``task_for_episode(i)``."""
    tasks = [[round(1.0 + float(x), 3) for x in make_rng(seed, "jobs").pareto(2.5 / tail, n_jobs)] for seed in seeds]
    return SimpleNamespace(n_episodes=len(tasks), task_for_episode=tasks.__getitem__)


class ServersSchema(Schema):
    """State: the job's size and each server's queue (time until it is free); action: a server."""
    def __init__(self, servers: int): self.servers = servers

    state_space = property(lambda self: gym.spaces.Box(0.0, 1e4, (self.servers + 1,), np.float32))
    action_space = property(lambda self: gym.spaces.Discrete(self.servers))

    def layout(self): return {"state": ["job", *(f"queue_{i}" for i in range(self.servers))], "action": "server"}


class ServersConverter(Converter):
    """Times are in units of the workload's mean job size, so one network serves every workload."""
    def system_to_agent_state(self, queues, context):
        return np.array([context["item"], *queues], np.float32) / np.float32(np.mean(context["workload"]))

    def agent_to_system_action(self, action, context): return (context["item"], int(action))  # (job, server)

    def system_to_agent_action(self, system_action, context): return int(system_action[1])

    def system_to_agent_reward(self, metrics, context):  # minus the job's completion time
        return -metrics["completions"][-1] / float(np.mean(context["workload"]))


class Servers(SystemAdapter):
    """The simulator: server i runs its jobs first come, first served at speed i + 1."""
    def __init__(self, servers: int):
        self.speeds = np.arange(1.0, servers + 1)
        self.reset()

    def reset(self): self.queues, self.completions = [0.0] * len(self.speeds), []

    def state(self): return list(self.queues)

    def apply(self, action):
        job, server = action
        self.queues[server] += job / self.speeds[server]
        self.completions.append(self.queues[server])

    def measure(self, workload): return {"completions": list(self.completions), "makespan": max(self.queues)}


class EarliestFinish(LabellingRule):
    """Expert rule: send the job to the server that would finish it first (margin 0.5: do this)."""
    name = "earliest-finish"
    def label(self, queues, context):
        finish = np.array(queues) + context["item"] / np.arange(1.0, len(queues) + 1)
        return Label((context["item"], int(np.argmin(finish))), margin=0.5)
