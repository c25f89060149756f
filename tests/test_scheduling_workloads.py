"""Scheduling workloads: stream kinds, seeded determinism, JSON round trips, the named families, the Azure
Functions trace reader, the execution-time profiles, and clear errors for bad input."""

import math
from pathlib import Path

import numpy as np
import pytest

from case_studies.scheduling.azure_trace import azure_trace_workload, read_azure_trace
from case_studies.scheduling.families import AZURE_LIKE, azure_like_workload, low_slo_workload, model_kinds
from case_studies.scheduling.profile import RESNET50_BATCH1_MS, linear_profile, load_profile
from case_studies.scheduling.rebuild import build_workload
from case_studies.scheduling.workload import Stream, Workload
from wield.errors import ConfigError, DataError


def test_stream_kinds_generate_their_arrivals():
    workload = Workload("kinds", (50.0,) * 3, [
        Stream(0, "fixed-rate", rate=100.0),  # every 10 ms
        Stream(1, "trace-replay", counts=(3, 0, 2), period_ms=100.0),
        Stream(2, "closed-loop", concurrency=2, start_ms=5.0),
        Stream(2, "poisson", rate=200.0)], duration_ms=300.0, seed=4)
    arrivals = workload.arrivals()
    assert np.all(np.diff(arrivals.times_ms) >= 0)
    fixed = arrivals.times_ms[arrivals.models == 0]
    assert fixed.tolist() == pytest.approx([10.0 * k for k in range(30)])
    trace = arrivals.times_ms[arrivals.models == 1]
    assert trace.size == 3 + 2 and np.sum(trace < 100) == 3 and np.sum(trace >= 200) == 2
    closed = arrivals.closed & (arrivals.models == 2)
    assert arrivals.times_ms[closed].tolist() == [5.0, 5.0]  # the closed-loop clients' first requests
    assert workload.closed_loop_end_ms().tolist() == [-math.inf, -math.inf, 300.0]
    assert workload.offered_rate() == pytest.approx(100.0 + 5 / 0.3 + 200.0)
    truncated = Workload("cut", (50.0,), [Stream(0, "trace-replay", counts=(0, 0, 50), period_ms=100.0)], 250.0)
    assert np.all(truncated.arrivals().times_ms < 250.0)  # nothing arrives after the workload's duration


def test_the_same_seed_gives_the_same_arrivals_and_json():
    first, again = low_slo_workload(1200, 12, 24.0, duration_s=2.0, seed=9), low_slo_workload(1200, 12, 24.0, 2.0, 9)
    assert first.fingerprint() == again.fingerprint()
    a, b = first.arrivals(), again.arrivals()
    assert np.array_equal(a.times_ms, b.times_ms) and np.array_equal(a.models, b.models)
    other = low_slo_workload(1200, 12, 24.0, duration_s=2.0, seed=10).arrivals()
    assert not np.array_equal(a.times_ms[:100], other.times_ms[:100])
    assert abs(a.times_ms.size - 2400) < 5 * math.sqrt(2400)  # Poisson: 1,200 r/s for 2 s


def test_workloads_round_trip_through_json_and_their_generator(tmp_path):
    workload = azure_like_workload(duration_s=3, seed=2)
    path = tmp_path / "azure.json"
    workload.save(path)
    loaded = Workload.load(path)
    assert loaded.fingerprint() == workload.fingerprint()
    assert np.array_equal(loaded.arrivals().times_ms, workload.arrivals().times_ms)
    rebuilt = build_workload(loaded.generator, loaded.params, loaded.seed)
    assert rebuilt.fingerprint() == workload.fingerprint()
    with pytest.raises(ConfigError, match="generator"):
        build_workload("azure-real", {}, 0)


def test_azure_like_workload_is_synthetic_heavy_tailed_and_near_the_target_rate():
    workload = azure_like_workload(duration_s=10, seed=0)
    assert "SYNTHETIC" in workload.name and workload.params["synthetic"] is True
    assert workload.generator == AZURE_LIKE and workload.n_models == 61 * 66 == 4026
    assert set(workload.slo_ms) == {100.0}
    per_model = np.bincount(workload.arrivals().models, minlength=workload.n_models)
    assert abs(per_model.sum() / 10 - 9500) < 0.15 * 9500
    ranked = np.sort(per_model)[::-1]
    assert ranked[: int(0.186 * 4026)].sum() > 0.9 * ranked.sum()  # a few instances get most requests
    assert model_kinds(workload).tolist()[:67] == [0] * 66 + [1]


def test_low_slo_family_splits_the_rate_evenly():
    workload = low_slo_workload(total_rate=2400, n_models=48, slo_ms=24.0, duration_s=1.0)
    assert workload.n_models == 48 and {s.rate for s in workload.streams} == {50.0}
    assert workload.params == {"total_rate": 2400.0, "n_models": 48, "slo_ms": 24.0, "duration_s": 1.0}


def write_trace(path, rows, minutes=3, header=None):
    header = header or ["HashOwner", "HashApp", "HashFunction", "Trigger"] + [str(i) for i in range(1, minutes + 1)]
    lines = [",".join(header)] + [",".join(map(str, row)) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_azure_trace_reader_and_replay(tmp_path):
    rows = [("o1", "a1", f"f{i}", "http", i + 1, 0, 2 * (i + 1)) for i in range(5)]
    path = write_trace(tmp_path / "invocations_per_function_md.anon.d01.csv", rows)
    trace = read_azure_trace(path)
    assert trace.minutes == 3 and trace.functions[0] == "o1/a1/f0" and trace.triggers[0] == "http"
    assert trace.counts.tolist() == [[i + 1, 0, 2 * (i + 1)] for i in range(5)]
    # minutes 1-3 onto 2 kinds x 2 copies = 4 instances: function 4 shares instance 0 with function 0;
    # 45 invocations scaled to 1 r/s over 180 s: x4 exactly
    workload = azure_trace_workload(trace, start_minute=1, minutes=3, total_rate=1.0, kinds=2, copies=2, seed=1)
    counts = {s.model: s.counts for s in workload.streams}
    assert counts[0] == (24, 0, 48) and counts[3] == (16, 0, 32)
    assert {s.period_ms for s in workload.streams} == {60_000.0} and workload.duration_ms == 180_000.0
    assert workload.params["trace_sha256"] == trace.sha256
    assert build_workload(workload.generator, workload.params, 1).fingerprint() == workload.fingerprint()
    minute_two = azure_trace_workload(path, start_minute=2, minutes=2, total_rate=1.0, kinds=1, copies=1)
    assert sum(minute_two.streams[0].counts) == 120  # all of minutes 2-3 (30 invocations) scaled to 120 s


def test_azure_trace_reader_rejects_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="'trace'.*no such file"):
        read_azure_trace(tmp_path / "missing.csv")
    with pytest.raises(DataError, match="missing column 'HashFunction'"):
        read_azure_trace(write_trace(tmp_path / "a.csv", [("o", "a", "x", 1, 2, 3)],
                                     header=["HashOwner", "HashApp", "Trigger", "1", "2", "3"]))
    with pytest.raises(DataError, match="line 3, minute 2: invocation count '-4'"):
        read_azure_trace(write_trace(tmp_path / "b.csv", [("o", "a", "f", "http", 1, 2, 3),
                                                           ("o", "a", "g", "http", 1, -4, 3)]))
    with pytest.raises(DataError, match="minute columns must be 1, 2, ..., N"):
        read_azure_trace(write_trace(tmp_path / "c.csv", [("o", "a", "f", "http", 1, 2)],
                                     header=["HashOwner", "HashApp", "HashFunction", "Trigger", "1", "3"]))
    good = write_trace(tmp_path / "d.csv", [("o", "a", "f", "http", 1, 2, 3)])
    with pytest.raises(ConfigError, match="'minutes'.*past the trace's 3 minutes"):
        azure_trace_workload(good, start_minute=2, minutes=3)


def test_profiles_are_scaled_to_the_resnet50_batch1_time_and_record_their_source():
    accelerator = load_profile()
    assert accelerator.name == "accelerator" and accelerator.ms(1) == pytest.approx(RESNET50_BATCH1_MS)
    assert accelerator.supported_ms().tolist() == pytest.approx([2.7, 3.24, 4.32, 6.48, 10.8])
    assert accelerator == linear_profile() and "assumed" in accelerator.source
    measured = load_profile("cpu-measured")
    assert measured.ms(1) == pytest.approx(RESNET50_BATCH1_MS)
    raw = measured.details["raw_ms"]
    assert len(raw) == 16 and measured.details["scale"] == pytest.approx(RESNET50_BATCH1_MS / raw[0])
    assert measured.details["device"] == "cpu" and measured.details["torch"]
    with pytest.raises(ConfigError, match="profile.*accelerator"):
        load_profile("tpu")
    with pytest.raises(ConfigError, match="batch"):
        accelerator.ms(17)


def test_the_published_clockwork_profile_names_its_source_and_times_a_workload_that_asks_for_it():
    """The shipped clockwork-resnet50 profile is Clockwork's published check_model figures (the file agrees with
    the code that writes it); a workload timed by it runs every ResNet-50 instance with them, the Azure-like
    families re-scaled from its line, its JSON says so, and a workload without it keeps its old JSON."""
    from dataclasses import replace

    from case_studies.scheduling.families import azure_like_workload, low_slo_workload
    from case_studies.scheduling.profile import (CLOCKWORK_PROFILE, clockwork_profile, family_by_name, family_curve,
                                                 linear_fit, load_family_profile, profile_names)
    from case_studies.scheduling.simulator import ServingSimulator
    from case_studies.scheduling.workload import Workload

    shipped = load_profile(CLOCKWORK_PROFILE)
    assert shipped == clockwork_profile() and shipped.supported_ms().tolist() == [2.73, 4.05, 5.88, 9.93, 17.33]
    assert "docs/firstrun.md" in shipped.source and "check_model" in shipped.source
    assert shipped.ms(3) == pytest.approx((4.05 + 5.88) / 2)  # between measured sizes: interpolated
    fixed, per_image = linear_fit(shipped)
    assert fixed == pytest.approx(2.002, abs=1e-3) and per_image == pytest.approx(0.9648, abs=1e-4)
    assert profile_names()[0] == "accelerator" and CLOCKWORK_PROFILE in profile_names()

    plain = low_slo_workload(600, 4, 24.0, 0.2, seed=3)
    timed = replace(plain, timing=CLOCKWORK_PROFILE)
    assert "timing" not in plain.to_dict() and timed.to_dict()["timing"] == CLOCKWORK_PROFILE
    assert timed.fingerprint() != plain.fingerprint()
    assert Workload.from_json(timed.to_json()).timing == CLOCKWORK_PROFILE
    assert ServingSimulator(timed, 2).exec_ms.tolist() == [shipped.supported_ms().tolist()] * 4
    assert ServingSimulator(plain, 2).exec_ms.tolist() == [load_profile().supported_ms().tolist()] * 4
    assert replace(plain, timing="accelerator").to_json() == plain.to_json()
    assert plain.with_timing("accelerator") is plain and timed.with_timing(CLOCKWORK_PROFILE) is timed
    assert plain.with_timing(CLOCKWORK_PROFILE).to_json() == timed.to_json()
    with pytest.raises(ConfigError, match="'profile'.*clockwork-resnet50"):
        replace(plain, timing="tpu")

    azure = replace(azure_like_workload(duration_s=1, seed=0, total_rate=200.0), timing=CLOCKWORK_PROFILE)
    curves = azure.execution_profiles()
    first = azure.model_profiles[0]
    assert curves[0] == family_curve(family_by_name(first), reference=(fixed, per_image))
    assert curves[0] != load_family_profile(first) and "ASSUMED" in curves[0].source


def test_bad_workload_input_names_the_field():
    with pytest.raises(ConfigError, match="stream.kind.*closed-loop"):
        Stream(0, "bursty")
    with pytest.raises(ConfigError, match="stream.rate"):
        Stream(0, "poisson", rate=-1.0)
    with pytest.raises(ConfigError, match="stream.concurrency"):
        Stream(0, "closed-loop")
    with pytest.raises(ConfigError, match="stream.counts"):
        Stream(0, "trace-replay", counts=(1, -2))
    with pytest.raises(ConfigError, match="stream.model.*models 0..0"):
        Workload("w", (10.0,), [Stream(1, "poisson", rate=1.0)], 10.0)
    with pytest.raises(ConfigError, match="at most one closed-loop stream"):
        Workload("w", (10.0,), [Stream(0, "closed-loop", concurrency=1)] * 2, 10.0)
    with pytest.raises(ConfigError, match="slo_ms"):
        Workload("w", (0.0,), [], 10.0)
    with pytest.raises(ConfigError, match="n_models"):
        low_slo_workload(n_models=0)
    with pytest.raises(ConfigError, match="burst_correlation"):
        azure_like_workload(duration_s=1, burst_correlation=1.0)
    with pytest.raises(DataError, match="invalid JSON"):
        Workload.from_json("{", "w.json")
    with pytest.raises(ConfigError, match="stream field.*'rates'"):
        Workload.from_dict({"slo_ms": [10.0], "streams": [{"model": 0, "kind": "poisson", "rates": 1}],
                            "duration_ms": 1.0})


# ---------------------------------------------------------------- model families and multi-SLO workloads


def test_azure_like_kinds_carry_their_families_assumed_profiles():
    from case_studies.scheduling.families import AZURE_FAMILY_MIX, kind_families
    from case_studies.scheduling.profile import load_family_profile
    from case_studies.scheduling.simulator import ServingSimulator

    workload = azure_like_workload(duration_s=1, seed=3)
    assert workload.params["profiles"] == "families" and len(workload.model_profiles) == workload.n_models
    families = kind_families(61)
    assert {f: families.count(f) for f in AZURE_FAMILY_MIX} == AZURE_FAMILY_MIX
    kinds = model_kinds(workload)
    assert [workload.model_profiles[m] for m in (0, 65, 66 * 12, 4025)] == [families[k] for k in kinds[[0, 65, 792, 4025]]]
    sim = ServingSimulator(workload, 12)  # no profile passed: the workload's own, one per kind
    distinct = {tuple(row) for row in sim.exec_ms.tolist()}
    assert len(distinct) == len(AZURE_FAMILY_MIX) > 1
    for m in (0, 66 * 20, 4025):  # every copy of a kind runs its family's curve
        assert sim.exec_ms[m].tolist() == load_family_profile(workload.model_profiles[m]).supported_ms().tolist()
    assert sim.run("clockwork").arrived > 0
    flat = azure_like_workload(duration_s=1, seed=3, profiles="resnet50")
    assert flat.model_profiles == () and "model_profiles" not in flat.to_dict()
    assert {tuple(row) for row in ServingSimulator(flat, 12).exec_ms.tolist()} == {(2.7, 3.24, 4.32, 6.48, 10.8)}
    # a profile passed to the simulator still wins over the workload's own
    assert {tuple(r) for r in ServingSimulator(workload, 12, load_profile()).exec_ms.tolist()} == \
        {(2.7, 3.24, 4.32, 6.48, 10.8)}


def test_family_profiles_are_assumed_scaled_from_resnet50_and_match_their_rule():
    from case_studies.scheduling.profile import MODEL_FAMILIES, families_document, family_names, load_family_profile

    assert families_document() == __import__("json").loads(
        (Path(__file__).parents[1] / "case_studies/scheduling/profiles/families.json").read_text())
    assert family_names() == tuple(f.name for f in MODEL_FAMILIES)
    assert load_family_profile("resnet50").batch_ms == load_profile().batch_ms  # the reference curve exactly
    bert, resnet18 = load_family_profile("bert_base"), load_family_profile("resnet18")
    assert bert.details["architecture"] == "transformer" and "ASSUMED" in bert.source
    assert resnet18.ms(1) < load_profile().ms(1) < bert.ms(1)
    for name in family_names():
        curve = load_family_profile(name).supported_ms()
        assert np.all(np.diff(curve) > 0) and np.all(np.diff(curve / [1, 2, 4, 8, 16]) < 0)  # batching pays
    with pytest.raises(ConfigError, match="model_profiles.*resnet18"):
        load_family_profile("alexnet")


def test_workloads_with_model_profiles_round_trip_and_rebuild(tmp_path):
    workload = azure_like_workload(duration_s=2, seed=5)
    again = azure_like_workload(duration_s=2, seed=5)
    assert again.fingerprint() == workload.fingerprint() and again.model_profiles == workload.model_profiles
    path = tmp_path / "azure.json"
    workload.save(path)
    loaded = Workload.load(path)
    assert loaded.model_profiles == workload.model_profiles and loaded.fingerprint() == workload.fingerprint()
    assert build_workload(loaded.generator, loaded.params, loaded.seed).fingerprint() == workload.fingerprint()
    low = low_slo_workload(1200, 12, 24.0, duration_s=1.0, seed=2)  # no families: JSON without the new key
    assert low.model_profiles == () and "model_profiles" not in low.to_json() and low.execution_profiles() is None


def test_a_real_trace_format_still_loads_with_the_kinds_families(tmp_path):
    from case_studies.scheduling.families import kind_families

    rows = [("o", "a", f"f{i}", "http", 2 + i, 1, 3) for i in range(8)]
    path = write_trace(tmp_path / "invocations_per_function_md.anon.d02.csv", rows)
    workload = azure_trace_workload(path, minutes=2, total_rate=5.0, kinds=4, copies=2, seed=0)
    assert workload.model_profiles == tuple(f for f in kind_families(4) for _ in range(2))
    assert build_workload(workload.generator, workload.params, 0).fingerprint() == workload.fingerprint()
    from case_studies.scheduling.runner import run_baseline

    assert run_baseline(workload, "clockwork", 2).arrived == sum(sum(s.counts) for s in workload.streams)
    plain = azure_trace_workload(path, minutes=2, total_rate=5.0, kinds=4, copies=2, profiles="resnet50")
    assert plain.model_profiles == ()


def test_multi_slo_workload_is_seeded_and_separates_clockwork_edf_and_fifo():
    from case_studies.scheduling.families import MULTI_SLO, MULTI_SLO_GPUS, multi_slo_workload
    from case_studies.scheduling.runner import run_baseline

    workload = multi_slo_workload(duration_s=2.0, seed=1)
    assert workload.generator == MULTI_SLO and workload.n_models == 12
    assert workload.slo_ms[:3] == (10.0, 25.0, 100.0) and sorted(set(workload.slo_ms)) == [10.0, 25.0, 100.0]
    assert multi_slo_workload(duration_s=2.0, seed=1).fingerprint() == workload.fingerprint()
    assert multi_slo_workload(duration_s=2.0, seed=2).fingerprint() != workload.fingerprint()
    assert build_workload(workload.generator, workload.params, 1).fingerprint() == workload.fingerprint()
    slo = {s: run_baseline(workload, s, MULTI_SLO_GPUS).slo_satisfaction for s in ("clockwork", "edf", "fifo")}
    assert slo["clockwork"] > slo["edf"] + 3 > slo["fifo"] + 6  # about 92 / 80 / 69 % (docs/scheduling.md)
    easy = multi_slo_workload(300.0, (100.0, 1000.0), 1, duration_s=1.0)  # the study's shape, deadlines only
    assert {run_baseline(easy, s, 1).slo_satisfaction for s in ("clockwork", "edf", "fifo")} == {100.0}


def test_bad_family_and_multi_slo_arguments_name_the_field():
    from case_studies.scheduling.families import multi_slo_workload

    with pytest.raises(ConfigError, match="'profiles'.*families"):
        azure_like_workload(duration_s=1, profiles="vgg")
    with pytest.raises(ConfigError, match="'slos_ms'"):
        multi_slo_workload(slos_ms=(10.0,))
    with pytest.raises(ConfigError, match="'slos_ms'"):
        multi_slo_workload(slos_ms=(10.0, -5.0))
    with pytest.raises(ConfigError, match="'slos_ms'.*differ"):
        multi_slo_workload(slos_ms=(10.0, 10.0))
    with pytest.raises(ConfigError, match="'models_per_slo'"):
        multi_slo_workload(models_per_slo=0)
    with pytest.raises(ConfigError, match="'total_rate'"):
        multi_slo_workload(total_rate=0)
    with pytest.raises(ConfigError, match="'model_profiles'.*one per model"):
        Workload("w", (10.0, 10.0), [], 10.0, model_profiles=("resnet50",))
    with pytest.raises(ConfigError, match="'model_profiles'.*'alexnet'"):
        Workload("w", (10.0,), [], 10.0, model_profiles=("alexnet",))
    with pytest.raises(ConfigError, match="'model_profiles'"):
        Workload("w", (10.0,), [], 10.0, model_profiles="resnet50")


def test_the_urgent_batch_rule_times_each_model_with_its_own_family_profile():
    """On the Azure-like workload a ResNet-101 instance's batch of 16 takes about 20.7 ms (ResNet-50: 10.8 ms):
    with 15 ms of laxity the rule must not choose 16 for it, and does for the same state on a ResNet-50 model."""
    import numpy as np

    from case_studies.scheduling.families import azure_like_workload, low_slo_workload
    from case_studies.scheduling.rules import UrgentBatch
    from case_studies.scheduling.system import EpisodeTask, SchedulingState

    azure = azure_like_workload(duration_s=1, seed=0)
    heavy = next(m for m, name in enumerate(azure.model_profiles) if name == "resnet101")
    profile = azure.execution_profiles()[heavy]
    assert profile.ms(16) > 15.0 > profile.ms(8)

    def chosen(model: int, workload) -> int:
        state = SchedulingState(0, 10.0, np.array([model]), np.array([16]), np.array([15.0]), 0.0)
        ((_, batch),) = UrgentBatch().label(state, {"workload": [EpisodeTask(workload, 12)]}).action
        return batch

    assert chosen(heavy, azure) == 8
    assert chosen(0, low_slo_workload(duration_s=0.1)) == 16  # ResNet-50: 10.8 ms fits


def test_every_workload_family_runs_from_the_command_line(tmp_path, capsys):
    """--workload reaches the families the Python API has (issue 43): --help lists them, a tiny multi-slo run
    trains and tests on multi-SLO workloads, and a bad family is a usage error naming the choices."""
    import json

    from wield.cli.main import main

    with pytest.raises(SystemExit):
        main(["run", "scheduling", "--help"])
    help_text = capsys.readouterr().out
    assert all(family in help_text for family in ("hard", "easy", "low-slo", "multi-slo", "azure-like", "trace"))
    tiny = ["--episodes", "2", "--first-decisions", "100", "--max-decisions", "100", "--envs", "2", "--train-s",
            "0.2", "--test-s", "0.2", "--curve-s", "0.1", "--verdict-cap", "10", "--quiet"]
    out = tmp_path / "multi"
    assert main(["run", "scheduling", "--workload", "multi-slo", "--rate", "1200", "--gpus", "2", *tiny,
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["extras"]["test_workload"].startswith("multi-slo-1200rps")
    assert json.loads((out / "config.json").read_text())["workload"] == "multi-slo"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "scheduling", "--workload", "bursty"])
    assert exit_info.value.code == 2 and "multi-slo" in capsys.readouterr().err


def test_the_named_workloads_run_from_the_command_line(tmp_path, capsys):
    """hard and easy are the low-slo presets (easy: 96 ms) with --gpus and --rate applying; trace replays the
    first seconds of a trace file and needs --trace; easy refuses another --slo-ms (issue 43)."""
    import json

    from wield.cli.main import main

    tiny = ["--train-s", "0.1", "--test-s", "0.1", "--curve-s", "0.1", "--quiet"]

    def run(name: str, *flags: str) -> dict:
        out = tmp_path / name
        assert main(["run", "scheduling", *flags, *tiny, "--out", str(out)]) == 0
        return json.loads((out / "summary.json").read_text())

    hard = run("hard", "--workload", "hard", "--gpus", "4", "--method", "clockwork")
    assert hard["extras"]["test_workload"] == "low-slo-2400rps-48m-24ms" and hard["extras"]["test_gpus"] == 4
    easy = run("easy", "--workload", "easy", "--rate", "1200", "--method", "edf")
    assert easy["extras"]["test_workload"] == "low-slo-1200rps-48m-96ms" and easy["extras"]["test_gpus"] == 6
    tight = run("tight", "--workload", "hard", "--slo-ms", "8", "--method", "fifo")
    assert tight["extras"]["test_workload"] == "low-slo-2400rps-48m-8ms"
    rows = [("o1", "a1", f"f{i}", "http", 60 * (i + 1), 0) for i in range(4)]
    trace = write_trace(tmp_path / "d01.csv", rows, minutes=2)
    replayed = run("trace", "--workload", "trace", "--trace", str(trace), "--rate", "30", "--gpus", "2",
                   "--method", "fifo")
    assert replayed["extras"]["test_workload"] == "azure-trace-4026m-30rps" and replayed["extras"]["test_gpus"] == 2
    from case_studies.scheduling.tasks import configured_shape

    recorded = json.loads((tmp_path / "trace" / "config.json").read_text())
    assert configured_shape(recorded).workload(0.1, 0).duration_ms == 100.0  # 0.1 s, not the whole minute
    capsys.readouterr()
    assert main(["run", "scheduling", "--workload", "trace", "--method", "fifo", *tiny]) == 2
    assert "'trace'" in capsys.readouterr().err
    assert main(["run", "scheduling", "--workload", "easy", "--slo-ms", "48", "--method", "fifo", *tiny]) == 2
    err = capsys.readouterr().err
    assert "'slo_ms'" in err and "--workload hard --slo-ms 48" in err


def test_options_a_workload_ignores_are_usage_errors_when_given(tmp_path, capsys):
    """--models / --slo-ms (as flags or --set keys, in wield run or wield tune) on a workload that ignores them
    exit 2 with one line naming the option, the workload and what it takes, even at the default value
    (--workload easy --slo-ms 24); the defaults still show in --help, and a recorded config.toml, which holds
    every option, reads back (issue 43)."""
    from wield.cli.main import main

    tiny = ["--method", "fifo", "--train-s", "0.1", "--test-s", "0.1", "--curve-s", "0.1", "--quiet"]
    refused = [(["--workload", "easy", "--slo-ms", "24"], "slo_ms", "--rate, --models and --gpus"),
               (["--workload", "multi-slo", "--models", "48"], "models", "--rate and --gpus"),
               (["--workload", "multi-slo", "--slo", "10"], "slo_ms", "--rate and --gpus"),  # an abbreviation
               (["--workload", "azure-like", "--slo-ms", "100"], "slo_ms", "--rate and --gpus"),
               (["--workload", "trace", "--trace", "x.csv", "--models", "12"], "models", "--trace, --rate and --gpus")]
    rows = [("o1", "a1", f"f{i}", "http", 60 * (i + 1), 0) for i in range(4)]
    trace = write_trace(tmp_path / "d01.csv", rows, minutes=1)
    for flags, option, takes in refused:
        flags = [str(trace) if flag == "x.csv" else flag for flag in flags]
        assert main(["run", "scheduling", *flags, *tiny, "--out", str(tmp_path / "refused")]) == 2, flags
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"'{option}'" in err and f"--workload {flags[1]} ignores" in err, err
        assert takes in err, err
    # --set is the user's own too (a --config file's keys are recorded values and pass), and so are wield tune's
    for argv in (["run", "scheduling", "--workload", "multi-slo", "--set", "models=48"],
                 ["tune", "scheduling", "--workload", "multi-slo", "--slo-ms", "10", "--trials", "1"]):
        assert main([*argv, *tiny, "--out", str(tmp_path / "refused")]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--workload multi-slo ignores" in err, err
    assert not (tmp_path / "refused").exists()
    with pytest.raises(SystemExit):
        main(["run", "scheduling", "--help"])
    assert "(default: 24.0)" in capsys.readouterr().out  # --slo-ms's default is still shown
    out = tmp_path / "multi"
    assert main(["run", "scheduling", "--workload", "multi-slo", "--rate", "1200", "--gpus", "2", *tiny,
                 "--out", str(out)]) == 0
    recorded = (out / "config.toml").read_text()
    assert "models = 48" in recorded and "slo_ms = 24.0" in recorded and 'masks = "fit"' in recorded
    assert main(["run", "scheduling", "--config", str(out / "config.toml"), "--quiet", "--out",
                 str(tmp_path / "again")]) == 0
    assert main(["run", "scheduling", "--workload", "easy", "--models", "12", *tiny, "--out",
                 str(tmp_path / "easy")]) == 0  # easy takes --models


def test_a_trace_workload_can_replay_the_first_seconds_of_its_minutes(tmp_path):
    rows = [("o1", "a1", f"f{i}", "http", 100 * (i + 1), 50) for i in range(3)]
    trace = read_azure_trace(write_trace(tmp_path / "d02.csv", rows, minutes=2))
    whole = azure_trace_workload(trace, minutes=2, total_rate=60.0, kinds=1, copies=3, seed=2)
    assert "seconds" not in whole.params and whole.duration_ms == 120_000.0
    cut = azure_trace_workload(trace, minutes=1, total_rate=60.0, kinds=1, copies=3, seed=2, seconds=2.5)
    assert cut.duration_ms == 2500.0 and cut.params["seconds"] == 2.5
    assert cut.offered_rate() == pytest.approx(60.0)  # 3,600 requests in the minute, 2.5/60 of them in 2.5 s
    arrivals = cut.arrivals().times_ms
    assert arrivals.size > 0 and arrivals.max() < 2500.0
    assert abs(arrivals.size - 150) < 5 * 150 ** 0.5
    assert build_workload(cut.generator, cut.params, 2).fingerprint() == cut.fingerprint()
    with pytest.raises(ConfigError, match="'seconds'"):
        azure_trace_workload(trace, minutes=1, seconds=61.0)


@pytest.mark.parametrize("timing", ["accelerator", "clockwork-resnet50"])
def test_clockwork_meets_every_slo_where_the_study_reports_100_percent_under_either_curve(timing):
    """The modelled study's low-SLO grid (6 GPUs, 12/48 models, 600-2,400 r/s, SLO 3-96 ms): Clockwork meets
    every SLO (to within 0.2 points) on the cells its section 5.3.2 reports at 100%, under the ASSUMED curve and under the one
    Clockwork's authors measured, and falls short at 3 ms and on the heaviest workload's tight SLOs."""
    from dataclasses import replace

    from case_studies.scheduling.families import (LOW_SLO_GPUS, LOW_SLO_MODEL_COUNTS, LOW_SLO_RATES,
                                                  LOW_SLO_SLOS_MS, clockwork_reported_at_100, low_slo_workload)
    from case_studies.scheduling.runner import run_baseline

    met = {(m, r, slo): run_baseline(replace(low_slo_workload(r, m, slo, 1.0, seed=1000), timing=timing),
                                     "clockwork", LOW_SLO_GPUS).slo_satisfaction
           for m in LOW_SLO_MODEL_COUNTS for r in LOW_SLO_RATES for slo in LOW_SLO_SLOS_MS}
    claimed = {cell: value for cell, value in met.items() if clockwork_reported_at_100(cell[1], cell[2])}
    # 100% on 9 of 10 seeds' 1 s instances; on the tenth a burst costs 2 requests of 1,200 at 6 ms (99.84%)
    assert len(claimed) == 24 and min(claimed.values()) >= 99.8, claimed
    assert all(met[(m, 2400, 3.0)] < 90.0 and met[(m, 2400, 6.0)] < 95.0 for m in LOW_SLO_MODEL_COUNTS), met
