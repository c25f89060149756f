"""How close to the advisor a policy that imitates it could get on the shortlist design, and where a trained one
falls short (issue 42, goal 2; docs/design.md 5.27).

On ``--workloads`` new 10-query workloads of the training templates (drawn as ``benchmarks/estimated_advisor.py``
draws them: ``derive_seed(--stream-seed, --stream, i)``), per collection, every set scored on the engine with
the task's reward against the unrestricted advisor's (``advisor.shared_advice``):

- **the teacher's play**: the demonstration rule (``--rules``: ``advisor`` or ``advisor-search``, what ``wield
  demonstrate indexing --rules`` labels with) played as the policy: at each step its label (the teacher's set's
  index the shortlist ranks first among those not built, else no-op). Its reward is a perfect imitator's on
  this design; the line counts the workloads where the teacher's whole set was not reached on the shortlist,
  and the next the workloads where its labels depart from the estimated advisor's rule (below): it stops while
  slot 1 still gains, takes another slot, or builds where slot 1 does not gain.
- **the estimated advisor** (``estimated_advisor.estimated_advice``): what a policy that builds slot 1 while
  the estimates say it gains chooses, the rule the shortlist's ranking starts a learner from.
- with ``--model``, **a trained policy's greedy play** (``budgeted.PolicyPlayer``; a ``model.pt`` of a shortlist
  DQN or DQfD trial on that collection, its Q network read as weights only): its reward, and its workloads split
  by what it built (the teacher's set, the estimated advisor's, or another) and by size against the teacher's
  set (fewer, as many, more indexes), with the reward each group lost.

Each line gives the mean reward minus the advisor's with its paired 95% t interval and the gap as a share of the
advisor's reward. What produced each: a rule's play (teacher, estimated advisor) or a learned policy.

    python benchmarks/imitation_ceiling.py --collection generated,flights --workloads 30 --stream ceiling
    python benchmarks/imitation_ceiling.py --collection flights --model RUN/trials/trial-000/model.pt
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimated_advisor import (add_collection_options, add_stream_options, collection_named,  # noqa: E402
                               greedy_player, parsed_options)

from case_studies.indexing.advisor import shared_advice  # noqa: E402
from case_studies.indexing.budgeted import PolicyPlayer, workload_evaluator  # noqa: E402
from case_studies.indexing.build import build_indexing_task, held_out_templates  # noqa: E402
from case_studies.indexing.cost_estimate import StatisticsCostModel  # noqa: E402
from case_studies.indexing.decision_cost import t_interval  # noqa: E402
from case_studies.indexing.demonstrations import MEASURING_RULES, rule_factories  # noqa: E402
from case_studies.indexing.estimated_advisor import estimated_advice  # noqa: E402
from case_studies.indexing.index_spec import IndexSpec  # noqa: E402
from case_studies.indexing.shortlist_design import SHORTLIST_FEATURES  # noqa: E402
from wield.envs.episode import StepContext  # noqa: E402
from wield.errors import ConfigError  # noqa: E402
from wield.seeding import derive_seed  # noqa: E402
from workloads import QueryWorkloadConfig, make_query_schedule  # noqa: E402


def teacher_play(rule: Any, workload: Sequence[Any], converter: Any = None) -> tuple[list[IndexSpec], set[str]]:
    """The set the rule's labels build, one decision per query (the episode a demonstration records), and, given
    the shortlist converter, the ways its labels depart from the estimates' rule on the workload (``departure``)."""
    built: list[IndexSpec] = []
    departed: set[str] = set()
    for step, query in enumerate(workload):
        context = StepContext(item=query, workload=workload, step=step, episode=0, state=tuple(built))
        label = rule.label(list(built), context)
        spec = None if label is None or label.action is None else label.action.canonical()
        if converter is not None:
            departed.add(departure(converter, built, context, spec))
        if spec is not None and spec not in built:
            built.append(spec)
    return built, departed - {""}


KINDS = ("stops where slot 1 still gains", "takes another slot", "builds where slot 1 does not gain")  # departure


def departure(converter: Any, built: Sequence[IndexSpec], context: Any, spec: IndexSpec | None) -> str:
    """How the teacher's choice ``spec`` departs from building slot 1 while the estimates say it gains (the
    estimated advisor's rule): one of ``KINDS``, or "" where it does not."""
    state = converter.system_to_agent_state(list(built), context)
    gains = bool(state["candidates"][0, SHORTLIST_FEATURES.index("improves")] > 0)
    offered = converter.schema.offered(context)
    first = offered[0] if offered and gains else None
    if spec == first:
        return ""
    return KINDS[0] if spec is None else KINDS[1] if gains else KINDS[2]


def trained_player(task: Any, model: str) -> PolicyPlayer:
    """A player of ``model``'s Q network (a shortlist DQN or DQfD trial's ``model.pt``, read as weights only)."""
    from wield.workflows.run_record import load_weights

    agent = greedy_player(task).agent
    state = load_weights(model)
    try:
        agent.online.load_state_dict(state["online"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ConfigError("model", model, reason="expected the model.pt of a DQN or DQfD trial on the shortlist "
                                                 f"design of this collection ({error})") from None
    return PolicyPlayer(agent, task.schema, task.converter)  # its NumPy pass from the loaded weights


def _line(label: str, differences: list[float], advisor: list[float]) -> str:
    mean, low, high = t_interval(differences)
    return (f"  {label}: minus the advisor {mean:+.4f} [{low:+.4f}, {high:+.4f}], a gap of "
            f"{-100 * mean / abs(statistics.fmean(advisor)) + 0.0:.1f}% of its reward")


def _group(policy: set, teacher: set, estimated: set) -> str:
    kind = "the teacher's set" if policy == teacher else "the estimated advisor's set" if policy == estimated \
        else "another set"
    size = ("fewer indexes than" if len(policy) < len(teacher) else "more indexes than"
            if len(policy) > len(teacher) else "as many indexes as")
    return f"{kind}, {size} the teacher's"


def ceiling(name: str, documents: int, workloads: int, stream: str, stream_seed: int, rules: str,
            model: str | None = None) -> list[str]:
    collection = collection_named(name, documents)
    with tempfile.TemporaryDirectory(prefix="wield-ceiling-") as cache:
        task = build_indexing_task(collection, cache_dir=cache)
        try:
            return _ceiling(task, collection, name, workloads, stream, stream_seed, rules, model)
        finally:
            task.close()


def _ceiling(task: Any, collection: Any, name: str, workloads: int, stream: str, stream_seed: int, rules: str,
             model: str | None) -> list[str]:
    system, converter = task.system, task.converter
    rule = rule_factories(task.schema.k, system=system, converter=converter)[rules]()
    estimates = StatisticsCostModel(converter.statistics)
    player = None if model is None else trained_player(task, model)
    config = QueryWorkloadConfig(n_queries=10, exclude_templates=held_out_templates(collection))
    advisor, teacher, estimated, learned = [], [], [], []
    unreached = 0
    departing: Counter = Counter()  # workloads per way the teacher departs from the estimates' rule
    groups: dict[str, list[float]] = defaultdict(list)
    for i in range(workloads):
        schedule = make_query_schedule(collection, config, derive_seed(stream_seed, stream, i), 1,
                                       per_episode=False)
        workload = list(schedule.task_for_episode(0))
        evaluate = workload_evaluator(system, converter, workload)
        advised = shared_advice(system, converter, workload).reward
        played, departed = teacher_play(rule, workload, converter)
        departing.update(departed)
        departing["workloads"] += bool(departed)
        target = {spec.canonical() for spec in rule.advice(workload)}
        unreached += bool(target - set(played))
        chosen = estimated_advice(estimates, converter, workload, task.schema.k, aggregate=system.aggregate)
        advisor.append(advised)
        teacher.append(evaluate(played) - advised)
        estimated.append(evaluate(chosen.configuration) - advised)
        if player is not None:
            greedy = set(player.rollout(workload).configuration)
            learned.append(evaluate(list(greedy)) - advised)
            groups[_group(greedy, set(played), set(chosen.configuration))].append(learned[-1])
        system.configure([])
    lines = [f"{name} ({len(collection):,} rows; {workloads} workloads of stream '{stream}', seed {stream_seed}; "
             f"teacher: the '{rules}' rule):",
             _line("teacher's play (a perfect imitator)", teacher, advisor)
             + f"; the teacher's set not reached on the shortlist on {unreached} of {workloads}",
             _line("estimated advisor (slot 1 while the estimates gain)", estimated, advisor),
             f"  the teacher departs from the estimated advisor's rule on {departing['workloads']} of {workloads} "
             "workloads; it " + ", ".join(f"{kind} on {departing[kind]}" for kind in KINDS)]
    if player is not None:
        lines.append(_line(f"trained policy's greedy play ({Path(model or '').name})", learned, advisor))
        for group, lost in sorted(groups.items()):
            lines.append(f"    {group}: {len(lost)} workloads, reward lost {sum(lost):+.4f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_collection_options(parser)
    parser.add_argument("--rules", default="advisor", choices=MEASURING_RULES,
                        help="the teacher whose labels are played (default advisor)")
    parser.add_argument("--model", default=None,
                        help="a trained shortlist policy's model.pt (one collection only) to play beside them")
    add_stream_options(parser, workloads=30)
    args = parsed_options(parser, argv, "a paired interval")
    names = [part.strip() for part in args.collection.split(",") if part.strip()]
    if args.model is not None and len(names) != 1:
        parser.error("--model plays a policy trained on one collection: give one --collection with it")
    for name in names:
        for line in ceiling(name, args.documents, args.workloads, args.stream, args.stream_seed, args.rules,
                            args.model):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
