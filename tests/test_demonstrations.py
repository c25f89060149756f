"""Demonstrations end to end: indexing rules, the trace -> trajectories workflow, human (query, index)
files, the dataset format (round trip, schema fingerprint, tampering), bad input, and the CLI commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.demonstrations import (PrefixRule, load_human_demonstrations, load_query_trace,
                                                  rule_factories)
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.schema import IndexingSchema
from wield.cli import main
from wield.demonstrations import DecisionContext, DemonstrationDataset, DemonstrationWorkflow, select_rules
from wield.errors import ConfigError, DataError
from workloads import Predicate, Query, QueryWorkloadConfig, SortKey, generate_imdb_collection, make_query_schedule

# the study's rules label one query's candidates per step: the candidate design (the shortlist's rules: below)
SMALL = ["--documents", "4000", "--queries", "6", "--actions", "candidates"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    collection = generate_imdb_collection(4_000, seed=0)
    task = build_indexing_task(collection, workdir=tmp_path_factory.mktemp("demos"), actions="positional")
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=8), 9, 2, per_episode=True)
    episodes = [schedule.task_for_episode(e) for e in range(2)]
    yield collection, task, episodes
    task.system.close()


def _query(*fields, sort=()):
    return Query(tuple(Predicate(f, "eq", 1) for f in fields), sort=tuple(SortKey(f, d) for f, d in sort))


def test_rules_follow_the_iterative_procedure_one_trajectory_per_rule_and_episode(setup):
    collection, task, episodes = setup
    rules = select_rules("full,noop,reverse,prefix", rule_factories(task.schema.k))
    dataset = DemonstrationWorkflow(task.system, task.converter).label_trace(episodes, rules)
    assert dataset.n_trajectories == 8
    by_rule = {name: [d for d in dataset if d.rule == name] for name in ("full", "noop", "reverse", "prefix")}
    assert len(by_rule["full"]) == len(by_rule["noop"]) == len(by_rule["prefix"]) == 16
    for d in by_rule["full"] + by_rule["noop"] + by_rule["prefix"]:
        assert set(d.margins.values()) == {0.5} and d.transition.reward == 0.5
    for d in by_rule["reverse"]:
        assert d.margins and all(m == -0.5 for m in d.margins.values()) and d.transition.reward == -0.5
    # the state of step t+1 shows the index applied at step t (IDX tokens): c_{t+1} = apply(a_t, c_t)
    full = [d for d in by_rule["full"] if d.trajectory == by_rule["full"][0].trajectory]
    idx = task.schema.vocabulary.encode(["IDX_ASC"], 1)[0]
    assert not (full[0].transition.observation["tokens"] == idx).any()
    assert any((d.transition.observation["tokens"] == idx).any() for d in full[1:])
    assert all(np.array_equal(a.transition.next_observation["attributes"], b.transition.observation["attributes"])
               for a, b in zip(full, full[1:]))
    assert [d.transition.terminated for d in full] == [False] * 7 + [True]
    # actions convert back to the labelled index through the converter
    for d, query in zip(full, episodes[0]):
        index = task.converter.agent_to_system_action(d.transition.action, {"item": query})
        assert index.to_list() == d.system_action


def test_reverse_margins_sit_on_the_heads_that_differ_and_one_attribute_queries_abstain():
    rule = rule_factories(3)["reverse"]()
    label = rule.label((), DecisionContext(item=_query("genre", "region", "start_year")))
    assert label.action == IndexSpec.of([("start_year", "asc"), ("region", "asc"), ("genre", "asc")])
    assert label.margin == {"key_1": -0.5, "key_3": -0.5}  # key_2 is region in both orders
    assert rule.label((), DecisionContext(item=_query("genre"))) is None


def test_prefix_rule_reuses_an_index_whose_prefix_covers_the_query_in_either_sort_order():
    rule = PrefixRule(3)
    query = _query("genre", sort=[("start_year", "desc")])
    inverted = IndexSpec.of([("genre", "desc"), ("start_year", "asc"), ("region", "asc")]).canonical()
    assert rule.label([inverted], DecisionContext(item=query)).action is None
    same_order = IndexSpec.of([("genre", "asc"), ("start_year", "desc")])
    assert rule.label([same_order], DecisionContext(item=query)).action is None
    half_inverted = IndexSpec.of([("genre", "asc"), ("start_year", "asc")])
    other_order = IndexSpec.of([("start_year", "desc"), ("genre", "asc")])
    assert rule.label([half_inverted, other_order], DecisionContext(item=query)).action == \
        IndexSpec.of([("genre", "asc"), ("start_year", "desc")])


def test_human_pairs_and_full_trajectories_become_demonstrations_through_the_converter(setup, tmp_path):
    collection, task, episodes = setup
    queries = episodes[0][:3]
    first = queries[0].attributes()
    person_index = [[first[0], "desc"]] + ([[first[1], "asc"]] if len(first) > 1 else [])
    rows = [{"query": queries[0].to_dict(), "index": person_index},
            {"query": queries[1].to_dict(), "index": None},
            {"query": queries[2].to_dict(), "index": [[queries[2].attributes()[0], "asc"]], "episode": 1}]
    path = tmp_path / "human.json"
    path.write_text(json.dumps(rows))
    trace = load_human_demonstrations(path, collection)
    assert [len(e) for e in trace] == [2, 1]
    workflow = DemonstrationWorkflow(task.system, task.converter)
    dataset = workflow.import_state_action_trace(trace)
    assert len(dataset) == 3 and dataset.rule_counts() == {"human": 3}
    for d, (query, index) in zip(dataset, trace[0] + trace[1]):
        assert d.transition.action == task.converter.system_to_agent_action(index, {"item": query})
    rewarded = workflow.import_trajectories([[(q, None, -0.25) for q in queries]], margin=-0.5)
    assert [d.transition.reward for d in rewarded] == [-0.25] * 3
    assert all(d.margins == {h: -0.5 for h in task.schema.head_names} for d in rewarded)


def test_measured_rewards_equal_the_environments_reward_for_the_same_actions(setup):
    collection, task, episodes = setup
    rules = select_rules("full", rule_factories(task.schema.k))
    dataset = DemonstrationWorkflow(task.system, task.converter, rewards="measured").label_trace(episodes[:1], rules)

    class OneEpisode:
        n_episodes = 1

        def task_for_episode(self, index):
            return episodes[0]

    env = task.environment(OneEpisode())
    env.reset(seed=0)
    rewards = [env.step(d.transition.action)[1] for d in dataset]
    assert [d.transition.reward for d in dataset] == pytest.approx(rewards)
    assert len(set(rewards)) > 1


def test_dataset_round_trip_and_schema_fingerprint_check(setup, tmp_path):
    collection, task, episodes = setup
    rules = select_rules(["prefix", "reverse"], rule_factories(task.schema.k))
    dataset = DemonstrationWorkflow(task.system, task.converter).label_trace(episodes, rules,
                                                                              metadata={"note": "test"})
    manifest = dataset.save(tmp_path / "demos")
    assert sorted(p.name for p in (tmp_path / "demos").iterdir()) == ["arrays.npz", "manifest.json", "steps.jsonl"]
    assert manifest["schema"]["fingerprint"] == task.schema.fingerprint()
    loaded = DemonstrationDataset.load(tmp_path / "demos", task.schema)
    assert len(loaded) == len(dataset) and loaded.metadata["note"] == "test"
    assert loaded.content_hash() == dataset.content_hash() == manifest["content_sha256"]
    for a, b in zip(dataset, loaded):
        assert (a.rule, a.trajectory, a.step, a.margins, a.system_action) == \
            (b.rule, b.trajectory, b.step, b.margins, b.system_action)
        assert a.transition.action == b.transition.action and a.transition.reward == b.transition.reward
        for key in a.transition.observation:
            assert np.array_equal(a.transition.observation[key], b.transition.observation[key])
            assert np.array_equal(a.transition.next_observation[key], b.transition.next_observation[key])
        for head in a.transition.mask:
            assert np.array_equal(a.transition.mask[head], b.transition.mask[head])
    steps = [json.loads(line) for line in (tmp_path / "demos" / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["item"] == episodes[0][0].to_dict()
    other = IndexingSchema(collection.field_names, k=2)
    with pytest.raises(ConfigError, match=f"{dataset.fingerprint}.*{other.fingerprint()}"):
        DemonstrationDataset.load(tmp_path / "demos", other)
    with np.load(tmp_path / "demos" / "arrays.npz") as data:
        arrays = {name: data[name] for name in data.files}
    arrays["reward"] = arrays["reward"] + 1
    np.savez(tmp_path / "demos" / "arrays.npz", **arrays)
    with pytest.raises(DataError, match="content_sha256"):
        DemonstrationDataset.load(tmp_path / "demos")


def test_bad_input_is_named(setup, tmp_path):
    collection, task, episodes = setup
    with pytest.raises(ConfigError, match="'oracle'.*'full', 'noop', 'reverse', 'prefix'"):
        select_rules("noop,oracle", rule_factories(3))
    trace = [episodes[0][0].to_dict(), {"predicates": [{"field": "colour", "op": "eq", "value": "red"}]}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(DataError, match=r"trace.json: episode 0, row 1: .*'colour'.*allowed: .*'genre'"):
        load_query_trace(path, collection)
    # the workflow names the row too when a query it is given has an attribute the schema lacks
    unknown = Query((Predicate("colour", "eq", "red"),))
    workflow = DemonstrationWorkflow(task.system, task.converter)
    with pytest.raises(DataError, match=r"episode 0, row 1 \(noop\).*'colour'"):
        workflow.label_trace([[episodes[0][0], unknown]], select_rules("noop", rule_factories(3)))
    human = tmp_path / "human.json"
    human.write_text(json.dumps([{"query": episodes[0][0].to_dict(), "index": [["runtime_minutes", "up"]]}]))
    with pytest.raises(DataError, match="row 0: index"):
        load_human_demonstrations(human, collection)
    with pytest.raises(ConfigError, match="rewards"):
        DemonstrationWorkflow(task.system, task.converter, rewards="guessed")


def test_cli_demonstrate_then_run_dqfd_with_the_dataset_and_under_a_class(tmp_path, capsys):
    out = tmp_path / "demos"
    assert main(["demonstrate", "indexing", "--rules", "noop,reverse", "--episodes", "2", *SMALL,
                 "--out", str(out), "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trajectories"] == 4 and set(manifest["rules"]) == {"noop", "reverse"}
    # the dataset has its wield.log, as a run record has: how the command started and ended
    logged = (out / "wield.log").read_text()
    assert "demonstrations of indexing into" in logged and "rules noop,reverse, 2 episode(s)" in logged
    assert f"demonstrations finished: {manifest['count']} in 4 trajectories" in logged
    assert manifest["content_sha256"] in logged
    assert main(["demonstrate", "indexing", "--rules", "noop,magic", *SMALL, "--out", str(tmp_path / "x")]) == 2
    assert "'magic'" in capsys.readouterr().err and not (tmp_path / "x").exists()  # refused before any file
    run = tmp_path / "run"
    assert main(["run", "indexing", "--agent", "dqfd", "--demonstrations", str(out), "--pretrain-steps", "40",
                 *SMALL, "--episodes", "2", "--repetitions", "1", "--out", str(run), "--quiet", "--json"]) == 0
    used = json.loads((run / "demonstrations.json").read_text())
    assert used["sha256"] == manifest["content_sha256"] and used["source"] == "file"
    assert used["pretrain"]["pretrain_steps"] == 40
    config = json.loads((run / "config.json").read_text())
    assert config["agent"] == "dqfd" and config["demonstrations"] == str(out.resolve())
    capsys.readouterr()
    assert main(["reproduce", str(run)]) == 0  # the same dataset and seeds give the same results
    assert "match exactly" in capsys.readouterr().out
    # a dataset for another layout (k = 2) is refused by a k = 3 run
    k2 = tmp_path / "k2"
    k2.mkdir()
    (k2 / "wield.log").write_text("an earlier attempt that failed\n")  # its log alone: the directory is reused
    assert main(["demonstrate", "indexing", "--rules", "full", "--k", "2", *SMALL, "--out", str(k2),
                 "--quiet"]) == 0
    assert (k2 / "wield.log").read_text().startswith("an earlier attempt that failed\n")
    assert "demonstrations finished" in (k2 / "wield.log").read_text()
    (k2 / "other").write_text("")
    assert main(["demonstrate", "indexing", "--rules", "full", "--k", "2", *SMALL, "--out", str(k2)]) == 2
    assert "is not an empty directory" in capsys.readouterr().err
    assert main(["run", "indexing", "--agent", "dqfd", "--demonstrations", str(k2), *SMALL, "--episodes", "1",
                 "--repetitions", "1", "--out", str(tmp_path / "refused"), "--quiet"]) == 2
    assert "schema fingerprint" in capsys.readouterr().err
    # reproduce refuses a dataset that is no longer the one the run pretrained on (its recorded sha256),
    # before rerunning anything
    changed = DemonstrationDataset.load(out)
    changed.demonstrations = changed.demonstrations[:-1]
    changed.save(out)
    assert main(["reproduce", str(run)]) == 2
    assert "not the dataset this run pretrained on" in capsys.readouterr().err
    # under --class, without a dataset: each trial labels its own training workload with the default rules,
    # the study's Pretrain+Online pair (noop +, reverse -)
    experiment = tmp_path / "experiment"
    assert main(["run", "indexing", "--class", "C2", "--trials", "1", "--agent", "dqfd", "--pretrain-steps",
                 "20", *SMALL, "--episodes", "1", "--repetitions", "1", "--out", str(experiment),
                 "--quiet", "--json"]) == 0
    trial = next((experiment / "trials").glob("trial-*"))
    built = json.loads((trial / "demonstrations.json").read_text())
    assert built["source"] == "training workload" and set(built["rules"]) == {"noop", "reverse"}
    assert built["rules_used"] == ["noop", "reverse"]
    assert DemonstrationDataset.load(trial / "demonstrations").content_hash() == built["sha256"]
    assert json.loads((trial / "config.json").read_text())["agent"] == "dqfd"


def test_pretrain_only_run_evaluates_the_pretrained_greedy_policy(tmp_path):
    from dataclasses import asdict

    from case_studies.indexing.run import IndexingRunConfig
    from wield.workflows import run_trial

    config = IndexingRunConfig(documents=4000, queries=6, episodes=0, repetitions=1, agent="dqfd", pretrain_steps=30)
    summary = run_trial("indexing", asdict(config), config.single_run_seeds(), str(tmp_path / "run"))
    assert summary.transitions == 0 and summary.method == "dqfd"
    assert summary.methods["dqfd"]["indexes"] == summary.methods["dqfd-greedy"]["indexes"]  # rows named after the method
    with pytest.raises(ConfigError, match="'episodes'"):
        IndexingRunConfig(episodes=0).validate()  # DQN cannot skip training
    with pytest.raises(ConfigError, match="'agent'.*'dqn', 'dqfd'"):
        IndexingRunConfig(agent="ppo").validate()
    with pytest.raises(ConfigError, match="for agent 'dqfd'"):
        IndexingRunConfig(demonstrations=str(tmp_path)).validate()


def test_demonstrate_can_leave_out_the_templates_held_out_for_out_of_distribution_tests(tmp_path):
    out = tmp_path / "demos"
    assert main(["demonstrate", "indexing", "--rules", "full", "--episodes", "4", "--exclude-held-out", *SMALL,
                 "--out", str(out), "--quiet"]) == 0
    excluded = set(json.loads((out / "manifest.json").read_text())["metadata"]["workload"]["excluded_templates"])
    templates = {json.loads(line)["item"]["template"] for line in (out / "steps.jsonl").read_text().splitlines()}
    assert excluded and templates and not templates & excluded


def test_dqfd_rules_are_chosen_under_compare_recorded_and_checked(tmp_path, capsys):
    from case_studies.indexing.run import IndexingRunConfig

    assert IndexingRunConfig(actions="candidates").validate().rules == ["noop", "reverse"]
    out = tmp_path / "compare"
    assert main(["compare", "indexing", "--class", "C2", "--trials", "1", "--methods", "dqn,dqfd", "--rules",
                 "full,noop", "--pretrain-steps", "10", *SMALL, "--episodes", "1", "--repetitions", "1",
                 "--out", str(out), "--quiet"]) == 0
    trial = next((out / "dqfd" / "trials").glob("trial-*"))
    built = json.loads((trial / "demonstrations.json").read_text())
    assert built["rules_used"] == ["full", "noop"] and set(built["rules"]) == {"full", "noop"}
    assert json.loads((trial / "config.json").read_text())["rules"] == ["full", "noop"]
    capsys.readouterr()
    assert main(["reproduce", str(trial)]) == 0  # the recorded rules label the same demonstrations again
    assert "match exactly" in capsys.readouterr().out
    # bad names: one line naming the field and the allowed rules; nothing is written
    for rules, reason in (("noop,oracle", "unknown labelling rule"), ("noop,noop", "named twice"),
                          (",", "name at least one")):
        assert main(["run", "indexing", "--agent", "dqfd", "--rules", rules, *SMALL, "--out",
                     str(tmp_path / "bad")]) == 2
        error = capsys.readouterr().err
        assert "'rules'" in error and reason in error and "allowed: 'full', 'noop', 'reverse', 'prefix'" in error
        assert not (tmp_path / "bad").exists()
    with pytest.raises(ConfigError, match="'rules': 'oracle'"):
        IndexingRunConfig(agent="dqfd", rules=["oracle"]).validate()
    # a config.json written before the rules were recorded keeps the rules it was run with
    assert IndexingRunConfig.from_dict({"agent": "dqfd"}).rules == ["prefix", "reverse"]
