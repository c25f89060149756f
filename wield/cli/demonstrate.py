"""``wield demonstrate CASE_STUDY``: turn labelling rules (or a person's demonstrations) into a dataset.

The core owns the common options (``--rules``, ``--episodes``, ``--out``, ``--quiet``), validates rule
names against the case study's ``DemonstrationHook.rules``, calls the hook's ``build`` and saves the
dataset it returns in the documented directory format (``wield.demonstrations.dataset``), then prints
what was written. Case studies without a hook are not listed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wield.cli.studies import case_study_commands
from wield.errors import ConfigError
from wield.plugins import CaseStudy, DemonstrationHook


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
                                 f"allowed: {', '.join(hook.rules)} (default: {','.join(hook.default_rules)})"
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
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ConfigError("out", str(out), reason="exists and is not an empty directory; choose a new one")
        dataset = hook.build(args)
        manifest = dataset.save(out)
        rules = ", ".join(f"{name}: {count}" for name, count in manifest["rules"].items())
        print(f"{manifest['count']} demonstrations in {manifest['trajectories']} trajectories ({rules})")
        print(f"schema {manifest['schema']['name']} fingerprint {manifest['schema']['fingerprint']}; "
              f"content sha256 {manifest['content_sha256'][:16]}")
        print(f"dataset: {out}  (inspect steps.jsonl; use with "
              f"'wield run {study.name} --method dqfd --demonstrations {out}')")
        return 0
    return handler


def _hook(study: CaseStudy) -> DemonstrationHook:
    """The case study's demonstration hook (only case studies that have one get the command)."""
    if study.demonstrations is None:
        raise ConfigError("case study", study.name, reason="has no demonstration hook")
    return study.demonstrations
