"""Demonstrations: labelling rules, the trace -> trajectories workflow and demonstration datasets on disk.

See ``rules`` (the labelling-rule contract), ``workflow`` (docs/design.md section 6's iterative procedure and
the importers of given actions / trajectories) and ``dataset`` (the documented directory format).
"""

from wield.demonstrations.dataset import Demonstration, DemonstrationDataset, content_sha256, describe
from wield.demonstrations.rules import (DecisionContext, FunctionRule, Label, LabellingRule, parse_rule_names,
                                        select_rules)
from wield.demonstrations.workflow import (DEFAULT_EXPERT_MARGIN, DEFAULT_EXPERT_REWARD, REWARD_SOURCES,
                                           DemonstrationWorkflow)

__all__ = ["DEFAULT_EXPERT_MARGIN", "DEFAULT_EXPERT_REWARD", "DecisionContext", "Demonstration",
           "DemonstrationDataset", "DemonstrationWorkflow", "FunctionRule", "Label", "LabellingRule",
           "REWARD_SOURCES", "content_sha256", "describe", "parse_rule_names", "select_rules"]
