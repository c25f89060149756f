"""Where a run's time goes: a stopwatch with named categories, and the study's time split (Table 6.2).

The study reported how its wall time divided between the system (the database executing queries and
building indexes), the agent (acting and updating) and the framework itself. ``Stopwatch`` collects those
figures: ``with stopwatch("agent_acting"): ...`` adds the block's wall time to a category, ``add`` adds time
measured elsewhere (e.g. an adapter's own count of seconds inside the engine). ``time_split`` turns the
categories into the table's rows: every category with its share of the total, and Wield's own code as the
remainder (total minus every measured category), so the shares always add up to 100%.

Phases cut the same time the other way, by what the run was doing rather than by who did it:
``with stopwatch.phase("verdict: advisor"): ...`` adds the block's wall time *and* the CPU time of this
process (every thread) to the phase, with a count of the blocks. Phases may nest (``verdict`` around
``verdict: advisor``); a name's prefix up to ``": "`` names its parent, so a reader can sum or indent them.
A trial's phases become its summary's ``phases`` (``{"training": {"wall": s, "cpu": s, "count": 1}, ...}``).
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterable, Iterator, Mapping

#: The study's categories, in the order the table shows them. ``wield`` is what is left of the total.
SYSTEM = "system"
AGENT_ACTING = "agent_acting"
AGENT_UPDATING = "agent_updating"
WIELD = "wield"
TOTAL = "total"
CATEGORIES = (SYSTEM, AGENT_ACTING, AGENT_UPDATING, WIELD)
LABELS = {SYSTEM: "system (engine)", AGENT_ACTING: "agent: acting", AGENT_UPDATING: "agent: updating",
          WIELD: "Wield's own code"}


class Stopwatch:
    """Seconds by named category, and the wall time since the stopwatch started."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.phases: dict[str, dict[str, float]] = {}

    @contextlib.contextmanager
    def __call__(self, category: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``category``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(category, time.perf_counter() - started)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the ``with`` block's wall seconds and this process's CPU seconds to phase ``name``."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            entry = self.phases.setdefault(name, {"wall": 0.0, "cpu": 0.0, "count": 0})
            entry["wall"] += time.perf_counter() - wall
            entry["cpu"] += time.process_time() - cpu
            entry["count"] += 1

    def add(self, category: str, seconds: float) -> None:
        self.seconds[category] = self.seconds.get(category, 0.0) + float(seconds)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def timing(self) -> dict[str, float]:
        """Seconds by category with ``wield`` (the remainder) and ``total`` (wall time so far) added."""
        return time_split(self.seconds, self.elapsed())


def time_split(seconds: Mapping[str, float], total: float) -> dict[str, float]:
    """Every category of ``seconds``, ``wield`` = total minus all of them (never negative), and ``total``."""
    measured = {name: float(value) for name, value in seconds.items() if name not in (WIELD, TOTAL)}
    split = {name: measured.get(name, 0.0) for name in CATEGORIES if name != WIELD}
    split.update({name: value for name, value in measured.items() if name not in split})
    split[WIELD] = max(0.0, float(total) - sum(measured.values()))
    split[TOTAL] = float(total)
    return split


def total_timing(timings: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Seconds by category summed over several runs (e.g. the trials of one method)."""
    summed: dict[str, float] = {}
    for timing in timings:
        for name, value in timing.items():
            summed[name] = summed.get(name, 0.0) + float(value)
    return summed


def total_phases(phases: Iterable[Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Phases (``Stopwatch.phases``) summed over several runs, every figure of every phase; the phases in the
    order they first appear."""
    runs = list(phases)
    names = dict.fromkeys(name for run in runs for name in run)
    return {name: total_timing(run[name] for run in runs if name in run) for name in names}


def phase_rows(phases: Mapping[str, Mapping[str, float]]) -> list[str]:
    """One line per phase, a sub-phase (``"parent: part"``) indented under its parent: wall and CPU seconds
    and how many blocks."""
    groups: dict[str, list[str]] = {}  # every parent with its parts, in the order they first appear
    for name in phases:
        groups.setdefault(name.split(": ", 1)[0], []).append(name)
    ordered = [name for group in groups.values() for name in sorted(group, key=lambda n: n.count(": "))]
    lines = []
    for name in ordered:
        figures = phases[name]
        depth = name.count(": ")
        label = name.rsplit(": ", 1)[-1] if depth else name
        lines.append(f"{'  ' * depth}{label:{max(1, 34 - 2 * depth)}s} wall {float(figures.get('wall', 0.0)):9.1f} s"
                     f"   CPU {float(figures.get('cpu', 0.0)):9.1f} s   ({int(figures.get('count', 0))}x)")
    return lines


def shares(timing: Mapping[str, float]) -> dict[str, float]:
    """Each category's share of ``timing["total"]`` (0 when the total is 0)."""
    total = float(timing.get(TOTAL, 0.0))
    return {name: (float(value) / total if total > 0 else 0.0) for name, value in timing.items() if name != TOTAL}


def time_split_rows(timings: Mapping[str, Mapping[str, float]]) -> list[dict[str, str]]:
    """Table rows, one per name (e.g. method): seconds and share of every category, and the total."""
    rows = []
    for name, timing in timings.items():
        share = shares(timing)
        row = {"what": name}
        for category in [*CATEGORIES, *(c for c in timing if c not in CATEGORIES and c != TOTAL)]:
            seconds = float(timing.get(category, 0.0))
            row[LABELS.get(category, category)] = f"{seconds:.1f} s ({share.get(category, 0.0):.1%})"
        row["total"] = f"{float(timing.get(TOTAL, 0.0)):.1f} s"
        rows.append(row)
    return rows


def format_time_split(timing: Mapping[str, float]) -> str:
    """One line: ``system 95.1 s (95.1%), agent: acting ...``."""
    share = shares(timing)
    parts = [f"{LABELS.get(name, name)} {float(value):.1f} s ({share[name]:.1%})"
             for name, value in timing.items() if name != TOTAL]
    return ", ".join(parts) + f"; total {float(timing.get(TOTAL, 0.0)):.1f} s"
