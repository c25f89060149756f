"""The Wield side: the environment, one trial (train, then evaluate every method on the test workload) and
the CaseStudy registration."""
from wield import (CaseStudy, DQNAgent, DQNConfig, EpisodeList, Metric, Objective, Option, RandomAgent,
                   TrialSummary, WieldEnv, evaluate_policy, train_online)
from wield_examples.caching.system import LFU, LRU, BufferPool, PoolConverter, PoolSchema, page_requests

METHODS = ("dqn", "lru", "lfu", "random")
DQN = DQNConfig(learning_rate=1e-3, gamma=0.9, hidden_sizes=(64,), updates_per_observation=1, epsilon_decay_steps=600)


def make_env(frames=8, scan_share=0.06, seeds=(0,), requests=200, pages=32) -> WieldEnv:
    """The environment: one episode per workload seed."""
    schema = PoolSchema(frames)
    return WieldEnv(BufferPool(frames), schema, PoolConverter(schema),
                    EpisodeList([page_requests(seed, requests, pages, scan_share) for seed in seeds]))


def run_trial(config, seeds, record) -> TrialSummary:
    """Train the learner (method ``dqn``) on the trial's training workloads, then play every method on the
    test workload and compare its misses with LRU's."""
    method, frames = config.get("method", "dqn"), config["frames"]
    env = make_env(frames, config["scan_share"], seeds.train_seeds(config["episodes"]))
    shift = 2 if seeds.test_distribution == "out" else 1  # out of distribution: twice as many scans
    test = make_env(frames, config["scan_share"] * shift, [seeds.test_workload_seed])
    agent = DQNAgent(env.observation_space, env.action_space, DQN, seed=seeds.optimisation_seed)
    if method == "dqn":
        train_online(env, agent, config["episodes"], record=record)
    random_policy = RandomAgent(env.action_space, seed=seeds.derive("random policy"))
    policies = {"dqn": agent, "lru": LRU(), "lfu": LFU(), "random": random_policy}
    rates = {name: evaluate_policy(test, policies[name]).metrics[0]["hit_rate"] for name in (method, *METHODS[1:])}
    methods = {name: {"hit_rate": rate, "miss_reduction": 1 - (1 - rate) / (1 - rates["lru"])}
               for name, rate in rates.items()}
    return TrialSummary(seeds.trial, method, agent.steps_observed, agent.steps_observed, methods[method], methods)


CASE_STUDY = CaseStudy(
    name="caching", description="buffer-pool page eviction: which page to evict on a miss (docs/new-system.md)",
    trial_function=run_trial, make_env=make_env, methods=METHODS, reproducible=True,
    metrics=(Metric("hit_rate", "hit rate", "fraction"),
             Metric("miss_reduction", "misses saved against LRU", "fraction")),
    objective=Objective("miss_reduction", 0.1),
    options=(Option("frames", 8, "page frames in the pool", minimum=3), Option("episodes", 15, "training episodes",
             minimum=1), Option("scan_share", 0.06, "probability that a request starts a scan of 8 cold pages")))
