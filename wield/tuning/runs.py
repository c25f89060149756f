"""The runs of one tuning trial: ``wield run CASE`` with the sampled hyperparameters, once per seed, in process.

A ``RunTemplate`` holds the options of ``wield run CASE`` that ``wield tune CASE`` was given (its base: the
case study's options, a ``--config`` file's, ``--set``'s) and builds, for sampled hyperparameters and a
seed, the table a run's ``config.toml`` holds (``run_table``: every option with the value used and the
learner's every hyperparameter, ``wield.cli.config_file.options_table``). ``run_seed`` runs exactly what
``wield run CASE --config THAT-TABLE --out DIR`` runs: the table is turned into the same command-line
tokens (``config_tokens``), parsed by the same options, and handed to the same handler (``run_command``),
with ``--quiet --json`` and its printed JSON discarded; the run record gets that ``config.toml``. So a tuned
configuration written out as ``best.toml`` reruns the trial's run with ``wield run CASE --config best.toml``.

The score of a run is its learning verdict's held-out score of the learned greedy policy (``verdict
["greedy_return"]``: the mean over the verdict's held-out instances of the case study's score, higher is
better; indexing: the reward of the index set built). While a run trains, each finished episode's return is
handed to ``on_episode`` (``wield.workflows.watching_episodes``), which the study uses for pruning.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import math
from pathlib import Path
from typing import Any, Callable, Mapping

from wield.errors import ConfigError
from wield.plugins import CaseStudy

SCORE_KEY = "greedy_return"


def run_parser(study: CaseStudy) -> argparse.ArgumentParser:
    """The options of ``wield run NAME`` (as ``wield.cli.main`` declares them), on a parser of their own."""
    from wield.cli.experiment import add_common_options, add_experiment_arguments

    parser = argparse.ArgumentParser(prog=f"wield run {study.name}", add_help=False)
    study.add_options(parser)
    add_common_options(parser)
    add_experiment_arguments(parser)
    return parser


class RunTemplate:
    """The runs of ``wield run NAME`` a tuning trial makes: the base options, the learner and its seeds."""

    def __init__(self, study: CaseStudy, base: Mapping[str, Any]) -> None:
        """``base``: option destinations of ``wield run NAME`` to the values given to ``wield tune NAME``
        (the others keep ``wield run``'s defaults)."""
        self.study = study
        self.base = dict(base)
        self.parser = run_parser(study)
        self.namespace = self.parser.parse_args([])
        known = vars(self.namespace)
        for key, value in base.items():
            if key not in known:
                raise ConfigError(key, value, reason=f"not an option of 'wield run {study.name}'")
            setattr(self.namespace, key, value)

    @property
    def learner(self) -> str:
        """The method the runs train (``--method`` / ``--agent``; else the case study's first method)."""
        for name in ("agent", "method"):
            value = getattr(self.namespace, name, None)
            if isinstance(value, str) and value:
                return value
        if self.study.methods:
            return self.study.methods[0]
        raise ConfigError("method", None, reason=f"'wield run {self.study.name}' names no learner to tune")

    def base_block(self) -> dict[str, Any]:
        """The ``[agent]`` hyperparameters given to ``wield tune`` (``--agent-param``, ``[agent]``, ``--set``)."""
        from wield.cli.config_file import agent_parameters

        return agent_parameters(self.namespace)

    def run_table(self, params: Mapping[str, Any], seed: int) -> dict[str, Any]:
        """The ``config.toml`` table of the run with hyperparameters ``params`` (over the base's) and ``seed``."""
        from wield.cli.config_file import options_table

        namespace = self._namespace(params, seed)
        return options_table(self.parser, namespace, self.study.hyperparameters_used)

    def _namespace(self, params: Mapping[str, Any], seed: int) -> argparse.Namespace:
        from wield.command_config import toml_value

        namespace = copy.deepcopy(self.namespace)
        namespace.seed = int(seed)
        learner = self.learner
        sampled = [f"{learner}.{key}={toml_value(value)}" for key, value in params.items()]  # the learner's own
        namespace.agent_params = list(getattr(namespace, "agent_params", None) or []) + sampled
        return namespace

    def run_seed(self, table: Mapping[str, Any], out: Path,
                 on_episode: Callable[[Any], None] | None = None) -> float:
        """Run ``wield run NAME`` with the options ``table`` into the run record ``out``; its score."""
        from wield.cli.config_file import config_tokens
        from wield.cli.experiment import run_command
        from wield.command_config import recording_command_config
        from wield.io import read_json
        from wield.workflows.training import watching_episodes
        from wield.workflows.verdict_settings import verdict_settings

        tokens = config_tokens(self.parser, table, f"wield run {self.study.name}")
        args = self.parser.parse_args([*tokens, "--out", str(out), "--quiet", "--json"])
        watcher = on_episode if on_episode is not None else (lambda result: None)
        printed = io.StringIO()  # --json's document: the score is read from the record instead
        with recording_command_config(self.study.name, dict(table), "run"), \
                verdict_settings(args.verdict_cap), watching_episodes(watcher), \
                contextlib.redirect_stdout(printed):
            run_command(self.study, args)
        summary = read_json(out / "summary.json")
        verdict = summary.get("verdict") if isinstance(summary, dict) else None
        score = verdict.get(SCORE_KEY) if isinstance(verdict, dict) else None
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
            raise ConfigError("case study", self.study.name, reason=(
                f"its run in {out} has no learning verdict with a held-out greedy score (verdict.{SCORE_KEY}): "
                "nothing to tune on (is --method a learner?)"))
        return float(score)
