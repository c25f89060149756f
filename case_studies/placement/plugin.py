"""The placement case study's entry in the ``wield`` command: options, ``wield run placement`` and the hooks
for ``--class`` experiments and ``wield compare placement``."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from case_studies.placement.methods import DECLARED, METHODS, OBJECTIVE
from wield.cli.config_file import add_agent_parameter_option, agent_parameters
from wield.configs import parse_name_list
from wield.errors import ConfigError
from wield.plugins import CaseStudy
from wield.cli.output import print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from case_studies.placement.config import PlacementRunConfig
    from case_studies.placement.topology import BUILTIN
    from workloads.graphs import FAMILIES

    d = PlacementRunConfig()
    graphs = parser.add_argument_group("graph and devices")
    graphs.add_argument("--family", choices=list(FAMILIES), default=d.family,
                        help="graph family: an NMT encoder-decoder (LSTM layers, attention) traced with torch.fx, "
                             "forward and backward; transformer and convnet are the out-of-distribution families")
    graphs.add_argument("--batch", type=int, default=None, help="batch size (default: the family's, 64 for nmt)")
    graphs.add_argument("--unroll", type=int, default=None, help="nmt unroll length (default 10, ~3,000 operations)")
    graphs.add_argument("--graph", metavar="FILE", default=None,
                        help="place a graph file written by ComputationGraph.save (with profiled seconds) instead")
    graphs.add_argument("--topology", default=d.topology,
                        help=f"devices and links: built-in {', '.join(BUILTIN)} or a JSON topology file")
    search = parser.add_argument_group("placement search")
    search.add_argument("--method", choices=METHODS, default=d.method,
                        help="the placer whose run (or trials) this is: wield = PPO grouper + placer task graph; "
                             "sb3-maskable-ppo, sb3-ppo, sb3-a2c = Stable-Baselines3 reference learners on the "
                             "placement environment, one graph evaluation per step (pip install 'wield[sb3]')")
    search.add_argument("--baselines", default="grappler,random,heft,single",
                        help="single run only: methods also run side by side at the same budget ('none': skip)")
    search.add_argument("--budget", type=int, default=d.budget, help="graph evaluations per run (n)")
    gen = parser.add_argument_group("generalisation classes (C3-C6)")
    gen.add_argument("--train-graphs", type=int, default=d.train_graphs, help="training graphs per trial")
    gen.add_argument("--test-graphs", type=int, default=d.test_graphs, help="unseen test graphs per trial")
    gen.add_argument("--test-samples", type=int, default=d.test_samples,
                     help="placements of each test graph by the trained policy (greedy first; best counts)")
    gen.add_argument("--matrix-budget", type=int, default=d.matrix_budget,
                     help="evaluations per model of the cross-graph matrix (0: no matrix)")
    add_agent_parameter_option(search)  # --agent-param KEY=VALUE; a config file's [agent] block
    output = parser.add_argument_group("output")
    output.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="traced graphs and profiled operation costs (default: $WIELD_CACHE_DIR or ~/.cache/wield)")


def config_from_args(args: argparse.Namespace) -> dict:
    from case_studies.placement.config import PlacementRunConfig

    config = PlacementRunConfig(
        family=args.family, topology=args.topology, method=args.method, budget=args.budget, seed=args.seed,
        batch=args.batch, unroll=args.unroll, graph=args.graph, train_graphs=args.train_graphs,
        test_graphs=args.test_graphs, test_samples=args.test_samples, matrix_budget=args.matrix_budget,
        cache_dir=args.cache_dir, hyperparameters=agent_parameters(args) or None).validate()
    config.check_hyperparameters(getattr(args, "methods", "").split(","))  # wield compare: every learner named
    return asdict(config)


def _baselines(text: str, method: str) -> tuple[str, ...]:
    if text.strip() == "none":
        return ()
    names = parse_name_list(text, "baselines", METHODS + ("none",), what="method")
    if "none" in names:
        raise ConfigError("baselines", text, METHODS, reason="'none' stands alone (no baselines)")
    return tuple(m for m in names if m != method)


def run(args: argparse.Namespace) -> int:
    """``wield run placement``: ``--method`` and the ``--baselines`` side by side on one graph, judged by the
    run's objective."""
    import time

    from case_studies.placement.methods import METHOD_NOTES
    from case_studies.placement.config import PlacementRunConfig
    from wield.cli.experiment import objective_line
    from wield.protocols import verdict_lines
    from wield.tables import methods_table
    from wield.workflows import RunRecord, run_objective, run_trial

    config = PlacementRunConfig.from_dict(config_from_args(args))
    config.baselines = list(_baselines(args.baselines, config.method))
    out = args.out or f"runs/placement-{config.method}-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    quiet = args.quiet or args.json
    summary = run_trial("placement", asdict(config), config.single_run_seeds(), out, progress=not quiet)
    record = RunRecord(out)
    if args.json:
        print_json("evaluation", record.read_json("evaluation.json"))
        return 0
    print()
    print(methods_table(summary.methods, [BY_NAME[name] for name in TABLE]))
    print()
    for name in summary.methods:
        print(f"  {name:9s} {METHOD_NOTES[name]}")
    print("  (each method's row: the best placement it measured within its budget; for a learner that is "
          "a search outcome, its learned policy is judged by the verdict below)")
    print()
    for line in verdict_lines(summary.verdict):
        print(line)
    objective = run_objective(OBJECTIVE)  # --objective's (wield.cli.experiment.run_command), else the study's
    print(objective_line(objective, summary).replace("transitions", "graph evaluations"))
    print(f"{summary.seconds:.0f} s")
    print(f"run record: {record.path}  (figure: {record.file('results.png')})")
    return 0


def _trial(config, seeds, record):
    from case_studies.placement.run import run_placement_trial

    return run_placement_trial(config, seeds, record)


def _hyperparameters_used(options, block):
    """The [agent] table of a run's config.toml (``CaseStudy.hyperparameters_used``): the ``wield`` placer builds
    ``WieldPlacerConfig`` from the class's defaults and the block, so every value it uses is written; the
    Stable-Baselines3 placers keep the block as given (their defaults stay the library's)."""
    if options.get("method") != "wield":
        return dict(block)
    from dataclasses import asdict

    import case_studies.placement.wield_placer  # noqa: F401  registers the 'wield' learner's keys
    from wield.agents import hyperparameters

    return asdict(hyperparameters.make_config("wield", block))


def _make_env(**kwargs):
    from case_studies.placement.env import make_placement_env

    return make_placement_env(**kwargs)


TABLE = ("evaluations", "best_step_time_ms", "initial_mean_step_time_ms", "improvement", "speedup_vs_single_device",
         "speedup_vs_heft", "invalid_placements")
BY_NAME = {metric.name: metric for metric in DECLARED}

CASE_STUDY = CaseStudy(
    name="placement",
    description="device placement of a traced PyTorch training step (NMT) on simulated devices",
    add_arguments=add_arguments,
    run=run,
    config_from_args=config_from_args,
    system_work="the device simulator measuring placements' step times",
    trial_function=_trial,
    objective=OBJECTIVE,  # speed-up over the single-device placement >= 1.1 (methods.py says why)
    metrics=DECLARED,
    methods=METHODS,
    compare_metrics=("improvement", "best_step_time_ms", "speedup_vs_single_device", "speedup_vs_heft"),
    make_env=_make_env,
    reproducible=True,
    versions=("numba", "stable-baselines3", "sb3-contrib"),
    hyperparameters_used=_hyperparameters_used,  # config.toml's [agent]: the wield placer's every value
    random_search="random",  # random devices for the layer-major groups, at the learner's budget
)
