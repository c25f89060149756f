"""The time split of the study's Table 6.2: named categories, Wield's own code as the remainder, and the
split shown by ``wield compare`` and ``wield report`` for every method of a comparison."""

from __future__ import annotations

import time

import pytest

from wield.io import read_json
from wield.protocols import TrialSummary
from wield.workflows.timing import (AGENT_ACTING, SYSTEM, TOTAL, WIELD, Stopwatch, shares, time_split,
                                    total_timing)


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
