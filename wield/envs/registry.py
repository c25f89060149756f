"""Gymnasium ids for every installed case study: ``gymnasium.make("wield/<Name>-v0", **kwargs)``.

``register_environments()`` (run by ``import wield``) registers one id per entry point of the group
``wield.case_studies`` without importing the case study; ``gymnasium.make`` then loads it and calls its
``CaseStudy.make_env(**kwargs)``. ``standard_view=True`` wraps the environment in ``StandardView``.
The name is the entry point's in CamelCase: ``indexing`` -> ``wield/Indexing-v0``, ``my-cache`` ->
``wield/MyCache-v0``.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

import gymnasium as gym

NAMESPACE = "wield"


def environment_id(case_study: str) -> str:
    """The gymnasium id of a case study's environment."""
    return f"{NAMESPACE}/" + "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_ ]+", case_study)) + "-v0"


def register_environments() -> None:
    """Register an id for every installed case study that has none yet (nothing is imported)."""
    from wield.plugins import ENTRY_POINT_GROUP

    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        env_id = environment_id(entry.name)
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="wield.envs.registry:make_environment",
                         kwargs={"case_study": entry.name})


def make_environment(case_study: str, standard_view: bool = False, **kwargs: Any) -> gym.Env:
    """The environment of the installed case study ``case_study``, built by its ``make_env(**kwargs)``."""
    from wield.errors import ConfigError
    from wield.plugins import get_case_study

    study = get_case_study(case_study)
    if study.make_env is None:
        raise ConfigError("case study", case_study, reason="declares no gymnasium environment (CaseStudy.make_env)")
    env = study.make_env(**kwargs)
    if standard_view:
        from wield.envs.standard import StandardView

        return StandardView(env)
    return env
