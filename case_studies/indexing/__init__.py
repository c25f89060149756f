"""Compound index selection: the first case study (docs/design.md section 5).

Importing this package registers the gymnasium environment ``wield/Indexing-v0``.
"""

import gymnasium

ENV_ID = "wield/Indexing-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="case_studies.indexing.env:make_indexing_env")

__all__ = ["ENV_ID"]
