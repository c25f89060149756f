"""What ``--json`` prints: one JSON object per command, versioned, whose ``kind`` names its shape.

Every command that prints JSON prints one object with ``"schema_version": 1`` and ``"kind"`` at its top
level, beside the command's own fields (``SCHEMA_VERSION`` changes when a field changes meaning or goes;
new fields may appear within a version):

=====================  =========================================  ===========================================
kind                   printed by                                 fields beside schema_version and kind
=====================  =========================================  ===========================================
trial-summary          ``wield run NAME`` (one run, core)         the trial's ``summary.json``: ``trial``,
                                                                  ``method``, ``transitions``, ``metrics``,
                                                                  ``methods``, ``verdict``, ``timing``, ...
evaluation             ``wield run indexing|placement``           the run record's ``evaluation.json``
checkpoint-evaluation  ``wield run indexing                       the checkpoint's evaluation on the engine
                       --evaluate-checkpoint``
experiment             ``wield run NAME --class Ci``              ``classification`` (C_i(n, s, f), as
                                                                  ``classification.json``), ``trials``
                                                                  (every trial's summary)
classifications        ``wield classify``                         ``experiments``: one ``{experiment,
                                                                  classification}`` per directory
comparison             ``wield compare``                          ``class_name``, ``objective``, ``methods``
                                                                  (one row per method); ``class``: the same
                                                                  as ``class_name``, deprecated (kept until
                                                                  0.2; every other output says class_name)
progress               ``wield progress NAME``                    ``directory``, ``classes`` (label per
                                                                  class), ``highest_class_reached``,
                                                                  ``failed`` and ``diagnosis`` (when one
                                                                  failed), as ``progress.json``
reproduction           ``wield reproduce``                        ``match``, ``differences``,
                                                                  ``deterministic``, ...
cache                  ``wield cache list``                       ``root``, ``entries``
database-server        ``wield db start --json``                  the server's ``uri``, ``directory``, ...
=====================  =========================================  ===========================================
"""

from __future__ import annotations

import json
from typing import Any, Mapping

SCHEMA_VERSION = 1


def json_document(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` under the versioned header: ``{"schema_version": 1, "kind": kind, **payload}``."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **payload}


def print_json(kind: str, payload: Mapping[str, Any]) -> None:
    """Print ``payload`` as the command's one JSON document (values JSON cannot hold printed as text)."""
    print(json.dumps(json_document(kind, payload), indent=2, default=str))
