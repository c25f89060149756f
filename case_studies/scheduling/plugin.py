"""The scheduling case study under Wield: one trial (train a learner, then evaluate every method on the test
workload), its options and the ``CaseStudy`` registration (``wield run scheduling``,
``gymnasium.make("wield/Scheduling-v0")``).

A trial trains ``method`` (``maskable-ppo``, the default: sb3-contrib's MaskablePPO on the vector environment,
``vector_training``; ``ppo``: Wield's PPO with masks through the Wield environment) for ``episodes`` episodes
whose length doubles every other episode from ``first_decisions`` up to ``max_decisions`` decisions (the
modelled study's schedule by default: 3,000 to 60,000, 20 episodes), evaluating the greedy policy after each
episode on a short validation workload of the training shape (the training curve, drawn with the trial's
selection seed), and keeping the best evaluated policy. MaskablePPO plays each episode in ``envs``
environments at once, each its share of the decisions on its own training workload. Then every method
serves the test workload (``tasks.trial_tasks``): the learner and the random agent through the environment
(a decision every millisecond per GPU), the heuristics (Clockwork's, FIFO, EDF) in the simulator's compiled
event loop. ``masks`` chooses the task design's action masks (``task_design``: ``fit``, the default, or
``late``, which also forbids batches that would finish after their oldest request's deadline, ``late-idle``,
which also waits while the decided GPU has 1 ms or more of work, or ``late-idle-joint``, which also judges an
action's batches together: one that would finish late after the batches before it is not dispatched) for the
learner, the random policy and the environment of the verdict.

The learning verdict (``wield.workflows.trial_verdict``) is computed on ``VERDICT_INSTANCES`` more
instances of the test distribution (``tasks.verdict_tasks``), drawn with seeds never used in training or
checkpoint selection, scored by SLO satisfaction and compared instance by instance with the ladder: the
masked random policy, the trivial policies never-dispatch and urgent-batch (``rules.py``), and the
heuristics Clockwork, EDF and FIFO (reported, not required); more instances of the same stream, in batches
of as many, while a rung is undecided, up to the verdict's cap.
"""

from __future__ import annotations

import copy
import math
import sys
from typing import TYPE_CHECKING, Any, Callable, Mapping

# Only light modules here: 'wield run scheduling --help' imports this module to declare the options, so the
# simulator (numba, scipy) and the learners (torch) are imported by the functions that use them.
from case_studies.scheduling.figures import results_figure
from case_studies.scheduling.profile import DEFAULT_PROFILE, profile_names
from case_studies.scheduling.rewards import DEFAULT_GPU_WEIGHT, DEFAULT_SCALE, LATE_CHARGES, REWARDS, Reward
from case_studies.scheduling.tasks import (DEFAULT_ENVS, DEFAULT_SLO_MS, MASK_DESIGNS, MAX_DECISIONS, MAX_ENVS,
                                          MAX_EPISODES, MAX_GPUS, MAX_MODELS, MAX_RATE, MAX_SECONDS, WORKLOAD_FAMILIES,
                                          TrialTasks, check_given,
                                          check_config, configured_shape, trial_tasks, verdict_tasks)
from wield.agents import hyperparameters
from wield.metrics import Metric
from wield.plugins import CaseStudy, Option
from wield.protocols import EvaluationInstances, TrialSummary
from wield.protocols.objective import Objective
from wield.seeding import derive_seed
from wield.workflows import progress_wanted, run_objective
from wield.workflows import Comparator, InstanceBatch, evaluate_policy, train_online, trial_verdict

if TYPE_CHECKING:
    from case_studies.scheduling.metrics import ServingMetrics
    from wield.agents.base import Agent

LEARNERS = ("maskable-ppo", "ppo")  # the first is the default learner (CaseStudy.methods)
# what each learner is to a config file's [agent] block (wield.agents.hyperparameters): Wield's PPO (PPOConfig,
# from the case study's PPO_CONFIG) and sb3-contrib's MaskablePPO (its constructor's keywords)
LEARNER_KINDS = {"ppo": "ppo", "maskable-ppo": "sb3-maskable-ppo"}
HEURISTICS = ("clockwork", "edf", "fifo")
METHODS = (*LEARNERS, *HEURISTICS, "random")
VERDICT_INSTANCES = 10  # fresh instances of the learning verdict
VERDICT_RANDOM_EPISODES = 2  # random-policy episodes per verdict instance


def served(metrics: ServingMetrics | Mapping[str, Any], episode_return: float | None = None) -> dict[str, Any]:
    """A method's figures on the test workload (SLO satisfaction as a fraction)."""
    from case_studies.scheduling.metrics import ServingMetrics

    m = metrics.as_dict() if isinstance(metrics, ServingMetrics) else dict(metrics)
    figures = {"slo_satisfaction": m["slo_satisfaction"] / 100.0, "goodput_rps": m["goodput_rps"],
               "throughput_rps": m["throughput_rps"], "mean_batch_size": m["mean_batch_size"],
               "gpu_utilisation": m["gpu_utilisation"], "timed_out": m["timed_out"], "late": m["late"]}
    if episode_return is not None:
        figures["return"] = episode_return
    return figures


def _play(env, policy: Agent, explore: bool = False) -> dict[str, Any]:
    result = evaluate_policy(env, policy, 1, explore=explore)
    return served(result.metrics[0]["episode"], result.returns[0])


def _train_ppo(tasks: TrialTasks, lengths: list[int], seed: int, record, block: Mapping[str, Any] | None,
               curve_env) -> tuple[Agent, list[float], int]:
    """Wield's PPO (with the hyperparameters of ``block``, the config file's ``[agent]`` block) through the
    Wield environment; the greedy policy, its return on ``curve_env`` after every episode, transitions.

    The policy returned is the one of the episode with the best curve return (the training-shape workload,
    never the test workload): PPO's policy can get worse again between evaluations, and keeping the best
    evaluated policy is what saving the agent after every evaluation allows."""
    from case_studies.scheduling.environment import training_env
    from case_studies.scheduling.learners import PPO_CONFIG, make_ppo

    env = training_env(tasks.train, tasks.train_gpus, lengths, curve_env.converter.reward,
                       masks=curve_env.schema.masks)
    agent = make_ppo(env, seed, hyperparameters.make_config("ppo", block, base=PPO_CONFIG))
    curve: list[float] = []
    best: dict[str, Any] = {"return": -math.inf, "state": None}

    def evaluate(_result) -> None:
        curve.append(evaluate_policy(curve_env, agent, 1).returns[0])
        if curve[-1] > best["return"]:
            best["return"], best["state"] = curve[-1], copy.deepcopy(agent.state_dict())

    train_online(env, agent, len(lengths), record=record, on_episode=evaluate)
    transitions = agent.steps_observed  # of the whole training, not of the kept state loaded next
    agent.load_state_dict(best["state"])
    return agent, curve, transitions


def _train_maskable(envs: int, tasks: TrialTasks, lengths: list[int], seed: int, record,
                    block: Mapping[str, Any] | None, curve_env) -> tuple[Agent, list[float], int]:
    """MaskablePPO on the vector environment (``vector_training``): ``envs`` environments play every episode
    of the schedule together, each on its own training workload; the curve is the greedy policy's return
    on the validation workload after every episode, and the best one's policy is kept."""
    from case_studies.scheduling.batched_policy import BatchedAgent
    from case_studies.scheduling.vector_training import train_maskable_ppo

    def training_workload(env: int, episode: int):
        return tasks.train[(episode * envs + env) % len(tasks.train)]

    def log(episode: int, decisions: int, value: float) -> None:
        if record is not None:
            record.append_episode({"episode": episode, "decisions": decisions, "curve_return": value})

    reward = curve_env.converter.reward
    result = train_maskable_ppo(training_workload, tasks.train_gpus, lengths, reward, [tasks.curve], seed, envs=envs,
                                hyperparameters=hyperparameters.for_learner(LEARNER_KINDS["maskable-ppo"], block),
                                score=lambda served_: float(served_[0]["return"]), on_episode=log,
                                masks=curve_env.schema.masks)
    agent = BatchedAgent(result.policy, curve_env.action_space, weights=result.model.policy.state_dict)
    return agent, result.curve, result.decisions


def run_trial(config: Mapping[str, Any], seeds, record) -> TrialSummary:
    """Train the configured learner (unless ``method`` is a baseline), then evaluate every method on the
    trial's test workload; see the module docstring."""
    from case_studies.scheduling.environment import episode_lengths, evaluation_env
    from case_studies.scheduling.runner import run_baseline
    from wield.agents import RandomAgent

    check_config(config)
    method = config["method"]
    lengths = episode_lengths(int(config["episodes"]), int(config["first_decisions"]), int(config["max_decisions"]))
    draws = len(lengths) * (int(config["envs"]) if method == "maskable-ppo" else 1)  # a workload per environment
    tasks = trial_tasks(config, seeds, draws)
    reward = Reward(config["reward"], float(config["gpu_weight"]), config["late_charge"], float(config["reward_scale"]))
    masks = mask_design(config)
    curve_env = evaluation_env([tasks.curve], tasks.train_gpus, reward, masks=masks)
    test_env = evaluation_env([tasks.test], tasks.test_gpus, reward, masks=masks)
    methods: dict[str, dict[str, Any]] = {}
    transitions, verdict, extras = 0, None, {}
    if progress_wanted():  # the header beside the progress bars (stderr: the results keep stdout)
        print(_header(config, seeds, tasks, lengths, record), file=sys.stderr, flush=True)
    if method in LEARNERS:
        block, seed = config.get("hyperparameters"), seeds.optimisation_seed
        policy, curve, transitions = (_train_ppo(tasks, lengths, seed, record, block, curve_env) if method == "ppo"
                                      else _train_maskable(int(config["envs"]), tasks, lengths, seed, record, block,
                                                           curve_env))
        record.save_model(policy.state_dict())
        methods[method] = _play(test_env, policy)
        verdict = _verdict(config, seeds, tasks, reward, policy, curve)
        extras = {"training_curve": curve, "episode_decisions": lengths}
    methods["random"] = _play(test_env, RandomAgent(test_env.action_space, seed=seeds.derive("random policy")),
                              explore=True)
    for name in HEURISTICS:
        methods[name] = served(run_baseline(tasks.test, name, tasks.test_gpus))
    results_figure(record, method, extras.get("training_curve", []), methods, _slo_threshold())
    extras.update({"test_workload": tasks.test.name, "test_gpus": tasks.test_gpus, "held_out": tasks.held_out,
                   "train_workloads": sorted({w.name for w in tasks.train})})
    return TrialSummary(seeds.trial, method, transitions, transitions, methods[method], methods, verdict=verdict,
                        extras=extras)


def mask_design(config: Mapping[str, Any]) -> str:
    """The run's mask design (``task_design``): ``masks``, or ``fit`` for a record written before the option."""
    return str(config.get("masks") or MASK_DESIGNS[0])


def _slo_threshold() -> float | None:
    """The SLO satisfaction the run's objective asks for (``--objective``'s in a single run, the experiment's in
    a trial, else the case study's 0.9): the figure's dashed line; None when it sets no lower bound on it."""
    objective = run_objective(CASE_STUDY.objective)
    bounds = [c.threshold for c in objective.conditions if c.metric == "slo_satisfaction" and c.operator == ">="]
    return max(bounds) if bounds else None


def _header(config: Mapping[str, Any], seeds, tasks: TrialTasks, lengths: list[int], record) -> str:
    """What the trial is about to do, in two lines: its workloads, then its training (or evaluation)."""
    method = config["method"]
    configured = configured_shape(config)
    shape = (f"{config['rate']:g} r/s over {config['models']} ResNet-50 instances, SLO {configured.slo_ms:g} ms"
             if configured.family == "low-slo" else f"{config['workload']}, {config['rate']:g} r/s")
    if str(config.get("profile") or DEFAULT_PROFILE) != DEFAULT_PROFILE:
        shape += f", timed by the {config['profile']} profile"
    workloads = (f"workload: {shape}, {tasks.train_gpus} GPUs ({len(tasks.train)} training draw(s) of "
                 f"{config['train_s']:g} s; test: {tasks.test.name} on {tasks.test_gpus} GPUs, {config['test_s']:g} s)")
    if method not in LEARNERS:
        return f"{workloads}\nevaluating {method} ({seeds.mode}) -> {record.path}"
    envs = f" in {config['envs']} environments" if method == "maskable-ppo" else ""
    return (f"{workloads}\ntraining {method} ({seeds.mode}) for {len(lengths)} episodes, {sum(lengths):,} decisions"
            f"{envs} -> {record.path}")


def slo_score(episode: Mapping[str, Any]) -> float:
    """The verdict's score of an episode played through the environment: its SLO satisfaction (fraction)."""
    return float(episode["metrics"]["episode"]["slo_satisfaction"]) / 100.0


def _verdict(config: Mapping[str, Any], seeds, tasks: TrialTasks, reward: Reward, policy: Agent,
             curve: list[float]) -> dict[str, Any]:
    """The ladder on fresh instances of the test distribution (see the module docstring), more of them while a
    rung is undecided."""
    from case_studies.scheduling.environment import evaluation_env
    from case_studies.scheduling.rules import NeverDispatch, UrgentBatch
    from case_studies.scheduling.runner import TUNED_LOOKAHEADS_MS, run_baseline, tune_lookahead

    # Clockwork's own knob, tuned on the trial's validation draw (never on a verdict instance): the strongest
    # setting of the field's heuristic for this workload, beside the shipped 5 ms
    tuned, tuning = tune_lookahead(tasks.curve, tasks.train_gpus)
    masks = mask_design(config)
    tried = ", ".join(f"{ms:g} ms {score:.1f}%" for ms, score in tuning.items())

    def batch(first: int, count: int) -> InstanceBatch:
        chosen = verdict_tasks(config, seeds, count, first)
        def simulated(name: str, **knobs: Any) -> Callable[[], list[list[float]]]:
            """The heuristic's scores on these instances, simulated only when its rung is played on them."""
            return lambda: [[run_baseline(w, name, g, **knobs).slo_satisfaction / 100.0]
                            for w, g in zip(chosen.workloads, chosen.gpus)]

        heuristics = [Comparator(name, "heuristic", scorer=simulated(name),
                                 description=f"{name} in the simulator's compiled event loop")
                      for name in HEURISTICS]
        heuristics.append(Comparator(
            "clockwork-tuned", "heuristic", scorer=simulated("clockwork", lookahead_ms=tuned),
            description=(f"Clockwork with its lookahead tuned on the validation workload: {tuned:g} ms (of "
                         f"{', '.join(f'{ms:g}' for ms in TUNED_LOOKAHEADS_MS)} ms; SLO met there: {tried}; "
                         "shipped: 5 ms)")))
        comparators = [Comparator("never-dispatch", "trivial", NeverDispatch()),
                       Comparator("urgent-batch", "trivial", UrgentBatch()), *heuristics]
        return InstanceBatch(evaluation_env(chosen.workloads, chosen.gpus, reward, masks=masks),
                             EvaluationInstances(chosen.seeds, chosen.description), comparators,
                             _played_in_vector(policy, chosen.workloads, chosen.gpus, reward, masks))

    first = batch(0, VERDICT_INSTANCES)
    return trial_verdict(first.env, policy, seed=seeds.derive("verdict random policy"), instances=first.instances,
                         comparators=first.comparators, training_returns=curve, score=slo_score,
                         score_label="SLO satisfaction (fraction of requests)", training_seeds=tasks.train_seeds,
                         selection_seeds=tasks.selection_seeds, random_episodes=VERDICT_RANDOM_EPISODES,
                         played=first.played, more=batch,
                         notes=[f"clockwork-tuned: lookahead {tuned:g} ms, chosen on the validation workload "
                                f"({tried}; the shipped clockwork rung uses 5 ms)"])


def _played_in_vector(policy: Agent, workloads: list, gpus: list[int], reward: Reward, masks: str = MASK_DESIGNS[0]):
    """The learner (greedy) and the masked uniform random policy played on every verdict instance at once in
    the vector environment (the same decisions and SLO figures as through the Wield environment, one
    network call per step for all instances), or None for a policy that cannot be batched."""
    from case_studies.scheduling.batched_policy import BatchedAgent, BatchedPolicy
    from case_studies.scheduling.vector_training import serve
    from wield.agents import HeadsPPOAgent

    if isinstance(policy, BatchedAgent):
        batched = policy.policy
    elif isinstance(policy, HeadsPPOAgent):
        batched = BatchedPolicy.from_heads_ppo(policy)
    else:
        return None

    def slo(result: Mapping[str, Any]) -> float:
        return float(result["episode"]["slo_satisfaction"]) / 100.0

    def play(explore: bool, episodes: int, seed: int) -> list[list[float]]:
        if not explore:
            return [[slo(result)] for result in serve(batched, workloads, gpus, reward, masks=masks)]
        runs = [serve(BatchedPolicy.uniform(batched.nvec, seed=derive_seed(seed, "episode", k)), workloads, gpus,
                      reward, explore=True, masks=masks) for k in range(episodes)]
        return [[slo(run[i]) for run in runs] for i in range(len(workloads))]

    return play


def hyperparameters_used(options: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """The [agent] table of a run's config.toml (``CaseStudy.hyperparameters_used``): Wield's PPO starts from
    the case study's ``PPO_CONFIG``, so every value it uses is written; MaskablePPO's are the vector training's
    settings (``MASKABLE_SETTINGS``) with the block's over them, less ``n_steps`` and ``batch_size`` unless the
    block sets them (the training fits those to the episodes' length); a heuristic takes none."""
    method = options.get("method")
    if method == "ppo":
        from dataclasses import asdict

        from case_studies.scheduling.learners import PPO_CONFIG

        return asdict(hyperparameters.make_config("ppo", block, base=PPO_CONFIG))
    if method == "maskable-ppo":
        from case_studies.scheduling.vector_training import MASKABLE_SETTINGS

        chosen = hyperparameters.for_learner(LEARNER_KINDS["maskable-ppo"], block)
        fitted = {key: value for key, value in MASKABLE_SETTINGS.items() if key not in ("n_steps", "batch_size")}
        return {**fitted, **chosen}
    return dict(block)


def make_env(**kwargs: Any):
    """``gymnasium.make("wield/Scheduling-v0", rate=..., models=..., slo_ms=..., gpus=..., duration_s=...,
    seed=..., reward=...)``: see ``environment.make_env``."""
    from case_studies.scheduling.environment import make_env as environment_make_env

    return environment_make_env(**kwargs)


CASE_STUDY = CaseStudy(
    name="scheduling",
    description="DNN inference request scheduling on GPUs within latency SLOs (Clockwork-style serving "
                "simulator): which model to run, in which batch, on each GPU every millisecond",
    system_work="the serving simulator serving the requests",
    trial_function=run_trial, make_env=make_env, methods=METHODS, reproducible=True, learners=LEARNER_KINDS,
    check_config=check_config, check_given=check_given,  # --models / --slo-ms a --workload ignores: usage errors
    hyperparameters_used=hyperparameters_used,  # config.toml's [agent]
    metrics=(Metric("slo_satisfaction", "requests meeting their SLO", "fraction"),
             Metric("goodput_rps", "goodput (requests meeting their SLO per second)", "number"),
             Metric("throughput_rps", "throughput (requests answered per second)", "number"),
             Metric("mean_batch_size", "mean batch size", "number"),
             Metric("gpu_utilisation", "GPU utilisation", "fraction"),
             Metric("timed_out", "requests timed out", "count", higher_is_better=False),
             Metric("late", "requests finished after their deadline", "count", higher_is_better=False)),
    compare_metrics=("slo_satisfaction", "goodput_rps", "throughput_rps", "mean_batch_size", "gpu_utilisation"),
    objective=Objective("slo_satisfaction", 0.9),
    greedy_policy="{method}",  # a learner's row is its greedy policy on the test workload
    extras=(Metric("held_out", "tested on a held-out workload shape (1: yes, 0: no)", "number",
                   higher_is_better=None),),
    options=(
        Option("method", "maskable-ppo", "the method of the trial: maskable-ppo (sb3-contrib's MaskablePPO, the "
               "modelled study's learner, on the vector environment), ppo (Wield's PPO, through the Wield "
               "environment), or a baseline (only evaluates)", choices=METHODS),
        Option("reward", "dense", "reward: dense (three-part), dense-no-gpu, or sparse (+1/-1)", choices=REWARDS),
        Option("gpu_weight", DEFAULT_GPU_WEIGHT, "dense reward: weight of the GPU's outstanding work (per ms)",
               minimum=0, maximum=1e6),
        Option("late_charge", "dispatch", "dense rewards: charge a late batch when dispatched or on completion",
               choices=LATE_CHARGES),
        Option("reward_scale", DEFAULT_SCALE, "every reward is multiplied by it", minimum=1e-9, maximum=1e6),
        Option("masks", MASK_DESIGNS[0], "the task design's action masks: fit (the modelled study's: batch sizes up "
               "to the pending requests) or late (also forbids a batch that, started when the decided GPU is next "
               "free, would finish after its model's oldest request's deadline) or late-idle (late, and nothing is "
               "dispatched onto a GPU with 1 ms or more of outstanding work, as Clockwork waits) or late-idle-joint "
               "(late-idle, and an action's batches are judged together: one that would finish late after the "
               "batches chosen before it is not dispatched); the learner, the random policy and the verdict's "
               "environment use them, the heuristics do not", choices=MASK_DESIGNS),
        Option("profile", DEFAULT_PROFILE, "ResNet-50's batch-latency curve (ms per batch of 1, 2, 4, 8, 16): "
               "accelerator (ASSUMED linear curve 2.7 x (0.8 + 0.2 b), the default), clockwork-resnet50 (measured by "
               "Clockwork's authors on a Volta GPU: 2.73, 4.05, 5.88, 9.93, 17.33; batching gains less) or "
               "cpu-measured (this project's CPU, scaled to 2.7 ms; no batching gain); the Azure-like model "
               "families are re-scaled from it (ASSUMED); every method, heuristics included, uses it",
               choices=profile_names()),
        Option("workload", "low-slo", "the training workload, at --rate r/s in total on --gpus GPUs: hard (the "
               "modelled study's hard workload: one SLO over --models ResNet-50 instances, 2,400 r/s, 48 models, "
               "24 ms, 6 GPUs by default; --slo-ms applies), easy (the same at the study's 96 ms SLO), low-slo "
               "(another name of hard), multi-slo (SLO classes 10, 25 and 100 ms, 4 ResNet-50 instances each; its "
               "findings cell: --rate 1200 --gpus 2), azure-like (the SYNTHETIC Azure-like workload, 4,026 "
               "instances of ASSUMED model families, SLO 100 ms, whole seconds; its cell: --rate 9500 --gpus 12) or "
               "trace (the first seconds of a real Azure Functions trace file, --trace FILE, on the Azure-like "
               "workload's instances, SLO 100 ms); --models and --slo-ms apply to hard and low-slo only (--models to "
               "easy too): giving one another workload ignores is a usage error",
               choices=WORKLOAD_FAMILIES),
        Option("rate", 2400.0, "training workload: requests per second in total", minimum=1,
               maximum=MAX_RATE),
        Option("models", 48, "training workload: ResNet-50 model instances (hard, low-slo)", minimum=1,
               maximum=MAX_MODELS),
        Option("slo_ms", DEFAULT_SLO_MS, "training workload: SLO of every request (ms; hard, low-slo)", minimum=3,
               maximum=60_000),
        Option("gpus", 6, "GPUs of the training workload (and of the randomised classes' low-SLO shapes)", minimum=1,
               maximum=MAX_GPUS),
        Option("episodes", 20, "training episodes (the modelled study's schedule: 20)", minimum=1,
               maximum=MAX_EPISODES),
        Option("first_decisions", 3000, "decisions of the first training episode (doubling every other)",
               minimum=1, maximum=MAX_DECISIONS),
        Option("max_decisions", 60000, "most decisions of a training episode", minimum=1, maximum=MAX_DECISIONS),
        Option("envs", DEFAULT_ENVS, "maskable-ppo: environments that play every episode together, each its share of "
               "the episode's decisions on its own training workload", minimum=1, maximum=MAX_ENVS),
        Option("train_s", 2.0, "seconds of each training workload (episodes restart it at 0)", minimum=0.01,
               maximum=MAX_SECONDS),
        Option("test_s", 1.0, "seconds of the test workload", minimum=0.01, maximum=MAX_SECONDS),
        Option("curve_s", 0.25, "seconds of the validation workload (training curve, checkpoint selection) and "
               "of each of the verdict's fresh instances", minimum=0.01, maximum=MAX_SECONDS),
        Option("trace", "", "an Azure Functions trace file (CSV): the workload of --workload trace, and the held-out "
               "test of C5/C6 instead of the SYNTHETIC Azure-like workload"),
    ))
