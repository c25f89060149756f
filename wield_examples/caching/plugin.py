"""The Wield side: the environment, one trial (train, then evaluate every method on the test workload) and
the CaseStudy registration."""
from wield import (CaseStudy, Comparator, DQNConfig, EpisodeList, EvaluationInstances, InstanceBatch, Metric, Objective,
                   Option, TrialSummary, WieldEnv, evaluate_policy, train_online, trial_verdict)
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
    test workload (out of distribution: twice as many scans) and compare its misses with LRU's. The learning
    verdict plays the greedy policy, random eviction, LRU and LFU on 10 more test workloads drawn with seeds
    never used in training, and compares them workload by workload; ``more`` draws further workloads of the same
    stream for a rung that 10 cannot decide."""
    from wield import DQNAgent, RandomAgent  # torch: imported when a trial runs, not by 'wield run --help'
    method, frames = config.get("method", "dqn"), config["frames"]
    env = make_env(frames, config["scan_share"], seeds.train_seeds(config["episodes"]))
    scans = config["scan_share"] * (1 + (seeds.test_distribution == "out"))
    test = make_env(frames, scans, [seeds.test_workload_seed])
    agent = DQNAgent(env.observation_space, env.action_space, DQN, seed=seeds.optimisation_seed)
    if method == "dqn":
        train_online(env, agent, config["episodes"], record=record)
    random_policy = RandomAgent(env.action_space, seed=seeds.derive("random policy"))
    policies = {"dqn": agent, "lru": LRU(), "lfu": LFU(), "random": random_policy}
    rates = {name: evaluate_policy(test, policies[name]).metrics[0]["hit_rate"] for name in (method, *METHODS[1:])}
    methods = {name: {"hit_rate": r, "miss_reduction": 1 - (1 - r) / (1 - rates["lru"])} for name, r in rates.items()}
    ladder = [Comparator("lru", "heuristic", LRU()), Comparator("lfu", "heuristic", LFU())]

    def workloads(first, count):  # instances first .. first + count - 1 of the held-out stream
        chosen = EvaluationInstances(seeds.evaluation_seeds(first + count)[first:], "test workloads of 200 requests")
        return InstanceBatch(make_env(frames, scans, chosen.seeds), chosen, ladder)
    first = workloads(0, 10)
    verdict = trial_verdict(first.env, agent, record, seed=seeds.derive("verdict"), instances=first.instances,
                            comparators=ladder, more=workloads) if method == "dqn" else None
    return TrialSummary(seeds.trial, method, agent.steps_observed, agent.steps_observed, methods[method], methods,
                        verdict=verdict)


CASE_STUDY = CaseStudy(
    name="caching", description="buffer-pool page eviction: which page to evict on a miss (docs/new-system.md)",
    trial_function=run_trial, make_env=make_env, methods=METHODS, reproducible=True,
    metrics=(Metric("hit_rate", "hit rate", "fraction"),
             Metric("miss_reduction", "misses saved against LRU", "fraction")),
    objective=Objective("miss_reduction", 0.1), random_policy="random", greedy_policy="{method}",
    options=(Option("frames", 8, "page frames in the pool", minimum=3), Option("episodes", 15, "training episodes",
             minimum=1), Option("scan_share", 0.06, "probability that a request starts a scan of 8 cold pages")))
