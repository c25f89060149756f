"""Compound index selection: the first case study (docs/design.md section 5).

Its gymnasium environment is ``gymnasium.make("wield/Indexing-v0", documents=..., queries=...)``: the core
registers an id for every installed case study (``wield.envs.registry``) and builds it with
``case_studies.indexing.env.make_indexing_env``.
"""

ENV_ID = "wield/Indexing-v0"

__all__ = ["ENV_ID"]
