"""A trained Q network's forward pass for one observation, in NumPy (float32), for a policy that decides
many times without learning (a greedy play of a workload, a policy-guided search).

A PyTorch forward pass of one observation through a small network is mostly per-operation overhead: the
slot network of the indexing case study took 230-420 us per observation on a 2-core machine, most of a
greedy play's decision after its state features. ``numpy_q_function(network)`` snapshots the weights of a
``QNetwork`` or ``SlotQNetwork`` (``networks.py``) and evaluates the same layers with NumPy in float32, as
the network does (the slot network's scorer applies its first layer to a row's embedding and to the shared
context separately, the same sum in fewer products, and what depends on the slot table alone is kept per
table, so a step that sees the table of the step before reuses it: the same arrays, bit for bit). Its Q values
agree with the network's to float32 rounding (about 1e-6 relative), not bit for bit: a caller that must take
the network's own decision checks the margin between the best two values and asks the network where it is below
``TIE_MARGIN`` (``budgeted.PolicyPlayer`` does).

The snapshot is taken once: weights changed afterwards (more training) are not seen; take a new one.
Layers other than ``Linear`` and ``ReLU``, or an observation part other than ``Box``, ``MultiBinary``,
``Discrete`` and ``MultiDiscrete``, give ``None`` (no NumPy forward; use the network).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from torch import nn

from wield.agents.encoders import ObservationEncoder, _Embed, _Flatten, _OneHot
from wield.agents.networks import QNetwork, SlotQNetwork

TIE_MARGIN = 1e-5  # best two Q values closer than this: the network's own forward pass decides
TABLES_KEPT = 256  # slot tables whose row parts a slot network's NumPy pass keeps (then it starts again)
QFunction = Callable[[Any], dict[str, np.ndarray]]
_Layer = tuple[np.ndarray, np.ndarray] | None  # (weight, bias) of a Linear; None for a ReLU


class _NoTwin(Exception):
    """A layer or observation part without a NumPy twin."""


def _array(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.float32)


def _layers(sequence: nn.Module) -> list[_Layer]:
    modules = list(sequence) if isinstance(sequence, nn.Sequential) else [sequence]
    found: list[_Layer] = []
    for layer in modules:
        if isinstance(layer, nn.Linear):
            found.append((_array(layer.weight).T.copy(), _array(layer.bias) if layer.bias is not None
                          else np.zeros(layer.out_features, dtype=np.float32)))
        elif isinstance(layer, nn.ReLU):
            found.append(None)
        else:
            raise _NoTwin(type(layer).__name__)
    return found


def _apply(layers: list[_Layer], x: np.ndarray) -> np.ndarray:
    for layer in layers:
        x = np.maximum(x, 0.0) if layer is None else x @ layer[0] + layer[1]
    return x


def _as_input(value: Any) -> np.ndarray:
    """An observation part as the network reads it (float32)."""
    return np.asarray(value, dtype=np.float32)


def _flatten(value: Any) -> np.ndarray:
    return _as_input(value).reshape(-1)


def _one_hot(n: int, start: int) -> Callable[[Any], np.ndarray]:
    table = np.eye(n, dtype=np.float32)
    return lambda value: table[int(np.asarray(value).reshape(-1)[0]) - start]


def _embedding(table: np.ndarray, start: np.ndarray) -> Callable[[Any], np.ndarray]:
    return lambda value: table[(np.asarray(value, dtype=np.int64) - start).reshape(-1)].reshape(-1)


def _encoder(encoder: ObservationEncoder) -> Callable[[Any], np.ndarray]:
    """The NumPy twin of an ``ObservationEncoder`` (one observation -> flat float32 features)."""
    parts: list[Callable[[Any], np.ndarray]] = []
    space = encoder.space
    subspaces = [space] if encoder.keys is None or not isinstance(space, spaces.Dict) else \
        [space.spaces[k] for k in encoder.keys]
    for part, sub in zip(encoder.parts, subspaces):
        if isinstance(part, _Flatten):
            parts.append(_flatten)
        elif isinstance(part, _OneHot) and isinstance(sub, spaces.Discrete):
            parts.append(_one_hot(part.output_dim, int(sub.start)))
        elif isinstance(part, _Embed) and isinstance(sub, spaces.MultiDiscrete):
            parts.append(_embedding(_array(part.table.weight), np.asarray(sub.start, dtype=np.int64)))
        else:
            raise _NoTwin(type(part).__name__)
    if encoder.keys is None:
        return parts[0]
    keys = list(encoder.keys)
    return lambda observation: np.concatenate([part(observation[key]) for key, part in zip(keys, parts)])


def _slot_q_function(network: SlotQNetwork) -> QFunction:
    embed, context, score, idle = (_layers(network.embed), _layers(network.context), _layers(network.score),
                                   _layers(network.idle))
    rest = _encoder(network.encoder) if network.encoder is not None else None
    slot_key, head = network.slot_key, network.head_name
    first = score[0]
    if first is None:
        raise _NoTwin("a scorer that starts with a ReLU")
    # the scorer's first layer on [row embedding, context] = row part + context part
    first_weight, first_bias = first
    width = first_weight.shape[0] // 2
    row_weight, context_weight = first_weight[:width].copy(), first_weight[width:].copy()
    score_rest = score[1:]

    # what a slot table gives every observation that holds it (its rows' embeddings pooled, and their part of
    # the scorer's first layer), by the table's bytes: a play's steps that build nothing share one table
    tables: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def table_parts(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = rows.tobytes()
        found = tables.get(key)
        if found is None:
            embedded = _apply(embed, rows)
            filled = (np.abs(rows).sum(axis=-1) > 0).astype(np.float32)
            pooled = (embedded * filled[:, None]).sum(axis=0) / np.float32(max(float(filled.sum()), 1.0))
            if len(tables) >= TABLES_KEPT:
                tables.clear()
            found = tables[key] = (pooled, embedded @ row_weight)
        return found

    def q_values(observation: Any) -> dict[str, np.ndarray]:
        pooled, row_part = table_parts(_as_input(observation[slot_key]))
        parts = [pooled] if rest is None else [rest({k: v for k, v in observation.items() if k != slot_key}),
                                               pooled]
        shared = _apply(context, np.concatenate(parts))
        scored = _apply(score_rest, row_part + (shared @ context_weight + first_bias))
        return {head: np.concatenate([_apply(idle, shared), scored[:, 0]]).astype(np.float64)}

    return q_values


def _mlp_q_function(network: QNetwork) -> QFunction:
    encode, trunk = _encoder(network.encoder), _layers(network.trunk)
    advantages = [_layers(layer) for layer in network.advantages]
    values = [_layers(layer) for layer in network.values] if network.values is not None else None
    names = list(network.head_names)

    def q_values(observation: Any) -> dict[str, np.ndarray]:
        features = _apply(trunk, encode(observation))
        found = {}
        for index, name in enumerate(names):
            advantage = _apply(advantages[index], features)
            if values is not None:
                advantage = _apply(values[index], features) + advantage - advantage.mean()
            found[name] = advantage.astype(np.float64)
        return found

    return q_values


def numpy_q_function(network: nn.Module) -> QFunction | None:
    """``observation -> {head: Q values}`` (float32 arithmetic, float64 arrays) of ``network``'s current
    weights, or None where a layer or observation part has no NumPy twin (module docstring)."""
    try:
        if isinstance(network, SlotQNetwork):
            return _slot_q_function(network)
        if isinstance(network, QNetwork):
            return _mlp_q_function(network)
    except _NoTwin:
        return None
    return None


def decided_by_margin(values: np.ndarray, margin: float = TIE_MARGIN) -> bool:
    """Whether the best finite value of ``values`` leads the next by at least ``margin`` (a single allowed
    value always does): an arithmetic that agrees to well within ``margin`` picks the same action."""
    allowed = np.sort(values[np.isfinite(values)])
    return len(allowed) < 2 or bool(allowed[-1] - allowed[-2] >= margin)
