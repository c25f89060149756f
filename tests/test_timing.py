"""The time split of the study's Table 6.2: named categories, Wield's own code as the remainder, and the
split shown by ``wield compare`` and ``wield report`` for every method of a comparison; and the same time by
phase (what a trial was doing, wall and CPU seconds), recorded in every trial's summary."""

from __future__ import annotations

import time

import pytest

from wield.io import read_json
from wield.protocols import TrialSummary
from wield.workflows.timing import (AGENT_ACTING, SYSTEM, TOTAL, WIELD, Stopwatch, phase_rows, shares, time_split,
                                    total_phases, total_timing)


def test_stopwatch_categories_and_the_remainder_add_up_to_the_wall_time():
    stopwatch = Stopwatch()
    with stopwatch(AGENT_ACTING):
        time.sleep(0.02)
    time.sleep(0.05)  # time measured elsewhere (as the engine's counters are) plus Wield's own
    stopwatch.add(SYSTEM, 0.01)
    stopwatch.add(SYSTEM, 0.005)
    timing = stopwatch.timing()
    assert timing[AGENT_ACTING] >= 0.02 and timing[SYSTEM] == pytest.approx(0.015)
    assert timing[WIELD] >= 0
    assert timing[AGENT_ACTING] + timing[SYSTEM] + timing["agent_updating"] + timing[WIELD] == \
        pytest.approx(timing[TOTAL])
    assert sum(shares(timing).values()) == pytest.approx(1.0)


def test_more_measured_time_than_wall_time_never_gives_negative_wield_time():
    split = time_split({SYSTEM: 3.0, AGENT_ACTING: 2.0}, total=4.0)
    assert split[WIELD] == 0.0 and split[TOTAL] == 4.0
    assert total_timing([split, split])[SYSTEM] == 6.0


def test_compare_and_report_show_where_each_methods_time_went(tmp_path, capsys):
    from wield.analysis.report import write_report
    from wield.cli import main

    out = tmp_path / "cmp"
    assert main(["compare", "indexing", "--class", "C2", "--trials", "1", "--methods", "dqn,random,none",
                 "--documents", "2000", "--queries", "4", "--episodes", "2", "--repetitions", "1", "--quiet",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Table 6.2" in printed and "system (engine)" in printed
    table = printed[printed.index("Table 6.2"):].splitlines()
    for method in ("dqn", "random", "none"):
        assert any(line.startswith(method) and "%" in line for line in table)
    summary = TrialSummary.from_dict(read_json(out / "dqn" / "trials" / "trial-000" / "summary.json"))
    assert summary.timing[SYSTEM] > 0 and summary.timing[TOTAL] == pytest.approx(summary.seconds)
    assert sum(summary.timing[name] for name in summary.timing if name != TOTAL) == pytest.approx(summary.seconds)
    report = write_report(out).read_text()
    assert "Where the time went (Table 6.2)" in report and "Wield's own code" in report
    # the same trials by phase: what each was doing, wall and CPU seconds
    phases = summary.phases
    for phase in ("build", "training", "verdict", "verdict: greedy policy", "verdict: random policy",
                  "verdict: advisor", "evaluation", "evaluation: building", "evaluation: latency rounds"):
        assert phase in phases and phases[phase]["wall"] >= 0 and phases[phase]["cpu"] >= 0, phase
    assert phases["evaluation: latency rounds"]["count"] == summary.metrics["latency_rounds"]
    assert phases["training"]["wall"] <= summary.seconds and phases["verdict"]["wall"] <= summary.seconds
    searched = TrialSummary.from_dict(read_json(out / "random" / "trials" / "trial-000" / "summary.json")).phases
    baseline = TrialSummary.from_dict(read_json(out / "none" / "trials" / "trial-000" / "summary.json")).phases
    assert "training" in searched and "verdict" not in searched and "training" not in baseline
    assert "evaluation" in baseline


def test_phases_add_wall_and_cpu_time_by_name_and_sum_over_runs():
    stopwatch = Stopwatch()
    for _ in range(2):
        with stopwatch.phase("verdict"), stopwatch.phase("verdict: advisor"):
            sum(i * i for i in range(20_000))  # CPU work
    with stopwatch.phase("evaluation"):
        time.sleep(0.02)  # wall time, hardly any CPU
    phases = stopwatch.phases
    assert phases["verdict"]["count"] == 2 and phases["verdict: advisor"]["cpu"] > 0
    assert phases["evaluation"]["wall"] >= 0.02 and phases["evaluation"]["cpu"] < phases["evaluation"]["wall"]
    summed = total_phases([phases, phases])
    assert summed["verdict"]["count"] == 4 and summed["evaluation"]["wall"] == pytest.approx(2 * phases["evaluation"]["wall"])
    lines = phase_rows(summed)
    assert lines[0].startswith("verdict ") and lines[1].startswith("  advisor ") and "(4x)" in lines[1]


def test_a_summary_with_a_phase_that_is_not_figures_is_refused_naming_it():
    from wield.errors import ConfigError

    with pytest.raises(ConfigError, match=r"summary.phases\['training'\]"):
        TrialSummary(trial=0, method="dqn", transitions=1, evaluations=1, metrics={},
                     phases={"training": {"wall": "soon"}})
