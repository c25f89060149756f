"""Tasks and task graphs: how one or several agents share a decision (docs/design.md section 2)."""

from wield.tasks.graph import TaskGraph
from wield.tasks.rewards import ImprovementReward
from wield.tasks.task import Task

__all__ = ["ImprovementReward", "Task", "TaskGraph"]
