"""Reproducible arithmetic (wield.numerics, wield.agents.optimizers): the settings that changed training on one
machine (MKL's code path, torch's kernel width, the thread count) change nothing in the reproducible mode, the
mode is recorded with each run, and Adam's exact square root is torch's Adam otherwise."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from wield.agents.optimizers import ExactAdam, exact_sqrt, with_exact_adam
from wield.numerics import arithmetic_differences, numerics_state

TINY_RUN = ["run", "indexing", "--documents", "3000", "--queries", "5", "--episodes", "12", "--quiet"]


def test_the_exact_square_root_is_ieees():
    values = torch.rand(20_000, generator=torch.Generator().manual_seed(1)) * 100
    assert np.array_equal(exact_sqrt(values).numpy(), np.sqrt(values.numpy()))
    assert np.array_equal(exact_sqrt(values).numpy(), np.sqrt(values.double().numpy()).astype(np.float32))


@pytest.mark.parametrize("settings", [{}, {"weight_decay": 0.01}, {"amsgrad": True}, {"betas": (0.8, 0.99)}])
def test_exact_adam_is_torchs_adam_but_for_the_last_bit_of_the_square_root(settings):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 16), torch.nn.Linear(16, 3)]
    copies = [torch.nn.Linear(8, 16), torch.nn.Linear(16, 3)]
    for layer, copy in zip(layers, copies):
        copy.load_state_dict(layer.state_dict())
    ours = ExactAdam([p for layer in layers for p in layer.parameters()], lr=1e-2, **settings)
    theirs = torch.optim.Adam([p for layer in copies for p in layer.parameters()], lr=1e-2, foreach=False,
                              **settings)
    inputs = torch.randn(64, 8)
    for _ in range(50):
        for net, optimizer in ((layers, ours), (copies, theirs)):
            optimizer.zero_grad()
            net[1](torch.relu(net[0](inputs))).pow(2).mean().backward()
            optimizer.step()
    for layer, copy in zip(layers, copies):
        for a, b in zip(layer.parameters(), copy.parameters()):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
    assert ours.state_dict()["state"][0]["step"] == 50


def test_sb3_learners_get_the_exact_adam_unless_the_user_chose_an_optimiser():
    assert with_exact_adam(None) == {"optimizer_class": ExactAdam, "optimizer_kwargs": {"eps": 1e-5}}
    assert with_exact_adam({"net_arch": [8], "optimizer_kwargs": {"eps": 1e-3}})["optimizer_kwargs"] == {"eps": 1e-3}
    chosen = {"optimizer_class": torch.optim.RMSprop}
    assert with_exact_adam(chosen) == chosen


def _tiny_run(tmp_path, name: str, **variables: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "WIELD_NUMERICS", "WIELD_TORCH_THREADS")}
    env.update(variables)
    out = tmp_path / name
    done = subprocess.run([sys.executable, "-m", "wield.cli", *TINY_RUN, "--out", str(out)], env=env,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(out / "episodes.csv", newline="", encoding="utf-8") as handle:
        rewards = [row["total_reward"] for row in csv.DictReader(handle)]
    evaluation = json.loads((out / "evaluation.json").read_text())
    versions = json.loads((out / "versions.json").read_text())
    model = hashlib.sha256((out / "model.pt").read_bytes()).hexdigest()  # the trained weights, bit for bit
    return {"rewards": rewards, "evaluation": evaluation, "numerics": versions["numerics"], "model": model}


@pytest.mark.timeout(900)
def test_settings_that_changed_training_change_nothing_in_the_reproducible_mode(tmp_path):
    """On one AMD EPYC, MKL_CBWR=COMPATIBLE, ATEN_CPU_CAPABILITY=default and a second thread each changed the
    quickstart's training curve before (benchmarks/numerics_divergence.py); in the reproducible mode (the
    command's default) every training reward and every evaluated figure but latency is the same."""
    first = _tiny_run(tmp_path, "a", MKL_CBWR="AVX2", WIELD_TORCH_THREADS="2")
    second = _tiny_run(tmp_path, "b", MKL_CBWR="COMPATIBLE", ATEN_CPU_CAPABILITY="avx2")
    assert first["numerics"]["reproducible"] and second["numerics"]["reproducible"]
    assert first["numerics"]["mkl_branch"] in ("COMPATIBLE,STRICT", "no MKL")
    assert first["numerics"]["torch_capability"] == "DEFAULT"
    assert first["model"] == second["model"]
    assert first["rewards"] == second["rewards"]

    def deterministic(evaluation):
        return {method: {k: v for k, v in figures.items() if "latency" not in k and "seconds" not in k}
                for method, figures in evaluation.get("methods", evaluation).items() if isinstance(figures, dict)}

    assert deterministic(first["evaluation"]) == deterministic(second["evaluation"])


def test_a_bad_numerics_mode_is_a_usage_error_naming_the_variable(tmp_path):
    env = {**os.environ, "WIELD_NUMERICS": "fast"}
    done = subprocess.run([sys.executable, "-m", "wield.cli", "run", "indexing", "--help"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "WIELD_NUMERICS" in done.stderr and "reproducible" in done.stderr and "native" in done.stderr


def test_the_arithmetic_of_a_record_is_compared_with_the_rerun():
    state = numerics_state()
    if os.environ.get("WIELD_NUMERICS", "").strip().lower() != "native":  # tests/conftest.py chose it
        assert state["reproducible"] and state["torch_capability"] == "DEFAULT"
    now = {**state, "reproducible": True, "torch_capability": "DEFAULT", "mkl_branch": "COMPATIBLE,STRICT"}
    assert arithmetic_differences(now, now) == []
    other_cpu = {**now, "cpu": {**now["cpu"], "model": "another processor"}}
    assert arithmetic_differences(other_cpu, now) == []  # reproducible on both: the processor does not matter
    native = {**other_cpu, "reproducible": False, "torch_capability": "AVX512", "mkl_branch": "auto (off)"}
    differences = arithmetic_differences(native, now)
    assert any("torch_capability" in line for line in differences)
    assert any("processor model" in line for line in differences)
    assert arithmetic_differences(None, now) == [
        "the record does not say which arithmetic it used (written before Wield recorded it)"]
    assert any("torch" in line for line in arithmetic_differences({**now, "torch": "2.0.0"}, now))
