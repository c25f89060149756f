"""The learner of an indexing run (docs/design.md sections 5.9 and 6): DQN, DQfD pretrained on demonstrations,
or a Stable-Baselines3 reference learner (``wield.agents.sb3``: ``sb3-ppo``, ``sb3-maskable-ppo``, ``sb3-a2c``;
its budget is the run's transitions, episodes x queries).

``agent="dqfd"`` loads the demonstration dataset named by ``demonstrations`` (refusing one made for
another schema layout) or, without one, labels the run's own training workload (every distinct task of
the training schedule) with the configuration's ``rules`` (default ``DEFAULT_RULES``: noop and reverse, the
study's Pretrain+Online); it then pretrains for ``pretrain_steps`` gradient steps
before online training. What was used is written to the run record as ``demonstrations.json`` (path,
content hash, rules, counts and the pretraining losses); a dataset built in the run is also saved in the
record as ``demonstrations/``, so the run is reproducible and its demonstrations inspectable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from case_studies.indexing.demonstrations import DEFAULT_RULES, rule_factories
from wield.agents.sb3_classes import SB3_ALGORITHMS

if TYPE_CHECKING:  # torch is imported when an agent is built, not when the options are declared
    from wield.agents import DQNAgent, SB3Agent
    from wield.demonstrations import DemonstrationDataset
    from wield.workflows import RunRecord

SB3_AGENTS = tuple(SB3_ALGORITHMS)  # sb3-dqn is refused by validation: indexing has several action heads
AGENTS = ("dqn", "dqfd") + SB3_AGENTS
AGENT_LABELS = {"dqn": "DQN", "dqfd": "DQfD", "sb3-ppo": "SB3 PPO", "sb3-maskable-ppo": "sb3-contrib MaskablePPO",
                "sb3-a2c": "SB3 A2C", "sb3-dqn": "SB3 DQN"}


# The Q network a design's DQN and DQfD use unless the [agent] block names one: the shortlist design's actions are
# the rows of its candidate table, scored by one shared network (wield.agents.networks.SlotQNetwork).
DESIGN_NETWORKS = {"shortlist": "slots"}


def learner_config(learner: str, actions: str, block: Mapping[str, Any] | None) -> Any:
    """The ``DQNConfig`` / ``DQfDConfig`` a run of ``learner`` on the design ``actions`` is built with: the [agent]
    ``block``, with the design's default network where the block names none (``hyperparameters.make_config``)."""
    from wield.agents import hyperparameters

    given = dict(block or {})
    if actions in DESIGN_NETWORKS and "network" not in given:
        given["network"] = DESIGN_NETWORKS[actions]
    return hyperparameters.make_config(learner, given)


def training_tasks(schedule) -> list[list[Any]]:
    """The distinct query tasks of a schedule, in the order episodes first play them."""
    seen: dict[int, list[Any]] = {}
    for episode, task in enumerate(schedule.episodes):
        if task not in seen:
            seen[task] = schedule.task_for_episode(episode)
    return list(seen.values())


def workload_demonstrations(task, schedule, rules=DEFAULT_RULES, progress: bool = False,
                            metadata: Mapping[str, Any] | None = None) -> DemonstrationDataset:
    """Label every distinct task of ``schedule`` with ``rules`` (expert rewards; nothing is measured)."""
    from wield.agents import DQfDConfig
    from wield.demonstrations import DemonstrationWorkflow, select_rules

    config = DQfDConfig()
    chosen = select_rules(rules, rule_factories(task.schema.k, config.expert_margin, task.system, task.converter))
    workflow = DemonstrationWorkflow(task.system, task.converter, expert_reward=config.expert_reward)
    return workflow.label_trace(training_tasks(schedule), chosen, progress=progress, metadata=metadata)


def make_run_agent(config, task, schedule, seed: int, record: RunRecord, *, progress: bool = False,
                   echo: Callable[[str], None] = print) -> DQNAgent | SB3Agent:
    """The run's agent, pretrained when it is DQfD (see the module docstring)."""
    from wield.agents import DQfDAgent, DQNAgent, SB3Agent, hyperparameters
    from wield.demonstrations import DemonstrationDataset

    space = (task.schema.state_space, task.schema.action_space)
    if config.agent == "dqn":
        return DQNAgent(*space, learner_config("dqn", config.actions, config.hyperparameters), seed=seed)
    if config.agent in SB3_AGENTS:
        return SB3Agent(config.agent, *space, seed=seed, budget=config.episodes * config.queries,
                        hyperparameters=hyperparameters.for_learner(config.agent, config.hyperparameters))
    if config.demonstrations:
        dataset = DemonstrationDataset.load(config.demonstrations, task.schema)
        source = {"source": "file"}
    else:
        dataset = workload_demonstrations(task, schedule, rules=config.rules, progress=progress,
                                          metadata={"built_from": "the run's training workload",
                                                    "schedule_seed": schedule.seed})
        dataset.save(record.file("demonstrations"))
        source = {"source": "training workload", "rules_used": list(config.rules)}
    agent = DQfDAgent(*space, learner_config("dqfd", config.actions, config.hyperparameters), seed=seed,
                      demonstration_capacity=len(dataset))
    agent.add_demonstrations(dataset)
    echo(f"pretraining DQfD on {len(dataset)} demonstrations ({', '.join(dataset.rule_counts())}) "
         f"for {config.pretrain_steps} steps")
    stats = agent.pretrain(config.pretrain_steps, progress=progress)
    record.write_json("demonstrations.json", {**dataset.identity(), **source, "pretrain": stats,
                                              "metadata": dataset.metadata})
    return agent


def check_sb3_agent(agent: str, k: int) -> None:
    """Refuse a Stable-Baselines3 agent that cannot act on k action heads, or whose extra is not installed."""
    from wield.agents.sb3 import check_fits, import_sb3_class
    from case_studies.indexing.schema import IndexingSchema

    check_fits(agent, IndexingSchema(("field",), k=k).action_space)
    import_sb3_class(agent)
