"""Plain-text tables for terminals: aligned columns, numbers formatted consistently.

A base-layer helper (no pandas, no matplotlib): the protocols, the command line and the analysis use it."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def _cell(value: Any, fmt: str | None) -> str:
    if value is None:
        return "-"
    if fmt and isinstance(value, (int, float)):
        return format(value, fmt)
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str | None]]) -> str:
    """Render ``rows`` with ``columns`` given as (key, header, format spec or None)."""
    header = [title for _, title, _ in columns]
    body = [[_cell(row.get(key), fmt) for key, _, fmt in columns] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def methods_table(methods: Mapping[str, Mapping[str, Any]], metrics: Sequence[Any]) -> str:
    """Metrics (rows, labelled with their units) by methods (columns): ``metrics`` are
    ``wield.metrics.Metric`` declarations, so every cell is formatted as everywhere else; a value with a
    confidence interval (``<name>_ci``: [low, high]) prints it beside, ``60.3% [55.1, 64.0]``."""
    rows = [{"metric": m.label, **{name: _with_interval(m, values) for name, values in methods.items()}}
            for m in metrics]
    return format_table(rows, [("metric", "", None)] + [(name, name, None) for name in methods])


def _with_interval(metric: Any, values: Mapping[str, Any]) -> str:
    cell = metric.format(values.get(metric.name))
    ci = values.get(f"{metric.name}_ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        cell += f" [{metric.format(ci[0], unit=False)}, {metric.format(ci[1], unit=False)}]"
    return cell
