"""Progressive randomisation: classes C0-C6, trial plans and seeds, objectives, trial summaries, classification."""

from wield.protocols.classes import CLASSES, RandomisationClass, get_class
from wield.protocols.classification import Classification, TrialOutcome, classify
from wield.protocols.objective import OUTCOMES, Condition, Objective, parse_objective
from wield.protocols.plan import SEED_FIELDS, TrialPlan, TrialSeeds
from wield.protocols.summary import TrialSummary
from wield.protocols.sequential import DEFAULT_CAP, SequentialDesign
from wield.protocols.verdict import (ComparatorScores, EvaluationInstances, InstanceScores, LadderVerdict, Rung,
                                     ladder_verdict, paired_rung, verdict_lines)

__all__ = ["CLASSES", "RandomisationClass", "get_class", "Classification", "TrialOutcome", "classify",
           "OUTCOMES", "Condition", "Objective", "parse_objective", "SEED_FIELDS", "TrialPlan", "TrialSeeds", "TrialSummary",
           "ComparatorScores", "EvaluationInstances", "LadderVerdict", "Rung", "ladder_verdict", "paired_rung",
           "verdict_lines", "InstanceScores", "SequentialDesign", "DEFAULT_CAP"]
