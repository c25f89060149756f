"""``wield demonstrate CASE_STUDY``: turn labelling rules (or a person's demonstrations) into a dataset.

The core owns the common options (``--rules``, ``--episodes``, ``--out``, ``--quiet``), validates rule
names against the case study's ``DemonstrationHook.rules``, calls the hook's ``build`` and saves the
dataset it returns in the documented directory format (``wield.demonstrations.dataset``), then prints
what was written. The dataset directory gets a ``wield.log`` (``wield.logs.record_log``) as every run record
does: what the command logged while building and saving it, and how it ended. Case studies without a hook are
not listed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from wield.cli.studies import case_study_commands
from wield.errors import ConfigError
from wield.logs import LOG_FILE, get_logger, record_log
from wield.plugins import CaseStudy, DemonstrationHook
from wield.workflows.ownership import ensure_directory

log = get_logger(__name__)


def add_demonstrate_command(commands, formatter=None) -> None:
    parser = commands.add_parser(
        "demonstrate", help="build a demonstration dataset from labelling rules (for DQfD pretraining)",
        description="Label a workload trace with rules (or import a person's demonstrations) and save the "
                    "labelled transitions as a demonstration dataset directory for "
                    "'wield run CASE_STUDY --method dqfd --demonstrations DIR'.")
    options = {"formatter_class": formatter} if formatter is not None else {}

    def configure(study: CaseStudy, sub: argparse.ArgumentParser) -> None:
        hook = _hook(study)
        sub.description = f"Demonstrations for {study.name}: {study.description}."
        common = sub.add_argument_group("demonstrations")
        common.add_argument("--rules", default=None,
                            help=f"comma-separated labelling rules, one trajectory per rule and episode; "
                                 f"allowed: {', '.join(hook.rules)} "
                                 f"(default: {hook.default_rules_help or ','.join(hook.default_rules)})"
                                 "%(default).0s")
        common.add_argument("--episodes", type=int, default=1,
                            help="workload episodes (traces) to label with every rule")
        common.add_argument("--out", metavar="DIR", required=True,
                            help="dataset directory to write (manifest.json, arrays.npz, steps.jsonl)")
        common.add_argument("--quiet", action="store_true", help="no progress bar")
        hook.add_arguments(sub)
        sub.set_defaults(handler=_handler(study))

    case_study_commands(parser).add_case_studies(configure, offers=lambda study: study.demonstrations is not None,
                                                 why_not="has no demonstration hook", **options)


def check_rules(value: str | None, allowed: tuple[str, ...]) -> list[str] | None:
    """The rule names of ``--rules`` (``None`` when not given); unknown names list the allowed ones."""
    if value is None:
        return None
    from wield.configs import parse_name_list

    return parse_name_list(value, "rules", allowed, what="labelling rule")


def _handler(study: CaseStudy):
    def handler(args: argparse.Namespace) -> int:
        hook = _hook(study)
        args.rules = check_rules(args.rules, hook.rules)
        if isinstance(args.episodes, bool) or args.episodes < 1:
            raise ConfigError("episodes", args.episodes, reason="must be an integer >= 1")
        out = Path(args.out)
        # empty, or holding only the wield.log of an attempt that failed (this one appends to it)
        if out.exists() and (not out.is_dir() or any(p.name != LOG_FILE for p in out.iterdir())):
            raise ConfigError("out", str(out), reason="exists and is not an empty directory; choose a new one")
        out = ensure_directory(out, "out", owned=True)
        with record_log(out, trial=False):  # DIR/wield.log, as every run record has
            manifest = _build_and_save(study, hook, args, out)
        rules = ", ".join(f"{name}: {count}" for name, count in manifest["rules"].items())
        print(f"{manifest['count']} demonstrations in {manifest['trajectories']} trajectories ({rules})")
        print(f"schema {manifest['schema']['name']} fingerprint {manifest['schema']['fingerprint']}; "
              f"content sha256 {manifest['content_sha256'][:16]}")
        print(f"dataset: {out}  (inspect steps.jsonl; use with "
              f"'wield run {study.name} --method dqfd --demonstrations {out}')")
        return 0
    return handler


def _build_and_save(study: CaseStudy, hook: DemonstrationHook, args: argparse.Namespace, out: Path) -> dict:
    """The hook's dataset, saved into ``out``; its manifest. The steps go to ``out/wield.log``, as a run's do."""
    rules = ",".join(args.rules or (hook.default_rules_for(args) if hook.default_rules_for else hook.default_rules))
    log.info("demonstrations of %s into %s started (process %d): rules %s, %d episode(s)", study.name, out,
             os.getpid(), rules, args.episodes)
    log.debug("command line: %s", " ".join(sys.argv))
    try:
        dataset = hook.build(args)
        manifest = dataset.save(out)
    except BaseException as exc:
        log.info("demonstrations ended %s: %s", "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                 f"{type(exc).__name__}: {exc}"[:2000])
        raise
    log.info("demonstrations finished: %d in %d trajectories (%s), content sha256 %s", manifest["count"],
             manifest["trajectories"], ", ".join(f"{k}: {v}" for k, v in manifest["rules"].items()),
             manifest["content_sha256"])
    return manifest


def _hook(study: CaseStudy) -> DemonstrationHook:
    """The case study's demonstration hook (only case studies that have one get the command)."""
    if study.demonstrations is None:
        raise ConfigError("case study", study.name, reason="has no demonstration hook")
    return study.demonstrations
