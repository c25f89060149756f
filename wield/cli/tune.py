"""``wield tune CASE``: search the learner's ``[agent]`` hyperparameters with Optuna, resumably.

Each Optuna trial samples the search space (``--space FILE``'s ``[tune.space]`` table, else the learner's
built-in space, ``wield.tuning.space``) and runs ``wield run CASE`` with those hyperparameters once per seed
(``--seed`` .. ``--seed + --seeds - 1``, as ``wield run --seed`` derives a run's seeds), in this process; the
trial's objective is the mean over its seeds of the learning verdict's held-out score of the learned greedy
policy (higher is better). The study lives in ``--out`` (``wield.tuning.study``): rerunning the same command
resumes it, after a ``kill -9`` too. At the end: a table of the trials, the best configuration, and
``best.toml``, which ``wield run CASE --config OUT/best.toml`` reruns. Optuna is imported only when the command
runs (``pip install 'wield[tune]'``), so ``wield tune --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from wield.errors import ConfigError
from wield.given_options import OPTIONS_GIVEN
from wield.plugins import CaseStudy
from wield.cli.studies import case_study_commands

# Keys of a run's config.toml that belong to `wield run`'s experiments (--class ...), not to tune: a run's
# config.toml given as --config BASE skips them (tune's own --trials and --workers are flags).
RUN_ONLY_KEYS = ("trials", "workers", "executor", "address", "class_name", "class", "objective", "objective_metric",
                 "objective_threshold", "log")
DEFAULT_TRIALS = 20


def add_tune_command(commands: Any, formatter: type[argparse.HelpFormatter] = argparse.HelpFormatter) -> None:
    """Register ``wield tune`` with one sub-command per installed case study."""
    parser = commands.add_parser(
        "tune", help="search a learner's hyperparameters (Optuna: TPE, median pruning; resumable)",
        description="Search the learner's [agent] hyperparameters of a case study with Optuna: each trial runs "
                    "'wield run CASE' with sampled hyperparameters on --seeds seeds; its objective is the mean "
                    "held-out score of the learned greedy policy (the learning verdict's). Rerunning the same "
                    "command resumes the study (also after kill -9). Needs Optuna: pip install 'wield[tune]'.",
        formatter_class=formatter)

    def configure(study: CaseStudy, sub: argparse.ArgumentParser) -> None:
        sub.description = (
            f"Tune the learner of {study.name} ({study.description}).\n\n"
            "Every option of 'wield run' below sets the runs' base configuration, as do --config FILE (e.g. a run "
            "record's config.toml; its experiment keys trials, workers, executor, class are skipped) and --set "
            "agent.KEY=VALUE; the search space overrides the hyperparameters it names. Each trial runs "
            f"'wield run {study.name}' with seeds --seed .. --seed + --seeds - 1; objective: the mean of the "
            "learning verdict's held-out score of the greedy policy (higher is better). The trials' run records go "
            "to OUT/trials/NNNN/seed-S/; OUT/best.toml is the best trial's first run's config.toml:\n"
            f"  wield run {study.name} --config OUT/best.toml --out OTHER_DIR\n"
            "reruns it. The search space (--space FILE; TOML, YAML or JSON):\n"
            "  [tune.space]\n"
            "  learning_rate = {low = 1e-5, high = 1e-2, log = true}\n"
            "  epsilon_decay_steps = {low = 100, high = 2000}     # integers\n"
            "  gamma = {choices = [0.9, 0.99]}\n"
            "  hidden_sizes = {choices = [[64], [64, 64]]}\n"
            "Without --space, the learner's built-in space (DQN and DQfD: learning_rate, batch_size, hidden_sizes, "
            "gamma, epsilon_decay_steps, target_sync_every).")
        before = {action.dest for action in sub._actions}
        study.add_options(sub)
        run_dests = tuple(a.dest for a in sub._actions if a.dest not in before and a.dest != argparse.SUPPRESS)
        add_tune_arguments(sub, study)
        sub.set_defaults(handler=lambda args: tune_command(study, args, run_dests), config_ignores=RUN_ONLY_KEYS)

    case_study_commands(parser).add_case_studies(configure, formatter_class=formatter)


def add_tune_arguments(parser: argparse.ArgumentParser, study: CaseStudy) -> None:
    group = parser.add_argument_group("tuning")
    group.add_argument("--trials", type=int, default=DEFAULT_TRIALS, metavar="N",
                       help="trials to finish (complete or pruned); rerunning with a larger N goes on")
    group.add_argument("--seeds", type=int, default=1, metavar="K",
                       help="runs per trial, with seeds --seed .. --seed + K - 1; the objective is their mean")
    group.add_argument("--seed", type=int, default=0, help="the first seed of every trial's runs")
    group.add_argument("--space", metavar="FILE", default=None,
                       help="the search space: a TOML, YAML or JSON file with a [tune.space] table (see above); "
                            "default: the learner's built-in space")
    group.add_argument("--sampler-seed", type=int, default=0, metavar="S",
                       help="seed of the TPE sampler (a resumed study derives its seed from S and the trials so "
                            "far)")
    group.add_argument("--no-pruning", dest="pruning", action="store_false",
                       help="run every trial to its end (default: median pruning on the training curve: a trial "
                            "whose mean episode return falls below the median of the earlier trials' at the same "
                            "episode, past the first half of its first run's episodes and from the sixth trial on, is "
                            "stopped)%(default).0s")
    group.add_argument("--workers", type=int, default=1, metavar="W",
                       help="trials run at once, each in a process of a local pool (1: one after another in this "
                            "process); W trials are asked of the sampler at a time, and the next W start when all "
                            "of them have ended")
    group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="where the --workers trials run at once: a local process pool, or Ray (pip install "
                            "'wield[ray]'; a local Ray instance, or the cluster at --address, whose workers must "
                            "see the tune directory)")
    group.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
    group.add_argument("--out", metavar="DIR", default=None,
                       help=f"the tune directory: study, trials' run records, best.toml (default: runs/tune-"
                            f"{study.name}); rerunning with the same settings resumes it")
    group.add_argument("--verdict-cap", type=int, default=None, metavar="N",
                       help="the most held-out instances a rung of each run's learning verdict is decided on "
                            "(as in wield run; default 50); fewer make trials faster and the objective noisier")
    group.add_argument("--quiet", action="store_true", help="no line per trial and seed (the table is printed)")


def tune_command(study: CaseStudy, args: argparse.Namespace, run_dests: tuple[str, ...]) -> int:
    """``wield tune NAME``: run (or resume) the study, print its trials and the best configuration."""
    from wield.tuning.runs import RunTemplate
    from wield.tuning.space import check_space, default_space, read_space, space_table
    from wield.tuning.study import BEST_FILE, TuneSpec, Tuner, import_optuna, silent
    from wield.workflows.executors import check_workers

    for name, minimum in (("trials", 1), ("seeds", 1)):
        if getattr(args, name) < minimum:
            raise ConfigError(name, getattr(args, name), reason=f"must be >= {minimum}")
    check_workers(args.workers)
    if getattr(args, "evaluate_checkpoint", None):
        raise ConfigError("evaluate-checkpoint", args.evaluate_checkpoint, reason="wield tune trains in every trial; "
                                                                                  "it evaluates no checkpoint")
    _refuse_run_only_assignments(args)
    import_optuna()  # a one-line error naming the extra, before anything is written
    base = {dest: getattr(args, dest) for dest in run_dests if hasattr(args, dest)}
    base["verdict_cap"] = args.verdict_cap
    template = RunTemplate(study, base)
    learner = template.learner
    seeds = [args.seed + offset for offset in range(args.seeds)]
    first = template.run_table({}, seeds[0])
    checked = template.parser.parse_args(_tokens(template, first))
    setattr(checked, OPTIONS_GIVEN, getattr(args, OPTIONS_GIVEN, frozenset()))  # what tune's own command line gave
    study.config(checked)  # the base run's options, checked now (check_given included), before the space's
    space = read_space(args.space) if args.space else default_space(learner)
    check_space(space, learner, template.base_block())
    spec = TuneSpec(study.name, learner, {k: v for k, v in first.items() if k != "seed"}, space_table(space), seeds,
                    args.sampler_seed, args.pruning)
    out = Path(args.out) if args.out else Path("runs") / f"tune-{study.name}"
    echo = silent if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    episodes = first.get("episodes")
    warmup = int(episodes) // 2 if isinstance(episodes, int) else 0
    tuner = Tuner(out, spec, space, template, echo)
    tuner.check_spec()
    echo(f"tune: {study.name}, learner {learner}, {args.trials} trials of {len(seeds)} run(s) each (seeds "
         f"{', '.join(map(str, seeds))}); space: " + "; ".join(d.describe() for d in space.values()))
    echo(f"tune directory: {out}")
    tuner.open(args.trials, warmup)
    try:
        outcomes = tuner.run(args.trials, args.workers, args.executor, args.address)
        tuner.write_results()
        best = tuner.best()
    finally:
        tuner.close()
    print(trials_table(outcomes, list(space), seeds))
    print()
    if best is None:
        print(f"no trial completed (every one was pruned or failed): no best configuration; {out}/trials.json")
        return 0
    print(f"best: trial {best.number}, objective {best.objective:.4f} (mean held-out greedy score over seeds "
          f"{', '.join(map(str, seeds))}): " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in best.params.items()))
    print(f"best configuration: {out / BEST_FILE} (the run of trial {best.number} with seed {seeds[0]}: "
          f"{out / 'trials' / f'{best.number:04d}' / f'seed-{seeds[0]}'})")
    print(f"rerun it: wield run {study.name} --config {out / BEST_FILE} --out {out / 'best-run'}")
    return 0


def _tokens(template: Any, table: dict[str, Any]) -> list[str]:
    from wield.cli.config_file import config_tokens

    return config_tokens(template.parser, table, f"wield run {template.study.name}")


def _refuse_run_only_assignments(args: argparse.Namespace) -> None:
    """``--set trials=8`` would be skipped like a run's config.toml's key: refuse it instead."""
    for item in getattr(args, "set", None) or ():
        key = str(item).partition("=")[0].strip()
        if key in RUN_ONLY_KEYS:
            raise ConfigError("--set", item, reason=f"'{key}' is an option of wield run's experiments, not of "
                                                    "wield tune (give tune's --trials and --workers as flags)")


def trials_table(outcomes: list[Any], names: list[str], seeds: list[int]) -> str:
    """One row per trial: number, state, objective, each seed's score and the sampled hyperparameters."""
    from wield.analysis import format_table

    rows = []
    for outcome in outcomes:
        state = outcome.state + (f" (step {outcome.pruned_at})" if outcome.pruned_at is not None else "")
        state += f" (retry of {outcome.retry_of})" if outcome.retry_of is not None else ""
        state += " (interrupted)" if outcome.error == "interrupted" else " (error)" if outcome.error else ""
        row: dict[str, Any] = {"trial": outcome.number, "state": state,
                               "objective": "-" if outcome.objective is None else f"{outcome.objective:.4f}"}
        for seed in seeds:
            score = outcome.scores.get(str(seed))
            row[f"seed {seed}"] = "-" if score is None else f"{score:.4f}"
        for name in names:
            value = outcome.params.get(name)
            row[name] = "-" if value is None else f"{value:.4g}" if isinstance(value, float) else json.dumps(value)
        rows.append(row)
    columns = [("trial", "trial", "d"), ("state", "state", None), ("objective", "objective", None)]
    columns += [(f"seed {seed}", f"seed {seed}", None) for seed in seeds]
    columns += [(name, name, None) for name in names]
    return format_table(rows, columns)
