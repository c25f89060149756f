"""Replay buffers: uniform and proportional prioritised (sum tree), with protected entries for demonstrations.

Both buffers share one interface: ``add(transition, priority=None, protected=False, bonus=0.0)``,
``sample(batch_size) -> (indices, transitions, weights)``, ``update_priorities(indices, priorities)`` and
``len``. When the buffer is full the oldest unprotected entry is overwritten; protected entries (DQfD's
demonstrations) are never evicted. In the prioritised buffer an entry's sampling probability is
proportional to ``(priority + eps + bonus) ** alpha``; the bonus lets demonstrations be drawn more often.
Sampling uses the buffer's own seeded numpy generator, so it is deterministic.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from wield.agents.schedules import LinearSchedule
from wield.errors import ConfigError


class SumTree:
    """A binary tree whose leaves hold non-negative values and whose nodes hold the sums of their subtrees.

    ``update`` and ``find`` are O(log n); ``total`` is O(1).
    """

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ConfigError("capacity", capacity, "an integer >= 1")
        self.capacity = capacity
        self._leaves = 1 << (capacity - 1).bit_length()
        self._tree = np.zeros(2 * self._leaves, dtype=np.float64)

    def update(self, index: int, value: float) -> None:
        """Set leaf ``index`` to ``value`` and refresh the sums above it."""
        if not 0 <= index < self.capacity:
            raise IndexError(f"sum tree index {index} outside [0, {self.capacity})")
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"sum tree values must be finite and >= 0, got {value!r}")
        node = index + self._leaves
        self._tree[node] = value
        node //= 2
        while node >= 1:
            self._tree[node] = self._tree[2 * node] + self._tree[2 * node + 1]
            node //= 2

    def get(self, index: int) -> float:
        return float(self._tree[index + self._leaves])

    def total(self) -> float:
        return float(self._tree[1])

    def find(self, prefix: float) -> int:
        """The first leaf whose cumulative sum (leaves 0..i inclusive) exceeds ``prefix``.

        ``prefix`` is clipped into ``[0, total)``; a leaf of value 0 is never returned.
        """
        if self.total() <= 0:
            raise ValueError("cannot search an empty sum tree")
        prefix = max(float(prefix), 0.0)
        node = 1
        while node < self._leaves:
            left = 2 * node
            if prefix < self._tree[left] or self._tree[left + 1] <= 0:
                node = left
            else:
                prefix -= self._tree[left]
                node = left + 1
        return node - self._leaves


class ReplayBuffer:
    """A fixed-capacity FIFO buffer with uniform sampling; all importance weights are 1."""

    def __init__(self, capacity: int, seed: int = 0) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ConfigError("capacity", capacity, "an integer >= 1")
        self.capacity = capacity
        self._seed = seed
        self._rng = np.random.default_rng(seed)
        self._data: list[Any] = [None] * capacity
        self._protected = np.zeros(capacity, dtype=bool)
        self._bonus = np.zeros(capacity, dtype=np.float64)
        self._priority = np.zeros(capacity, dtype=np.float64)
        self._size = 0
        self._cursor = 0  # next slot considered for eviction once full
        self._max_priority = 1.0

    def __len__(self) -> int:
        return self._size

    @property
    def protected_count(self) -> int:
        return int(self._protected[: self._size].sum())

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._data[index]

    def _claim_slot(self) -> int:
        if self._size < self.capacity:
            self._size += 1
            return self._size - 1
        for offset in range(self.capacity):
            slot = (self._cursor + offset) % self.capacity
            if not self._protected[slot]:
                self._cursor = (slot + 1) % self.capacity
                return slot
        raise ValueError(f"replay buffer of capacity {self.capacity} is full of protected entries")

    def add(self, transition: Any, priority: float | None = None, protected: bool = False,
            bonus: float = 0.0) -> int:
        """Store ``transition`` and return its slot; ``priority=None`` means the highest priority seen."""
        if not (bonus >= 0 and math.isfinite(bonus)):
            raise ConfigError("bonus", bonus, "a finite number >= 0")
        slot = self._claim_slot()
        self._data[slot] = transition
        self._protected[slot] = bool(protected)
        self._bonus[slot] = float(bonus)
        if priority is None:
            priority = self._max_priority
        self._set_priority(slot, abs(float(priority)))
        return slot

    def _set_priority(self, slot: int, priority: float) -> None:
        if not math.isfinite(priority):
            raise ValueError(f"priority must be finite, got {priority!r}")
        self._priority[slot] = priority
        self._max_priority = max(self._max_priority, priority)

    def update_priorities(self, indices: Sequence[int] | np.ndarray, priorities: Sequence[float] | np.ndarray) -> None:
        """Set new priorities (absolute TD errors) for the sampled ``indices``."""
        for index, priority in zip(np.asarray(indices).tolist(), np.abs(np.asarray(priorities, dtype=float))):
            self._set_priority(int(index), float(priority))

    def _check_sample(self, batch_size: int) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError("batch_size", batch_size, "an integer >= 1")
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer")

    def sample(self, batch_size: int) -> tuple[np.ndarray, list[Any], np.ndarray]:
        """Draw ``batch_size`` entries uniformly with replacement: (indices, transitions, weights of 1)."""
        self._check_sample(batch_size)
        indices = self._rng.integers(0, self._size, size=batch_size)
        return indices, [self._data[i] for i in indices], np.ones(batch_size, dtype=np.float32)

    def state_dict(self, include_data: bool = True) -> dict[str, Any]:
        """Generator state and counters; with ``include_data`` also the stored transitions."""
        state: dict[str, Any] = {"rng": self._rng.bit_generator.state, "max_priority": self._max_priority}
        if include_data:
            state.update(data=list(self._data[: self._size]), protected=self._protected.copy(),
                         bonus=self._bonus.copy(), priority=self._priority.copy(), size=self._size,
                         cursor=self._cursor)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.bit_generator.state = state["rng"]
        self._max_priority = float(state["max_priority"])
        if "data" not in state:
            return
        size = int(state["size"])
        if size > self.capacity:
            raise ValueError(f"saved buffer holds {size} entries, more than the capacity {self.capacity}")
        self._data = list(state["data"]) + [None] * (self.capacity - size)
        for name in ("protected", "bonus", "priority"):
            array = getattr(self, f"_{name}")
            array[:] = 0
            array[:size] = np.asarray(state[name])[:size]
        self._size, self._cursor = size, int(state["cursor"]) % self.capacity
        self._rebuild()

    def _rebuild(self) -> None:
        """Hook for subclasses that keep derived structures."""


class PrioritizedReplay(ReplayBuffer):
    """Proportional prioritised replay (Schaul et al. 2016) with importance-sampling weights.

    The exponent ``beta`` of the weights anneals linearly from ``beta_start`` to ``beta_end`` over
    ``beta_steps`` calls of ``sample``. Weights are normalised by their maximum within the batch.
    """

    def __init__(self, capacity: int, alpha: float = 0.6, beta_start: float = 0.4, beta_steps: int = 10_000,
                 eps: float = 1e-6, seed: int = 0, beta_end: float = 1.0) -> None:
        if not (isinstance(alpha, (int, float)) and 0 <= alpha and math.isfinite(alpha)):
            raise ConfigError("alpha", alpha, "a finite number >= 0")
        for name, value in (("beta_start", beta_start), ("beta_end", beta_end)):
            if not (isinstance(value, (int, float)) and 0 <= value <= 1):
                raise ConfigError(name, value, "a number in [0, 1]")
        if not isinstance(beta_steps, int) or beta_steps < 1:
            raise ConfigError("beta_steps", beta_steps, "an integer >= 1")
        if not (isinstance(eps, (int, float)) and eps > 0):
            raise ConfigError("eps", eps, "a number > 0")
        super().__init__(capacity, seed)
        self.alpha, self.eps = float(alpha), float(eps)
        self.beta = LinearSchedule(beta_start, beta_end, beta_steps)
        self._samples = 0
        self._tree = SumTree(capacity)

    def _set_priority(self, slot: int, priority: float) -> None:
        super()._set_priority(slot, priority)
        self._tree.update(slot, (priority + self.eps + self._bonus[slot]) ** self.alpha)

    def probability(self, index: int) -> float:
        """The probability that one draw returns entry ``index``."""
        return self._tree.get(index) / self._tree.total()

    def sample(self, batch_size: int) -> tuple[np.ndarray, list[Any], np.ndarray]:
        """Stratified proportional sampling: one draw from each of ``batch_size`` equal slices of the mass."""
        self._check_sample(batch_size)
        total = self._tree.total()
        bounds = np.linspace(0.0, total, batch_size + 1)
        prefixes = self._rng.uniform(bounds[:-1], bounds[1:])
        indices = np.array([min(self._tree.find(p), self._size - 1) for p in prefixes], dtype=np.int64)
        probabilities = np.array([self._tree.get(i) for i in indices]) / total
        beta = self.beta.value(self._samples)
        self._samples += 1
        weights = (self._size * probabilities) ** (-beta)
        weights = (weights / weights.max()).astype(np.float32)
        return indices, [self._data[i] for i in indices], weights

    def state_dict(self, include_data: bool = True) -> dict[str, Any]:
        state = super().state_dict(include_data)
        state["samples"] = self._samples
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._samples = int(state.get("samples", 0))
        super().load_state_dict(state)

    def _rebuild(self) -> None:
        self._tree = SumTree(self.capacity)
        for slot in range(self._size):
            self._tree.update(slot, (self._priority[slot] + self.eps + self._bonus[slot]) ** self.alpha)
