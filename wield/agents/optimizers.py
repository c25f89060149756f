"""Adam with a correctly rounded square root, so that one update is the same on every x86 CPU.

torch's float32 ``sqrt`` on the CPU goes through Intel MKL's vector math library in its high-accuracy mode,
which is within one unit in the last place but not correctly rounded, and whose result depends on the
processor (measured: 3,223 of 19,200 square roots differ from IEEE's on an AMD EPYC; an Intel Xeon gives other
last bits, with torch's default kernels and MKL's compatible path on both). Adam divides by that square root at
every step, so its updates, and after a few hundred steps a DQN's decisions, differ between machines.
``ExactAdam`` is torch's Adam (the same defaults, bias corrections and order of operations, with weight decay
and AMSGrad) whose square root is numpy's, which is IEEE's correctly rounded one on every processor; every
other operation of the step is an elementwise IEEE operation, the same everywhere. Wield's own learners use
it, and Stable-Baselines3 learners get it through ``policy_kwargs`` (``with_exact_adam``) unless the user
chose an optimiser.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import torch


def exact_sqrt(tensor: torch.Tensor) -> torch.Tensor:
    """The correctly rounded square root of a CPU tensor (numpy's IEEE square root), as a new tensor."""
    return torch.from_numpy(np.sqrt(tensor.detach().contiguous().numpy()))


class ExactAdam(torch.optim.Optimizer):
    """torch.optim.Adam's update with a correctly rounded square root (see the module's docstring)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, **ignored: Any) -> None:
        # ``ignored``: torch Adam's implementation switches (foreach, fused, capturable, ...) choose only how
        # the same arithmetic is run; SB3 passes some of them through optimizer_kwargs.
        if not 0.0 <= lr or not 0.0 <= eps or not 0.0 <= weight_decay:
            raise ValueError(f"invalid Adam settings: lr={lr}, eps={eps}, weight_decay={weight_decay}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid Adam betas: {betas}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad})

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                state = self.state[param]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["step"] += 1
                step = float(state["step"])
                if group["weight_decay"] != 0:
                    grad = grad.add(param, alpha=group["weight_decay"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                second = exp_avg_sq
                if group["amsgrad"]:
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    second = state["max_exp_avg_sq"]
                step_size = group["lr"] / (1 - beta1 ** step)
                denominator = (exact_sqrt(second) / ((1 - beta2 ** step) ** 0.5)).add_(group["eps"])
                param.addcdiv_(exp_avg, denominator, value=-step_size)
        return loss


def with_exact_adam(policy_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Stable-Baselines3 ``policy_kwargs`` with ``ExactAdam`` as the optimiser, unless they name one; with
    SB3's own Adam epsilon for its policies (1e-5), which SB3 sets only when the class is torch's Adam."""
    kwargs = dict(policy_kwargs or {})
    if "optimizer_class" not in kwargs:
        kwargs["optimizer_class"] = ExactAdam
        kwargs["optimizer_kwargs"] = {"eps": 1e-5, **dict(kwargs.get("optimizer_kwargs") or {})}
    return kwargs
