"""Demonstrations: labelling rules, the trace -> trajectories workflow and demonstration datasets on disk.

See ``rules`` (the labelling-rule contract), ``workflow`` (docs/design.md section 6's iterative procedure and
the importers of given actions / trajectories) and ``dataset`` (the documented directory format).

Every name below is imported on first use (``wield.lazy``), so importing the package imports none of its
modules (nor numpy's, pandas' or torch's) until a name is used.
"""

from typing import TYPE_CHECKING

from wield.lazy import lazy_exports

if TYPE_CHECKING:
    from wield.demonstrations.dataset import Demonstration, DemonstrationDataset, content_sha256, describe
    from wield.demonstrations.rules import (DecisionContext, FunctionRule, Label, LabellingRule, parse_rule_names,
                                            select_rules)
    from wield.demonstrations.workflow import (DEFAULT_EXPERT_MARGIN, DEFAULT_EXPERT_REWARD, REWARD_SOURCES,
                                               DemonstrationWorkflow)

_EXPORTS = {
    "Demonstration": "wield.demonstrations.dataset", "DemonstrationDataset": "wield.demonstrations.dataset",
    "content_sha256": "wield.demonstrations.dataset", "describe": "wield.demonstrations.dataset",
    "DecisionContext": "wield.demonstrations.rules", "FunctionRule": "wield.demonstrations.rules",
    "Label": "wield.demonstrations.rules", "LabellingRule": "wield.demonstrations.rules",
    "parse_rule_names": "wield.demonstrations.rules", "select_rules": "wield.demonstrations.rules",
    "DEFAULT_EXPERT_MARGIN": "wield.demonstrations.workflow",
    "DEFAULT_EXPERT_REWARD": "wield.demonstrations.workflow", "REWARD_SOURCES": "wield.demonstrations.workflow",
    "DemonstrationWorkflow": "wield.demonstrations.workflow",
}

__all__ = ["DEFAULT_EXPERT_MARGIN", "DEFAULT_EXPERT_REWARD", "DecisionContext", "Demonstration",
           "DemonstrationDataset", "DemonstrationWorkflow", "FunctionRule", "Label", "LabellingRule",
           "REWARD_SOURCES", "content_sha256", "describe", "parse_rule_names", "select_rules"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
