"""Which step of one DQN-style update rounds differently on this machine: hashes per stage, to compare machines.

Runs a fixed, seeded update of a small MLP (the shape of Wield's Q networks: 2 x 128 ReLU, a dueling head)
under the arithmetic that the environment selects, and prints a short sha256 of each stage's result:
initial weights, forward pass, loss, gradients, gradient clipping, the Adam step, and a few single operations
(matrix product, sum, mean, exp, sqrt). Run it on two machines with the same settings and compare the lines:
the first stage that differs is where the arithmetic parts.

    WIELD_NUMERICS=reproducible python benchmarks/numerics_probe.py
    WIELD_NUMERICS=native python benchmarks/numerics_probe.py --json probe.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys


def digest(*tensors) -> str:
    h = hashlib.sha256()
    for tensor in tensors:
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def probe() -> dict[str, str]:
    from wield.numerics import apply_numerics_mode, numerics_state

    apply_numerics_mode()  # WIELD_NUMERICS, as the wield command does, before torch computes
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    trunk = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
    advantage, value = nn.Linear(128, 10), nn.Linear(128, 1)
    params = [*trunk.parameters(), *advantage.parameters(), *value.parameters()]
    stages = {"init": digest(*params)}
    x = torch.randn(32, 40)
    target = torch.randn(32)
    actions = torch.randint(0, 10, (32,))
    weights = torch.rand(32)
    stages["inputs"] = digest(x, target, weights)
    features = trunk(x)
    stages["trunk forward"] = digest(features)
    a = advantage(features)
    q = value(features) + a - a.mean(dim=1, keepdim=True)
    stages["dueling q"] = digest(q)
    chosen = q.gather(1, actions[:, None]).squeeze(1)
    loss = (weights * nn.functional.smooth_l1_loss(chosen, target, reduction="none")).mean()
    stages["loss"] = digest(loss)
    from wield.agents.optimizers import ExactAdam

    initial = [p.detach().clone() for p in params]
    optimizer = torch.optim.Adam(params, lr=1e-3, foreach=True)
    loss.backward()
    stages["gradients"] = digest(*[p.grad for p in params])
    nn.utils.clip_grad_norm_(params, 10.0, foreach=True)
    stages["clipped gradients"] = digest(*[p.grad for p in params])
    for _ in range(20):
        optimizer.step()
    stages["20 adam steps (torch's)"] = digest(*params)
    with torch.no_grad():
        for param, value in zip(params, initial):
            param.copy_(value)
    exact = ExactAdam(params, lr=1e-3)
    for _ in range(20):
        exact.step()
    stages["20 adam steps (ExactAdam)"] = digest(*params)
    m = torch.randn(64, 300)
    stages["op: matmul 64x300x64"] = digest(m @ m.T)
    stages["op: sum 19200"] = digest(m.sum())
    stages["op: mean over rows"] = digest(m.mean(dim=1))
    stages["op: exp"] = digest(m.exp())
    stages["op: sqrt"] = digest(m.abs().sqrt())
    stages["op: tanh"] = digest(m.tanh())
    stages["op: softmax"] = digest(torch.softmax(m, dim=1))
    stages["op: log"] = digest(m.abs().log())
    stages["op: log_softmax"] = digest(torch.log_softmax(m, dim=1))
    stages["op: exact sqrt"] = digest(__import__("wield.agents.optimizers", fromlist=["x"]).exact_sqrt(m.abs()))
    state = numerics_state()
    stages["(torch kernels, MKL path, torch)"] = (f"{state.get('torch_capability')}, {state.get('mkl_branch')}, "
                                                  f"{state.get('torch')}")
    return stages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the hashes here")
    args = parser.parse_args()
    stages = probe()
    for name, value in stages.items():
        print(f"{name:<36} {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(stages, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
