"""Whether two models' weights are the same: what ``wield reproduce`` compares between a record's
``model.pt`` and its rerun's, both read by ``run_record.load_weights`` (weights only, never unpickled code)."""

from __future__ import annotations

from typing import Any


def same_weights(first: Any, second: Any) -> bool:
    """True when ``first`` and ``second`` (state dicts: tensors in dicts, lists and tuples, with numbers and
    strings) hold the same keys, shapes and values exactly (NaN equals NaN)."""
    import torch

    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(same_weights(first[k], second[k]) for k in first)
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
        return first.shape == second.shape and first.dtype == second.dtype and bool(
            torch.equal(first, second) or (first.is_floating_point() and torch.equal(first.nan_to_num(0.5),
                                                                                     second.nan_to_num(0.5))
                                           and torch.equal(first.isnan(), second.isnan())))
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return len(first) == len(second) and all(same_weights(a, b) for a, b in zip(first, second))
    return type(first) is type(second) and (first == second if not isinstance(first, float) else
                                            first == second or (first != first and second != second))
