"""The gymnasium environment: registration, check_env, and training through the plain gymnasium API."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import case_studies.indexing  # noqa: F401  (registers wield/Indexing-v0)
from case_studies.indexing.converter import IndexingConverter
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.schema import IndexingSchema
from wield.agents import DQNAgent, DQNConfig
from wield.agents.base import Transition
from wield.errors import ConfigError
from workloads import Predicate, Query, SortKey


HEADS = {"candidates": {"index"}, "positional": {"key_1", "key_2", "key_3"}}


@pytest.fixture(scope="module", params=[None, "positional"], ids=["default", "positional"])
def env(request):
    env = gym.make("wield/Indexing-v0", documents=3000, queries=6,
                   **({"actions": request.param} if request.param else {}))
    env.heads = HEADS[request.param or "candidates"]  # the default is the candidate design
    yield env
    env.close()


def test_check_env_passes(env):
    check_env(env.unwrapped, skip_render_check=True)


def test_info_has_system_action_metrics_and_mask(env):
    observation, info = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    mask = info["action_mask"]
    action = {head: int(np.flatnonzero(m)[-1]) for head, m in mask.items()}
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(info["system_action"], IndexSpec)
    assert {"cost", "costs", "index_bytes", "no_index_cost", "full_index_bytes"} <= set(info["metrics"])
    assert set(info["action_mask"]) == env.heads
    assert reward < 0


def test_trains_through_the_plain_gymnasium_api(env):
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(batch_size=8, learning_starts=8), seed=1)
    losses = []
    for _ in range(3):
        observation, info = env.reset()
        done = False
        while not done:
            action = agent.act(observation, mask=info["action_mask"])
            next_observation, reward, terminated, truncated, next_info = env.step(action)
            agent.observe(Transition(observation, action, reward, next_observation, terminated, truncated,
                                     info["action_mask"], next_info["action_mask"]))
            stats = agent.update()
            if "loss" in stats:
                losses.append(stats["loss"])
            observation, info, done = next_observation, next_info, terminated or truncated
    assert agent.steps_observed == 18
    assert losses and all(np.isfinite(losses))


def make_schema():
    return IndexingSchema(["genre", "start_year", "num_votes", "region"], k=3)


def test_positional_actions_round_trip():
    schema = make_schema()
    converter = IndexingConverter(schema)
    query = Query((Predicate("region", "eq", "US"), Predicate("start_year", "between", (1990, 2000))),
                  sort=(SortKey("num_votes", "desc"),), limit=10)
    context = {"item": query}
    spec = IndexSpec.of([("start_year", "asc"), ("num_votes", "desc")])
    action = converter.system_to_agent_action(spec, context)
    assert action == {"key_1": 3, "key_2": 6, "key_3": 0}
    assert converter.agent_to_system_action(action, context) == spec
    assert converter.agent_to_system_action({"key_1": 0, "key_2": 0, "key_3": 0}, context) is None
    mask = schema.action_mask(context)
    assert mask["key_1"].tolist() == [True] * 7
    short = {"item": Query((Predicate("genre", "eq", "Drama"),))}
    assert schema.action_mask(short)["key_2"].tolist() == [True, True, True, False, False, False, False]


def test_state_marks_indexed_attributes():
    schema = make_schema()
    converter = IndexingConverter(schema)
    query = Query((Predicate("genre", "eq", "Drama"), Predicate("start_year", "gt", 2000)))
    plain = converter.query_tokens(query)
    indexed = converter.query_tokens(query, [IndexSpec.of([("start_year", "desc")])])
    assert plain == ["attr:genre", "eq", "attr:start_year", "gt", "AND"]
    assert indexed == ["attr:genre", "eq", "attr:start_year", "IDX_DESC", "gt", "AND"]


def test_bad_schema_and_query_input_name_the_field():
    with pytest.raises(ConfigError, match="'k'"):
        IndexingSchema(["a"], k=0)
    converter = IndexingConverter(make_schema())
    with pytest.raises(ConfigError, match="imaginary"):
        converter.system_to_agent_state((), {"item": Query((Predicate("imaginary", "eq", 1),))})
