"""Case-study plugins: how the ``wield`` command finds case studies without importing them by name.

A case study exposes a ``CaseStudy`` object and registers it under the entry-point group
``wield.case_studies`` in its package metadata (see pyproject.toml); the entry point's name should be the
case study's name (the core then loads only that entry point when it needs one case study, e.g. in a trial
worker, and names its gymnasium id after it). The core only iterates that group. docs/new-system.md walks
through every field with a complete example.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from wield.configs import is_finite_number
from wield.errors import ConfigError
from wield.given_options import OPTIONS_GIVEN, OPTIONS_SEEN, RecordedStore, options_seen  # noqa: F401 (API)
from wield.metrics import Metric, MetricTable, metric_table
from wield.protocols.objective import Objective

if TYPE_CHECKING:
    from wield.protocols import TrialSeeds, TrialSummary
    from wield.workflows.run_record import RunRecord

ENTRY_POINT_GROUP = "wield.case_studies"
# Extra top-level commands: ``name = "package.module:add_command"`` where ``add_command(subparsers,
# formatter_class)`` adds one sub-command (e.g. ``wield db`` of the indexing case study's database servers).
COMMAND_GROUP = "wield.commands"


@dataclass(frozen=True)
class DemonstrationHook:
    """What ``wield demonstrate NAME`` needs from a case study: the labelling-rule names ``--rules`` accepts
    (and the default ones), the case study's own options, and ``build(args) -> DemonstrationDataset``.

    The core parses ``--rules`` (a validated list in ``args.rules``, ``None`` when not given: ``build`` then
    uses its defaults, which the core names in its log as ``default_rules_for(args)`` where they depend on
    the case study's other options, else ``default_rules``), ``--episodes``, ``--out`` and ``--quiet``, then
    saves and summarises the dataset ``build`` returns. ``default_rules_help`` replaces the rule names after
    "default:" in ``--help`` when given.
    """

    rules: tuple[str, ...]
    default_rules: tuple[str, ...]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], Any]
    default_rules_for: Callable[[argparse.Namespace], Sequence[str]] | None = None
    default_rules_help: str | None = None


@dataclass(frozen=True)
class Option:
    """A simple option of a case study: ``--NAME`` (underscores become dashes) of the default's type, at
    least ``minimum`` and at most ``maximum`` when given (a number option is finite in any case), one of
    ``choices`` when given; its value goes into the run configuration under ``name``."""

    name: str
    default: Any
    help: str
    minimum: float | None = None
    choices: tuple[Any, ...] | None = None
    maximum: float | None = None

    def check(self, value: Any) -> None:
        """Refuse ``value`` outside the bounds (``ConfigError`` naming the option, the value and the range)."""
        if isinstance(self.default, bool) or not isinstance(self.default, (int, float)):
            return
        low = f"{self.minimum:g}" if self.minimum is not None else None
        high = f"{self.maximum:,.0f}" if self.maximum is not None and self.maximum >= 1e4 else (
            f"{self.maximum:g}" if self.maximum is not None else None)
        allowed = (f"in [{low}, {high}]" if low and high else f">= {low}" if low else f"<= {high}" if high
                   else "finite")
        ok = is_finite_number(value) and (self.minimum is None or value >= self.minimum) and \
            (self.maximum is None or value <= self.maximum)
        if not ok:
            kind = "an integer" if isinstance(self.default, int) else "a finite number"
            raise ConfigError(self.name, value, reason=f"must be {kind}{' ' + allowed if allowed != 'finite' else ''} "
                                                       f"({self.help})")


@dataclass(frozen=True)
class CaseStudy:
    """A system under Wield: what ``wield run / compare / progress / reproduce / report`` and
    ``gymnasium.make("wield/<Name>-v0")`` need from it.

    Required: ``name``, ``description``, ``trial_function(config, seeds, record) -> TrialSummary`` (a
    top-level function: trials may run in other processes), ``metrics`` (every evaluation metric, declared
    once with its unit and direction) and ``objective`` (the success predicate behind C_i(n, s, f)).

    The core adds ``--out``, ``--quiet``, ``--json`` and ``--seed`` to every command of every case study;
    a case study adds its own options as ``options`` (simple ``Option``s: the core adds them and builds the
    configuration) or with ``add_arguments(parser)`` plus ``config_from_args(args) -> dict`` (a
    JSON-serialisable configuration, validated before anything runs). The core starts and finishes the run
    record of every trial (``wield.workflows.run_trial``), so the trial function only trains, evaluates and
    writes its own files into the record.

    Optional: ``methods`` (what ``wield compare --methods`` accepts, the first is the default learner; the
    trial function reads ``config["method"]``), ``compare_metrics`` (the metrics of comparison tables and
    report bars), ``make_env(**kwargs)`` (the gymnasium environment registered as ``wield/<Name>-v0``),
    ``run(args)`` (a custom ``wield run NAME`` without ``--class``; default: one trial with
    ``TrialSeeds.single_run(--seed)`` and a table of every method's metrics), ``reproducible`` (the run is a
    pure function of its configuration and seeds, so ``wield reproduce`` reruns it and compares the
    summaries exactly) or a custom ``reproduce(run_dir) -> {"match": bool, "differences": [...]}``,
    ``demonstrations`` (``wield demonstrate NAME``), ``versions`` (extra libraries whose versions the run
    record keeps) and ``extras`` (declarations of numbers the trial reports in ``TrialSummary.extras`` that
    the trial table shows, e.g. indexing's train/test similarity).

    Random references (``wield.protocols.references``): ``random_policy`` names the row of
    ``TrialSummary.methods`` that holds the uniformly random policy measured beside a learner in every
    trial, and ``random_search`` the method that searches at random with the learner's budget; classifications
    show what each reaches under the objective beside a learner's f.
    ``greedy_policy`` names the row of the learned greedy policy, with ``{method}`` standing for the trial's
    method (e.g. ``"{method}-greedy"``): where a method's own row is a search outcome (the best
    configuration seen in training), the classification also reports the greedy policy's f on the same
    trials as ``classification.references.greedy``.

    ``learners`` (optional) maps the methods whose hyperparameters a config file's ``[agent]`` block may set to
    the learner they are in ``wield.agents.hyperparameters`` (e.g. ``{"ppo": "ppo", "maskable-ppo":
    "sb3-maskable-ppo"}``); for a case study built from ``options`` the core then adds ``--agent-param`` and
    puts the block into the configuration as ``hyperparameters`` (absent when none is given), checked against
    the configured method (in ``wield compare``, every method named) before anything runs. The trial function
    builds its learner with ``hyperparameters.make_config`` / ``for_learner``. A case study with
    ``add_arguments`` does the same itself (``wield.cli.config_file.add_agent_parameter_option``).

    ``method_costs`` (optional) gives the relative time one trial of a method is expected to take (any
    unit; a method not named counts 1). It only orders work: ``wield compare`` submits the trials of the
    costliest methods first, so parallel workers end together instead of one long trial running alone at
    the end. Results never depend on it.

    Report wording (optional): ``system_work`` says what the time "inside the system" of the report's
    time split holds (e.g. "the engine: queries, index builds, size measurements"), and
    ``other_metrics_note`` what the report's other recorded metrics are (e.g. "index usage: indexes created,
    uses per index"); without them the report uses neutral phrases.

    ``hyperparameters_used`` (optional): ``hyperparameters_used(options, block) -> table``, the learner's
    hyperparameters a run with these command options (by destination: ``{"agent": "dqn", "episodes": 200,
    ...}``) and this ``[agent]`` block actually uses, defaults included, for the ``[agent]`` table of the run's
    ``config.toml`` (``wield.command_config``); only values that give the same learner when read back as the
    block. Without it, ``config.toml`` holds the block as given (the learner's defaults then stay its own).

    ``check_config`` (optional) checks a configuration built from ``options`` beyond each option's bounds
    (e.g. a product of two options), raising ``ConfigError``; it runs before anything else does.
    ``check_given(config, given)`` (optional) then checks the options the user's command line gave as flags or
    ``--set`` keys (``given``: their names; a ``--config`` file's keys are not among them, so a recorded
    ``config.toml`` that holds every option still reads back), e.g. refusing an option the configured
    workload ignores, even when given its default value; it runs only on the user's own command.

    ``experiment_lines`` (optional) turns a class run's trial summaries into lines printed under its
    classification (e.g. indexing: the greedy policy against the advisor over the trials, with intervals).
    """

    name: str
    description: str
    trial_function: Callable[[Mapping[str, Any], "TrialSeeds", "RunRecord"], "TrialSummary"]
    metrics: tuple[Metric, ...]
    objective: Objective
    options: tuple[Option, ...] = ()
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    config_from_args: Callable[[argparse.Namespace], dict[str, Any]] | None = None
    methods: tuple[str, ...] = ()
    compare_metrics: tuple[str, ...] = ()
    # Configuration keys that say where a server is (host, port), not what the experiment is: they may
    # change between resumes of an experiment (a restarted server on a new port), e.g. ("uri",).
    volatile_config: tuple[str, ...] = ()
    make_env: Callable[..., Any] | None = None
    run: Callable[[argparse.Namespace], int] | None = None
    reproducible: bool = False
    reproduce: Callable[[str], dict[str, Any]] | None = None
    demonstrations: DemonstrationHook | None = None
    versions: tuple[str, ...] = ()
    extras: tuple[Metric, ...] = ()
    random_policy: str | None = None
    random_search: str | None = None
    greedy_policy: str | None = None
    method_costs: Mapping[str, float] = field(default_factory=dict, hash=False)
    learners: Mapping[str, str] = field(default_factory=dict, hash=False)
    system_work: str = ""
    other_metrics_note: str = ""
    check_config: Callable[[Mapping[str, Any]], None] | None = None  # more checks of a configuration
    # check_given(config, given): refuse options given on the command line that the configuration ignores
    check_given: Callable[[Mapping[str, Any], frozenset[str]], None] | None = None
    # the [agent] table of a run's config.toml: every hyperparameter the learner uses (see the docstring)
    hyperparameters_used: Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]] | None = None
    experiment_lines: Callable[[Sequence["TrialSummary"]], list[str]] | None = None  # under a classification

    def __post_init__(self) -> None:
        names = [metric.name for metric in self.metrics]
        for name in (*self.objective.metrics, *self.compare_metrics):
            if name not in names:
                raise ConfigError(f"case study {self.name!r} metric", name, names,
                                  reason="the objective and compare_metrics name declared metrics")
        if self.random_search is not None and self.random_search not in self.methods:
            raise ConfigError(f"case study {self.name!r} random_search", self.random_search, self.methods)
        for method, cost in self.method_costs.items():
            if method not in self.methods:
                raise ConfigError(f"case study {self.name!r} method_costs", method, self.methods)
            if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost > 0:
                raise ConfigError(f"case study {self.name!r} method_costs[{method!r}]", cost,
                                  reason="must be a positive number")
        if self.options and (self.add_arguments or self.config_from_args):
            raise ConfigError(f"case study {self.name!r}", "options", reason="give options, or add_arguments "
                              "with config_from_args, not both")

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(metric.name for metric in self.metrics)

    def declared_metrics(self) -> MetricTable:
        """The declared metrics and extras by name (undeclared names are inferred on lookup)."""
        return metric_table((*self.metrics, *self.extras))

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Add the case study's own options to ``parser``."""
        if self.add_arguments is not None:
            self.add_arguments(parser)
        group = parser.add_argument_group(self.name) if self.options else parser
        for option in self.options:
            group.add_argument("--" + option.name.replace("_", "-"), dest=option.name, default=option.default,
                               type=type(option.default), choices=option.choices, help=option.help,
                               action=RecordedStore)
        if self.learners and self.options:
            from wield.cli.config_file import add_agent_parameter_option

            add_agent_parameter_option(group)

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        """The run configuration named by ``args`` (``config_from_args``, else the options' values), checked
        before anything runs; the cache root the run would use (``--cache-dir`` or ``$WIELD_CACHE_DIR``) is
        checked too, under the ownership policy."""
        from wield.cache import cache_root

        cache_root(getattr(args, "cache_dir", None))  # the ownership policy, before any work (wield.cache)
        if self.config_from_args is not None:
            return dict(self.config_from_args(args))
        config = {option.name: getattr(args, option.name) for option in self.options}
        for option in self.options:
            option.check(config[option.name])
        if self.check_config is not None:
            self.check_config(config)
        if self.check_given is not None and hasattr(args, OPTIONS_GIVEN):
            self.check_given(config, frozenset(getattr(args, OPTIONS_GIVEN)))
        if self.learners:
            from wield.cli.config_file import agent_parameters

            block = agent_parameters(args)
            if block:
                self.check_hyperparameters(block, [str(config.get("method", "")),
                                                   *str(getattr(args, "methods", "") or "").split(",")])
                config["hyperparameters"] = block
        return config

    def check_recorded_config(self, config: Any, where: str) -> None:
        """Refuse a configuration read from a record (``where``: its file) that no command of this case study
        would have built: not a table, an option's value outside its choices or bounds, or what
        ``check_config`` refuses (``ConfigError`` naming the option and the file)."""
        if not isinstance(config, Mapping):
            raise ConfigError("config", where, reason="must be a JSON object of the run's options")
        try:
            for option in self.options:
                if option.name not in config:
                    continue
                value = config[option.name]
                if option.choices is not None and value not in option.choices:
                    raise ConfigError(option.name, value, option.choices)
                option.check(value)
            if self.check_config is not None:
                self.check_config(config)
        except ConfigError as exc:
            raise ConfigError(f"{exc.field} in {where}", exc.value, exc.allowed,
                              reason="not a value this case study's options allow") from None

    def check_hyperparameters(self, block: Mapping[str, Any], methods: list[str]) -> None:
        """Refuse an ``[agent]`` block that does not fit the learner of one of ``methods`` (see ``learners``)."""
        from wield.agents.hyperparameters import check

        for method in methods:
            if method in self.learners:
                check(self.learners[method], block)


def load_case_studies() -> dict[str, CaseStudy]:
    """Every installed case study by name."""
    studies = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        study = entry.load()
        if not isinstance(study, CaseStudy):
            raise TypeError(f"entry point {entry.value} is not a wield.plugins.CaseStudy")
        studies[study.name] = study
    return dict(sorted(studies.items()))


def load_commands() -> dict[str, Callable[..., None]]:
    """Every installed extra command's ``add_command(subparsers, formatter_class)`` by entry-point name."""
    return {entry.name: entry.load() for entry in sorted(metadata.entry_points(group=COMMAND_GROUP),
                                                          key=lambda entry: entry.name)}


def get_case_study(name: str) -> CaseStudy:
    """The installed case study called ``name``: its own entry point is loaded (the others are not imported)
    when the entry point bears the case study's name, else every one is searched."""
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        study = entry.load()
        if isinstance(study, CaseStudy) and study.name == name:
            return study
    studies = load_case_studies()
    if name not in studies:
        raise ConfigError("case study", name, list(studies))
    return studies[name]


def declared_extras(case_study: str | None) -> tuple[str, ...]:
    """The names of an installed case study's declared extras (none when it is not installed here)."""
    try:
        return tuple(metric.name for metric in get_case_study(str(case_study)).extras)
    except ConfigError:
        return ()


def installed(case_study: str | None) -> CaseStudy | None:
    """The installed case study of that name, or None (records of a case study not installed here)."""
    try:
        return get_case_study(str(case_study))
    except ConfigError:
        return None


def declared_metrics(case_study: str | None) -> MetricTable:
    """The metric declarations of an installed case study, or inferred ones when it is not installed here."""
    try:
        return get_case_study(str(case_study)).declared_metrics()
    except ConfigError:
        return metric_table()
