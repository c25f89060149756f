"""Indexing's candidate task design (one head over the query's candidate indexes) and the improvement reward
(a learner rewarded with the change of the level reward): spaces, masks, conversions, demonstrations, the
task reward a Stable-Baselines3 learner trains on, and bad options."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from case_studies.indexing.advisor import query_candidates
from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.candidate_design import CANDIDATE_FEATURES, HEAD, SLOTS, CandidateSchema
from case_studies.indexing.demonstrations import rule_factories
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.run import IndexingRunConfig
from wield.agents import SB3Agent
from wield.demonstrations import DemonstrationWorkflow, select_rules
from wield.errors import ConfigError
from wield.tasks import ImprovementReward, TaskGraph
from wield.workflows import run_episode, train_online
from workloads import QueryWorkloadConfig, generate_imdb_collection, make_query_schedule


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    collection = generate_imdb_collection(3_000, seed=0)
    task = build_indexing_task(collection, workdir=tmp_path_factory.mktemp("candidates"), actions="candidates")
    schedule = make_query_schedule(collection, QueryWorkloadConfig(n_queries=6), 3, 2, per_episode=True)
    yield task, schedule
    task.close()


def test_the_candidate_environment_passes_check_env_and_acts_on_one_head(setup):
    task, schedule = setup
    env = task.environment(schedule)
    check_env(env, skip_render_check=True)
    observation, info = env.reset(options={"episode": 0})
    assert set(info["action_mask"]) == {HEAD}
    assert observation["candidates"].shape == (SLOTS, len(CANDIDATE_FEATURES))
    query = env.context["item"]
    candidates = query_candidates(query, 3)[:SLOTS]
    # no-op and exactly the query's candidates are allowed; the rows of the empty slots are zeros
    assert info["action_mask"][HEAD].tolist() == [True] * (1 + len(candidates)) + [False] * (SLOTS - len(candidates))
    assert (observation["candidates"][: len(candidates), 0] == 1).all()
    assert not observation["candidates"][len(candidates):].any()
    _, _, _, _, info = env.step({HEAD: 1})
    assert info["system_action"] == candidates[0]


def test_a_built_candidate_is_masked_and_marked_for_a_later_query_that_has_it(setup):
    task, schedule = setup
    env = task.environment(schedule)
    _, info = env.reset(options={"episode": 0})
    workload = env.workload
    # build, at each query, its first candidate; a later query offering an index already built masks it
    seen: dict[IndexSpec, int] = {}
    for step, query in enumerate(workload):
        candidates = task.schema.candidates(query)
        observation = task.converter.system_to_agent_state(env.system.state(), env.context)
        for slot, spec in enumerate(candidates):
            built = spec in seen
            assert info["action_mask"][HEAD][1 + slot] == (not built)
            assert observation["candidates"][slot, CANDIDATE_FEATURES.index("built")] == float(built)
        first = next((s for s in candidates if s not in seen), None)
        action = 0 if first is None else 1 + candidates.index(first)
        if first is not None:
            seen[first] = step
        _, _, terminated, _, info = env.step({HEAD: action})
        if terminated:
            break
    assert set(env.system.state()) == set(seen)


def test_system_and_agent_actions_convert_both_ways_and_a_non_candidate_is_a_clear_error(setup):
    task, schedule = setup
    query = schedule.task_for_episode(0)[0]
    context = {"item": query}
    for slot, spec in enumerate(task.schema.candidates(query), start=1):
        assert task.converter.system_to_agent_action(spec, context) == {HEAD: slot}
        assert task.converter.agent_to_system_action({HEAD: slot}, context) == spec
    assert task.converter.system_to_agent_action(None, context) == {HEAD: 0}
    assert task.converter.agent_to_system_action({HEAD: SLOTS}, context) is None or SLOTS <= len(
        task.schema.candidates(query))
    outside = IndexSpec((("season_number", "asc"), ("episode_number", "asc"), ("is_adult", "asc")))
    with pytest.raises(ConfigError, match="candidate"):
        task.converter.system_to_agent_action(outside, context)


def test_demonstration_rules_label_only_what_the_candidate_design_can_build(setup):
    task, schedule = setup
    episodes = [schedule.task_for_episode(e) for e in range(2)]
    rules = select_rules("full,noop,reverse,prefix,advisor",
                         rule_factories(task.schema.k, 0.5, task.system, task.converter))
    dataset = DemonstrationWorkflow(task.system, task.converter).label_trace(episodes, rules)
    by_rule = {d.rule for d in dataset}
    assert {"full", "noop", "prefix", "advisor"} <= by_rule
    for demonstration in dataset:
        assert set(demonstration.margins) <= {HEAD}
        value = int(demonstration.transition.action[HEAD])
        assert demonstration.transition.mask is None or demonstration.transition.mask[HEAD][value]
    # the reverse order of a query's full index is a negative demonstration only where it is a candidate
    for demonstration in (d for d in dataset if d.rule == "reverse"):
        assert demonstration.margins[HEAD] < 0 and demonstration.transition.action[HEAD] > 0


def test_the_improvement_reward_sums_to_the_final_level_less_the_start_per_episode():
    reward = ImprovementReward(-1.0)
    levels = [[-0.9, -0.7, -0.75, -0.6], [-0.95, -0.5]]
    for episode, episode_levels in enumerate(levels):
        changes = [reward(level, {"episode_index": episode, "step": step}) for step, level in enumerate(episode_levels)]
        assert changes[0] == pytest.approx(episode_levels[0] + 1.0)
        assert sum(changes) == pytest.approx(episode_levels[-1] + 1.0)
    with pytest.raises(ConfigError, match="start_level"):
        ImprovementReward(float("nan"))


def test_a_library_learner_trains_on_its_task_reward_and_reports_the_environment_reward(setup):
    """SB3's loop is rewarded with the task's reward_fn; the episodes reported are the environment's."""
    task, schedule = setup
    env = task.environment(schedule)
    seen: list[float] = []

    def recorded(reward, info):
        seen.append(float(reward))
        return 0.0

    agent = SB3Agent("sb3-maskable-ppo", task.schema.state_space, task.schema.action_space, seed=0, budget=12)
    results = train_online(env, TaskGraph.single(agent, reward_fn=recorded), 2, progress=False)
    reported = [step.reward for result in results for step in result.steps]
    assert reported == seen and all(r < 0 for r in reported)
    assert agent.model.rollout_buffer.rewards.size and not agent.model.rollout_buffer.rewards.any()
    greedy = run_episode(env, TaskGraph.single(agent), explore=False, learn=False, options={"episode": 0})
    assert len(greedy.steps) == len(schedule.task_for_episode(0))


@pytest.mark.parametrize("field, value", [("actions", "heads"), ("reward", "return")])
def test_an_unknown_task_design_names_the_field_and_the_allowed_values(field, value):
    with pytest.raises(ConfigError) as caught:
        IndexingRunConfig(**{field: value}).validate()
    message = str(caught.value)
    assert field in message and value in message
    assert ("candidates" in message) if field == "actions" else ("improvement" in message)


def test_the_candidate_schema_refuses_bad_slots():
    with pytest.raises(ConfigError, match="slots"):
        CandidateSchema(("a", "b"), slots=0)
    schema = CandidateSchema(("a", "b"), slots=4)
    assert schema.action_space == gym.spaces.Dict({HEAD: gym.spaces.Discrete(5)})
    assert np.all(schema.action_mask(None)[HEAD])


def test_a_querys_candidates_depend_on_its_shape_not_its_values_and_an_index_hashes_as_its_keys():
    """``query_candidates`` is kept per query shape: a query of another shape gets its own, one of the same
    shape with other values the same; an index's hash is computed once and not carried into a copy (string
    hashes differ between processes)."""
    import copy
    import pickle

    from workloads.queries import Predicate, Query, SortKey

    first = Query((Predicate("a", "eq", 1), Predicate("b", "lt", 5)), sort=(SortKey("c", "desc"),), limit=10)
    again = Query((Predicate("a", "eq", 7), Predicate("b", "lt", 2)), sort=(SortKey("c", "desc"),), limit=3)
    other = Query((Predicate("a", "eq", 1), Predicate("b", "gt", 5)), logic="or")
    assert query_candidates(first, 3) == query_candidates(again, 3)
    assert IndexSpec.of([("a", "asc"), ("b", "asc")]) in query_candidates(first, 3)
    assert IndexSpec.of([("a", "asc"), ("c", "desc")]) in query_candidates(first, 3)
    assert query_candidates(other, 3) != query_candidates(first, 3)
    assert query_candidates(first, 1) == [IndexSpec.of([(f, "asc")]) for f in ("a", "b", "c")]
    spec = IndexSpec.of([("a", "asc"), ("b", "desc")])
    assert hash(spec) == hash((spec.keys,)) and spec.fields == ("a", "b")
    for copied in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec)):
        assert "_hash" not in copied.__dict__ and copied == spec and hash(copied) == hash(spec)
