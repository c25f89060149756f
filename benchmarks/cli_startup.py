"""CPU-seconds of ``wield ... --help`` for every command and sub-command (issue 46: each under 1.0).

Every command path of the parser (``wield``, ``wield run``, ``wield run indexing``, ``wield compare
placement``, ``wield db start``, ...) is found by walking ``wield.cli.build_parser()`` (case studies by their
entry-point names, nothing imported), then ``wield PATH --help`` runs ``--repeats`` times in a fresh process,
the commands interleaved so that a burst of load on the machine does not fall on one command. The figure is
the child's CPU time (user + system, ``resource.getrusage(RUSAGE_CHILDREN)``), not wall time, so a loaded
machine changes it little; the median and the largest of the repeats are printed, and the exit status is 1
when a median reaches ``--limit``.

    python benchmarks/cli_startup.py                    # every command, 5 repeats
    python benchmarks/cli_startup.py --repeats 9 --json
    python benchmarks/cli_startup.py run indexing       # the paths that start with these words
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
from typing import Sequence


def command_paths() -> list[tuple[str, ...]]:
    """Every command path of the ``wield`` parser, the top level first (``()`` is ``wield`` itself)."""
    from wield.cli.main import build_parser
    from wield.cli.studies import CaseStudyParsers

    paths: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        paths.append(path)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                # a case-study command lists only the case studies that have it (wield demonstrate: not caching)
                offered = ({sub.dest for sub in action._get_subactions()} if isinstance(action, CaseStudyParsers)
                           else set(action.choices))
                for name, child in action.choices.items():
                    if name in offered:
                        walk(child, (*path, name))

    walk(build_parser(), ())
    return paths


def wield_command() -> list[str]:
    """The installed ``wield`` script, as a user runs it (else the module)."""
    script = shutil.which("wield")
    return [script] if script else [sys.executable, "-m", "wield.cli"]


def cpu_seconds(argv: Sequence[str]) -> float:
    """CPU-seconds (user + system) of one run of ``argv`` to its end; its output is discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", nargs="*", help="measure only the command paths starting with these words")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per command (median)")
    parser.add_argument("--limit", type=float, default=1.0, help="CPU-seconds a median must stay under")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    paths = [p for p in command_paths() if tuple(p[:len(args.prefix)]) == tuple(args.prefix)]
    if not paths:
        parser.error(f"no command path starts with {' '.join(args.prefix)!r}")
    base = wield_command()
    samples: dict[tuple[str, ...], list[float]] = {path: [] for path in paths}
    for _ in range(args.repeats):  # interleaved: every command once per round
        for path in paths:
            samples[path].append(cpu_seconds([*base, *path, "--help"]))
    rows = [{"command": " ".join(("wield", *path, "--help")), "median_cpu_s": statistics.median(values),
             "max_cpu_s": max(values), "repeats": len(values)} for path, values in samples.items()]
    over = [row for row in rows if row["median_cpu_s"] >= args.limit]
    if args.json:
        print(json.dumps({"limit_cpu_s": args.limit, "python": sys.version.split()[0], "commands": rows}, indent=2))
    else:
        width = max(len(row["command"]) for row in rows)
        print(f"{'command':{width}s}  median CPU-s  max CPU-s   ({args.repeats} runs each, limit {args.limit:g})")
        for row in rows:
            flag = "  OVER" if row["median_cpu_s"] >= args.limit else ""
            print(f"{row['command']:{width}s}  {row['median_cpu_s']:12.2f}  {row['max_cpu_s']:9.2f}{flag}")
        print(f"{len(rows) - len(over)} of {len(rows)} commands under {args.limit:g} CPU-second")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
