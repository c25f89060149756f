"""Every case study's environment as standard RL libraries use it: gymnasium ids, check_env, make_vec, the
standard view (MultiDiscrete / Discrete actions, flat Box observations, action_masks()), and
Stable-Baselines3 PPO and sb3-contrib MaskablePPO training on it a few hundred steps. check_env runs on small
instances and on every environment at its default settings (as ``gymnasium.make(id)`` gives it)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import wield  # noqa: F401  (registers wield/<Name>-v0 for every installed case study)
from wield.envs import StandardView, environment_id

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

# Small instances of every case study's environment.
SMALL = {
    "caching": {"requests": 60},
    "indexing": {"documents": 2000, "queries": 4},
    "placement": {"batch": 8, "unroll": 2, "n_groups": 8},
    "scheduling": {"rate": 600.0, "models": 12, "slo_ms": 24.0, "gpus": 2, "duration_s": 0.05},
}


@pytest.fixture(scope="module", params=sorted(SMALL))
def case(request, tmp_path_factory):
    kwargs = dict(SMALL[request.param])
    if request.param == "placement":
        kwargs["cache_dir"] = str(tmp_path_factory.getbasetemp() / "placement-cache")
    return environment_id(request.param), kwargs


def test_every_installed_case_study_has_a_gymnasium_id():
    from wield.plugins import load_case_studies

    for name in load_case_studies():
        assert environment_id(name) in gym.registry
    assert environment_id("my-cache_study") == "wield/MyCacheStudy-v0"


def test_check_env_passes_natively_and_through_the_standard_view(case):
    env_id, kwargs = case
    env = gym.make(env_id, **kwargs)
    check_env(env.unwrapped, skip_render_check=True)
    view = StandardView(env.unwrapped)
    check_env(view, skip_render_check=True)
    assert isinstance(view.action_space, (gym.spaces.MultiDiscrete, gym.spaces.Discrete))
    assert isinstance(view.observation_space, gym.spaces.Box) and view.observation_space.dtype == np.float32
    observation, info = view.reset(seed=0)
    assert view.observation_space.contains(observation)
    masks = view.action_masks()
    sizes = view.action_space.nvec if isinstance(view.action_space, gym.spaces.MultiDiscrete) else [view.action_space.n]
    assert masks.dtype == bool and masks.shape == (int(np.sum(sizes)),) and masks.any()
    assert "episode" not in info and info["episode_index"] == 0
    env.close()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_check_env_passes_at_the_default_settings(name):
    """``gymnasium.make(id)`` as it comes, natively and through the standard view: ``info`` (the system
    state included) is compared by the checker's determinism checks, so it must hold comparable values."""
    env_id = environment_id(name)
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    view = gym.make(env_id, standard_view=True)
    with warnings.catch_warnings():  # the checker warns that it is given a wrapper, as it is meant to be here
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version.*")
        check_env(StandardView(env.unwrapped), skip_render_check=True)
        check_env(view, skip_render_check=True)
    env.close()
    view.close()


def test_episode_statistics_keep_their_key(case):
    env_id, kwargs = case
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(env_id, standard_view=True, **kwargs))
    env.reset(seed=0)
    done, info = False, {}
    while not done:
        mask = env.get_wrapper_attr("action_masks")()
        _, _, terminated, truncated, info = env.step(_first_allowed(env.action_space, mask))
        done = terminated or truncated
    assert set(info["episode"]) == {"r", "l", "t"}  # gymnasium's statistics dict, not Wield's episode index
    env.close()


def test_make_vec_steps_every_copy(case):
    env_id, kwargs = case
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", wrappers=[StandardView], **kwargs)
    observations, _ = envs.reset(seed=0)
    assert observations.shape[0] == 2
    masks = envs.call("action_masks")
    actions = np.stack([_first_allowed(envs.single_action_space, mask) for mask in masks])
    observations, rewards, _, _, _ = envs.step(actions)
    assert observations.shape[0] == 2 and np.all(np.isfinite(rewards))
    envs.close()


def test_ppo_and_maskable_ppo_train_through_the_standard_view(case):
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from wield.agents.sb3 import silence

    env_id, kwargs = case
    options = dict(n_steps=64, batch_size=32, n_epochs=2, seed=0, device="cpu")
    ppo = PPO("MlpPolicy", gym.make(env_id, standard_view=True, **kwargs), **options)
    silence(ppo)  # the library's default logger writes /tmp/SB3-* folders
    ppo.learn(total_timesteps=192)
    assert ppo.num_timesteps >= 192
    env = gym.make(env_id, standard_view=True, **kwargs)
    maskable = MaskablePPO("MlpPolicy", env, **options)
    silence(maskable)
    maskable.learn(total_timesteps=192)
    assert maskable.num_timesteps >= 192
    observation, _ = env.reset(seed=0)
    mask = env.get_wrapper_attr("action_masks")()
    action, _ = maskable.predict(observation, action_masks=mask, deterministic=True)
    assert _allowed(env.action_space, mask, action)


def _first_allowed(space, mask):
    """The first allowed value of every head."""
    if isinstance(space, gym.spaces.Discrete):
        return int(np.flatnonzero(mask)[0])
    splits = np.split(np.asarray(mask), np.cumsum(space.nvec)[:-1])
    return np.array([int(np.flatnonzero(head)[0]) for head in splits])


def _allowed(space, mask, action) -> bool:
    if isinstance(space, gym.spaces.Discrete):
        return bool(mask[int(action)])
    offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
    return bool(np.all(np.asarray(mask)[offsets + np.asarray(action)]))
