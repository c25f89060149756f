"""Torch's thread count while training (``wield.workflows.threads``): one thread for Python users as for the
command, unless the user chose a count (``WIELD_TORCH_THREADS``, ``OMP_NUM_THREADS``, or
``torch.set_num_threads`` before training). Each case runs in a fresh interpreter: the count is global."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = ("import os, torch\n"
          "from wield import RandomAgent, train_online\n"
          "from wield_examples.caching.plugin import make_env\n"
          "env = make_env(requests=60)\n"
          "def train():\n"
          "    train_online(env, RandomAgent(env.action_space), 1, progress=False)\n"
          "    print(torch.get_num_threads(), torch.get_num_interop_threads())\n"
          "{steps}\n")


def _threads_after(steps: str, **variables: str) -> list[tuple[int, int]]:
    """(threads, inter-op threads) after each ``train()`` of ``steps``, run in a fresh interpreter with the
    machine's own arithmetic unless ``variables`` say otherwise (the reproducible one trains on one thread)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WIELD_TORCH_THREADS", "OMP_NUM_THREADS",
                                                             "MKL_NUM_THREADS", "WIELD_NUMERICS")}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(steps=steps)],
                          env={**env, "WIELD_NUMERICS": "native", **variables},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [(int(line.split()[0]), int(line.split()[1])) for line in done.stdout.splitlines()]


def test_python_training_uses_one_thread_and_a_count_the_user_set_stands():
    first, second = _threads_after("train()\ntorch.set_num_threads(torch.get_num_interop_threads() + 1)\ntrain()")
    assert first[0] == 1  # as the wield command does
    assert second[0] == second[1] + 1  # the user's torch.set_num_threads


def test_wield_torch_threads_sets_the_count_and_zero_leaves_torch_alone():
    first, second = _threads_after("train()\nos.environ['WIELD_TORCH_THREADS'] = '0'\n"
                                   "torch.set_num_threads(2)\ntrain()", WIELD_TORCH_THREADS="3")
    assert first[0] == 3 and second[0] == 2


def test_omp_num_threads_is_the_users_choice():
    assert _threads_after("train()", OMP_NUM_THREADS="2")[0][0] == 2


def test_the_reproducible_arithmetic_trains_on_one_thread_whatever_is_asked():
    asked = "train()\ntorch.set_num_threads(2)\ntrain()"
    assert [t for t, _ in _threads_after(asked, WIELD_NUMERICS="reproducible", WIELD_TORCH_THREADS="3")] == [1, 1]
    assert _threads_after("train()", WIELD_NUMERICS="reproducible", OMP_NUM_THREADS="2")[0][0] == 1


def test_a_malformed_count_is_one_line(monkeypatch):
    from wield.errors import ConfigError
    from wield.workflows.threads import apply_torch_threads

    monkeypatch.setenv("WIELD_TORCH_THREADS", "many")
    with pytest.raises(ConfigError, match="WIELD_TORCH_THREADS"):
        apply_torch_threads()
