"""RL Baselines3 Zoo trains a Wield environment unmodified: the README's recipe (``--gym-packages wield
--env-kwargs standard_view:True``) runs and saves a model."""

from __future__ import annotations

import subprocess
import sys


def test_rl_zoo3_trains_a_wield_environment_through_the_standard_view(tmp_path):
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "wield/Caching-v0",
               "--gym-packages", "wield", "--env-kwargs", "standard_view:True", "-n", "256", "-params",
               "n_steps:128", "--seed", "0", "--log-folder", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    saved = list(tmp_path.glob("ppo/wield-Caching-v0_1/wield-Caching-v0.zip"))
    assert saved and saved[0].stat().st_size > 1000, sorted(p.name for p in tmp_path.rglob("*"))
