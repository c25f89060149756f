"""The Wield side: one trial (train, evaluate beside baselines, record) and the CaseStudy registration."""
import numpy as np

from wield_examples.scheduling.system import EarliestFinish, Servers, ServersConverter, ServersSchema, job_schedule
from wield.agents import DQNAgent, DQNConfig
from wield.envs import WieldEnv
from wield.plugins import CaseStudy
from wield.protocols import TrialPlan
from wield.seeding import derive_seed, make_rng
from wield.tasks import TaskGraph
from wield.workflows import RunRecord, train_online

METHODS = ("dqn", "earliest-finish", "round-robin", "random")
METRICS = ("mean_completion_improvement", "makespan_improvement")  # both against round-robin
DQN = DQNConfig(learning_rate=1e-3, gamma=0.5, hidden_sizes=(64,), updates_per_observation=1, epsilon_decay_steps=150)


def play(jobs, servers, choose) -> dict:
    """Play one workload with ``choose(queues, context) -> (job, server)``; the simulator's metrics."""
    system = Servers(servers)
    for step, job in enumerate(jobs):
        system.apply(choose(system.state(), {"item": job, "workload": jobs, "step": step}))
    return system.measure(jobs)


def run_trial(config, trial, directory):
    """Train (method dqn) on the trial's workload(s), evaluate every method on its test workload, record."""
    record, m, method = RunRecord(directory), config["servers"], config.get("method", "dqn")
    for name, data in (("config.json", config), ("seeds.json", trial), ("run.json", {"case_study": "scheduling"})):
        record.write_json(name, data)
    seeds = [trial["train_workload_seed"]] if trial["mode"] == "blackbox" else [
        derive_seed(trial["train_workload_seed"], episode) for episode in range(config["episodes"])]
    schema, converter, rule = ServersSchema(m), ServersConverter(ServersSchema(m)), EarliestFinish()
    agent = DQNAgent(schema.state_space, schema.action_space, DQN, seed=trial["optimisation_seed"])
    if method == "dqn":
        env = WieldEnv(Servers(m), schema, converter, job_schedule(seeds, config["jobs"]))
        train_online(env, TaskGraph.single(agent), config["episodes"], progress=False, on_episode=lambda r:
                     record.append_episode({"episode": r.episode, "total_reward": r.total_reward}))
    policies = {  # queues, context -> system action (job, server)
        "dqn": lambda q, c: converter.agent_to_system_action(agent.act(converter.system_to_agent_state(q, c), False), c),
        "earliest-finish": lambda q, c: rule.label(q, c).action, "round-robin": lambda q, c: (c["item"], c["step"] % m),
        "random": lambda q, c, rng=make_rng(trial["optimisation_seed"], "random"): (c["item"], int(rng.integers(m)))}  # noqa: B008
    tail = 2.0 if trial["test_distribution"] == "out" else 1.0
    jobs = job_schedule([trial["test_workload_seed"]], config["jobs"], tail).task_for_episode(0)
    played = {name: play(jobs, m, policies[name]) for name in dict.fromkeys((method, *METHODS[1:]))}
    rr = played["round-robin"]
    methods = {name: {"method": name, METRICS[0]: 1 - np.mean(p["completions"]) / np.mean(rr["completions"]),
                      METRICS[1]: 1 - p["makespan"] / rr["makespan"]} for name, p in played.items()}
    record.write_json("evaluation.json", {"methods": methods, "objective": CASE_STUDY.objective})
    record.mark("complete")
    return {"trial": trial["trial"], "transitions": agent.steps_observed, "metrics": methods[method], "methods": methods}


def add_arguments(parser):
    for name, default, text in (("servers", 4, "servers (server i runs at speed i + 1)"), ("seed", 0, "base seed"),
                                ("jobs", 16, "jobs per workload (one decision each)"), ("episodes", 20, "episodes")):
        parser.add_argument(f"--{name}", type=int, default=default, help=text)
    parser.add_argument("--out", default=None, help="output directory")
    for flag in ("quiet", "json"):
        parser.add_argument(f"--{flag}", action="store_true", help=f"{flag} output")


def config_from_args(args): return {name: getattr(args, name) for name in ("servers", "jobs", "episodes", "seed")}


def run(args) -> int:
    """One blackbox run (the C0 plan's single trial) into --out; prints every method's metrics."""
    summary = run_trial(config_from_args(args), TrialPlan.make("C0", 1, args.seed).trials[0].as_dict(),
                        args.out or f"runs/scheduling-seed{args.seed}")
    for name, row in summary["methods"].items():
        print(f"{name:16s}", *(f"{metric} {row[metric]:7.1%}" for metric in METRICS), sep="  ")
    return 0


CASE_STUDY = CaseStudy(
    name="scheduling", description="toy request scheduling: assign jobs to servers (docs/new-system.md)",
    add_arguments=add_arguments, run=run, config_from_args=config_from_args, trial_function=run_trial,
    objective={"metric": METRICS[0], "threshold": 0.15}, metrics=METRICS, methods=METHODS, compare_metrics=METRICS)
