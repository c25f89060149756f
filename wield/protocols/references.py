"""What random play reaches under the same objective, beside a learner's classification.

A classification C_i(n, s, f) says how often a method met the objective; it says nothing about learning
unless random play meets the objective less often. Two references, in the same class on the same trials:

- the **random policy**: the case study's uniformly random policy, measured beside the learner on every
  trial's test workload (the row ``TrialSummary.methods[CaseStudy.random_policy]``); it comes free with the
  learner's trials;
- **random search** at equal budget: the case study's random-search method (``CaseStudy.random_search``)
  run on the same trial plan with the same number of system evaluations, as its own experiment
  (``wield compare NAME --methods LEARNER,RANDOM_SEARCH`` runs it).

Beside them, where the method's own row is not the learned policy (a blackbox trial's row is the best
configuration seen in training, a search outcome), the **greedy policy**: the learned policy's greedy row,
``CaseStudy.greedy_policy`` with ``{method}`` replaced by the trial's method (indexing: ``dqn-greedy``), in
the same class on the same trials, so a classification says both what the search found and what the
learner keeps.

``row_classification`` classifies a row of every trial that measured it; ``references_of`` gathers a
learner experiment's references as ``classification.json`` keeps them; ``reference_lines`` prints them with
the learners' verdict counts and, per rung of the verdicts' ladders, how many trials were better, worse or
indistinguishable (``rung_counts``), and says when the objective does not discriminate (random play meets it
as often as the learner).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from wield.protocols.classification import Classification, TrialOutcome, classify
from wield.protocols.objective import Objective


def greedy_row(greedy_policy: str, method: str) -> str:
    """The greedy policy's row of a trial of ``method``: ``greedy_policy`` with ``{method}`` replaced."""
    return greedy_policy.replace("{method}", str(method))


def row_classification(class_name: str, summaries: Sequence[Any], objective: Objective,
                       row: str, n: int | None = 0) -> Classification | None:
    """C_i of the method row ``row`` measured beside the method in every trial that has it (``summaries``:
    ``TrialSummary`` objects; ``row`` may name ``{method}``, replaced by each trial's method); n is 0 (such a
    row spends none of the trial's budget), or with ``n=None`` the trial's own transitions (the learned
    policy's row spent them). None when no trial has the row with every metric the objective reads."""
    outcomes = []
    for summary in summaries:
        metrics = summary.methods.get(greedy_row(row, summary.method))
        if isinstance(metrics, Mapping) and objective.readable(metrics):
            spent = int(summary.transitions) if n is None else n
            outcomes.append(TrialOutcome(summary.trial, spent, objective.outcome(metrics),
                                         float(metrics[objective.metric])))
    return classify(class_name, outcomes) if outcomes else None


def frequency_label(classification: Mapping[str, Any] | Classification) -> str:
    """``f = 0.40 [95% CI 0.05-0.85], s = 5`` of a classification (or its dict), with ``, 1 inconclusive``
    when trials could not be decided (f is over the decided ones)."""
    c = classification.as_dict() if isinstance(classification, Classification) else classification
    inconclusive = int(c.get("inconclusive") or 0)
    left_out = f", {inconclusive} inconclusive" if inconclusive else ""
    return f"f = {c['f']:.2f} [95% CI {c['ci_low']:.2f}-{c['ci_high']:.2f}], s = {c['s']}{left_out}"


def learned_count(verdicts: Iterable[Mapping[str, Any] | None]) -> tuple[int, int]:
    """(trials whose verdict says learned, trials with a verdict)."""
    found = [v for v in verdicts if v]
    return sum(bool(v.get("learned")) for v in found), len(found)


def rung_counts(verdicts: Iterable[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """Per rung of the verdicts' ladders (``rung``: its label, ``random``, ``trivial no-index``, ...; ``kind``),
    in ladder order, how many trials' verdicts found the learner ``better``, ``worse`` or ``indistinguishable``."""
    from wield.protocols.verdict import KINDS, RUNG_OUTCOMES

    counts: dict[str, dict[str, Any]] = {}
    for verdict in verdicts:
        for rung in (verdict or {}).get("rungs") or []:
            kind = str(rung.get("kind"))
            label = "random" if kind == "random" else f"{kind} {rung.get('name')}"
            entry = counts.setdefault(label, {"rung": label, "kind": kind, **{o: 0 for o in RUNG_OUTCOMES}})
            if rung.get("outcome") in RUNG_OUTCOMES:
                entry[str(rung["outcome"])] += 1
    order = {kind: index for index, kind in enumerate(KINDS)}
    return sorted(counts.values(), key=lambda e: order.get(e["kind"], len(order)))


def rung_counts_text(counts: Sequence[Mapping[str, Any]]) -> str:
    """``random 2/0/0; trivial no-index 2/0/0; heuristic advisor 0/1/1`` (better/worse/indistinguishable)."""
    return "; ".join(f"{c['rung']} {c['better']}/{c['worse']}/{c['indistinguishable']}" for c in counts)


def references_of(class_name: str, summaries: Sequence[Any], objective: Objective,
                  random_policy: str | None, greedy_policy: str | None = None) -> dict[str, Any]:
    """What ``classification.json`` keeps beside the classification: the learners' verdict count, the
    learned greedy policy's classification (``greedy``, when the case study names its row and it is not the
    method's own row) and the random policy's on the same trials (when the case study names its row)."""
    learned, judged = learned_count(s.verdict for s in summaries)
    found: dict[str, Any] = {}
    if judged:
        found["learned"] = {"learned": learned, "trials": judged}
        found["rungs"] = rung_counts(s.verdict for s in summaries)
    own = {s.method for s in summaries}
    if greedy_policy and not any(greedy_row(greedy_policy, s.method) == s.method for s in summaries):
        rows = sorted({greedy_row(greedy_policy, s.method) for s in summaries})
        greedy = row_classification(class_name, summaries, objective, greedy_policy, n=None)
        if greedy is not None:
            found["greedy"] = {"row": ", ".join(rows), **greedy.as_dict()}
    if random_policy and random_policy not in own:
        policy = row_classification(class_name, summaries, objective, random_policy)
        if policy is not None:
            found["random_policy"] = {"row": random_policy, **policy.as_dict()}
    return found


def discrimination_note(method: str, f: float, references: Sequence[tuple[str, float]]) -> str | None:
    """A warning when a reference (label, f) meets the objective at least as often as ``method`` (f), or
    when neither meets it; None when the learner meets it more often than every reference."""
    if not references:
        return None
    matched = [(label, value) for label, value in references if value >= f]
    if f == 0 and all(value == 0 for _, value in references):
        return (f"neither {method} nor random play ({', '.join(label for label, _ in references)}) meets the "
                "objective in any trial: it says nothing about learning here")
    if matched:
        label, value = max(matched, key=lambda item: item[1])
        return (f"the objective does not discriminate: {label} meets it as often as {method} "
                f"(f = {value:.2f} vs {f:.2f}), so meeting it shows no learning")
    return None


def reference_lines(method: str, classification: Mapping[str, Any] | Classification, references: Mapping[str, Any],
                    random_search: Mapping[str, Any] | None = None, random_search_hint: str | None = None) -> list[str]:
    """Lines printed under a learner's classification: its verdict count, the learned greedy policy's f
    (when recorded), the random policy's and random search's f on the same trials (or how to get random
    search's), and discrimination warnings."""
    c = classification.as_dict() if isinstance(classification, Classification) else classification
    lines = []
    learned = references.get("learned")
    if learned:
        lines.append(f"  learned (verdict: greedy policy beats random and every trivial policy on held-out instances): "
                     f"{learned['learned']}/{learned['trials']} trials")
    if references.get("rungs"):
        lines.append("  rungs over trials (better/worse/indistinguishable): " + rung_counts_text(references["rungs"]))
    compared: list[tuple[str, float]] = []
    greedy = references.get("greedy")
    if greedy:
        lines.append(f"  learned greedy policy on the same trials (row '{greedy['row']}'): {frequency_label(greedy)}")
    policy = references.get("random_policy")
    if policy:
        lines.append(f"  random policy on the same trials (row '{policy['row']}'): {frequency_label(policy)}")
        compared.append(("the random policy", float(policy["f"])))
    if random_search:
        lines.append(f"  random search at equal budget (n = {random_search['n']}): {frequency_label(random_search)}")
        compared.append(("random search", float(random_search["f"])))
    elif random_search_hint:
        lines.append(f"  random search at equal budget: not run here; {random_search_hint}")
    note = discrimination_note(method, float(c["f"]), compared)
    if note:
        lines.append(f"  {note}")
    if greedy and compared:  # the learned policy's own row against the same random references
        note = discrimination_note(f"the greedy policy ({greedy['row']})", float(greedy["f"]), compared)
        if note:
            lines.append(f"  {note}")
    return lines
