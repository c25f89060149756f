"""What a blackbox indexing learner trains on (``--train-on``, issue 42 goal 3): the protocol's names, its
checks and the line that says what it means.

- ``workload`` (the default, the study's blackbox protocol): every training episode plays the training
  workload itself; the method's row is the best index set seen in training, a **search outcome** for the
  test workload (which is the training workload).
- ``redraws``: training episode ``i`` plays the training workload's queries with their predicate values
  drawn anew (``QueryWorkloadGenerator.redraw``) with ``derive_seed(train_workload_seed, "training-redraws",
  i)`` (``workloads.schedule.redraw_seeds``): the same shapes, new values, a new draw every episode. The
  verdict's held-out instances are redraws too, drawn with ``derive_seed(train_workload_seed,
  "evaluation-instances", j)`` (``TrialSeeds.evaluation_seeds``): another stream, and the verdict refuses an
  instance whose seed a training episode used (``EvaluationInstances.check_unused``). The best set seen in
  training is then a set for *some redraw*, not for the test workload, so it is not reported: the method's
  row is the greedy policy's index set on the training workload, a **learned policy** (the same set as the
  ``M-greedy`` row).

The protocol is a blackbox one: a generalisation class (C3-C6) already trains on a new workload every
episode, and its test workloads are new query sets, not redraws, so ``redraws`` is refused there. It governs
the learners' training episodes only; the advisor and the search methods (``random``, ``opentuner``) choose
one index set for the training workload itself, as before.
"""

from __future__ import annotations

from wield.errors import ConfigError

WORKLOAD = "workload"
REDRAWS = "redraws"
TRAIN_ON = (WORKLOAD, REDRAWS)


def check_train_on(train_on: object, generalisation: bool = False) -> str:
    """``train_on`` when it is one of ``TRAIN_ON`` and fits the class (``generalisation``: C3-C6); else a
    ``ConfigError`` naming the field and what is allowed."""
    if train_on not in TRAIN_ON:
        raise ConfigError("train-on", train_on, TRAIN_ON)
    if generalisation and train_on == REDRAWS:
        raise ConfigError("train-on", train_on, (WORKLOAD,), reason=(
            "is a blackbox protocol (classes C0-C2, or a single run): a generalisation class trains on a new "
            "workload every episode and is tested on new query sets, not on redraws; give --train-on workload "
            "or a class C0-C2"))
    return str(train_on)


def protocol_line(train_on: str, episodes: int, method: str) -> str:
    """The line a run prints (a verdict note) saying what the learner trained on and what row ``method`` is."""
    if train_on == REDRAWS:
        return (f"protocol --train-on redraws: {method} trained on {episodes} redraws of the training workload "
                "(its queries, predicate values drawn anew per episode from the seed stream 'training-redraws', "
                f"disjoint from the verdict's); row '{method}' is the greedy policy's set on the training "
                "workload, a learned policy (the best set seen in training was for a redraw, not for the test "
                "workload, and is not reported)")
    return (f"protocol --train-on workload: {method} trained on the training workload itself; row '{method}' is "
            "the best set seen in training, a search outcome")
