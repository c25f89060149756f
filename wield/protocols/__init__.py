"""Progressive randomisation: classes C0-C6, trial plans and seeds, objectives, trial summaries, classification."""

from wield.protocols.classes import CLASSES, RandomisationClass, get_class
from wield.protocols.classification import Classification, TrialOutcome, classify
from wield.protocols.objective import OUTCOMES, Objective
from wield.protocols.plan import SEED_FIELDS, TrialPlan, TrialSeeds
from wield.protocols.summary import TrialSummary
from wield.protocols.verdict import LearningVerdict, learning_verdict

__all__ = ["CLASSES", "RandomisationClass", "get_class", "Classification", "TrialOutcome", "classify",
           "OUTCOMES", "Objective", "SEED_FIELDS", "TrialPlan", "TrialSeeds", "TrialSummary",
           "LearningVerdict", "learning_verdict"]
