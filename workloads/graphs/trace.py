"""Tracing a real PyTorch training step (forward and backward) into a ``ComputationGraph``.

``make_fx`` records every aten operation that one training step executes, the forward pass and the
gradients autograd computes for it, as a torch.fx graph. ``graph_from_fx`` turns that graph into Wield's
columnar ``ComputationGraph``: tuple outputs read through ``getitem`` are folded into the operation that
produced them, each operation gets its output bytes, a FLOP estimate from its shapes and a cost key
(target + input shapes + constant arguments) under which its profiled time is cached.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call
from torch.utils._pytree import tree_flatten

from workloads.graphs.graph import ComputationGraph

MATMULS = {"aten.mm.default", "aten.bmm.default"}


@dataclass
class TracedGraph:
    """A traced training step: the Wield graph, the fx module that runs it, and inputs to run it with.

    ``node_of_op[i]`` is the fx node name of operation ``i`` (for profiling and the real evaluator)."""

    graph: ComputationGraph
    module: torch.fx.GraphModule
    example_inputs: list[Any]
    node_of_op: list[str]


def trace_training_step(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor], batch: tuple,
                        name: str, family: str, params: dict[str, Any]) -> TracedGraph:
    """Trace ``loss_fn(model(*batch))`` and its backward (gradients of every parameter) with make_fx."""
    weights = {k: v.detach().clone().requires_grad_(True) for k, v in model.named_parameters()}

    def training_step(weights: dict[str, torch.Tensor], *batch: torch.Tensor):
        loss = loss_fn(functional_call(model, weights, batch[:-1]), batch[-1])
        gradients = torch.autograd.grad(loss, list(weights.values()))
        return loss, gradients

    module = make_fx(training_step, tracing_mode="real")(weights, *batch)
    module.graph._codegen = torch.fx.graph.CodeGen()  # plain code: forward takes the flat inputs in order
    module.recompile()
    flat_inputs = tree_flatten((weights, *batch))[0]
    flat_inputs = [t.detach() for t in flat_inputs]
    n_params = len(weights)
    graph, node_of_op = graph_from_fx(module, n_params, name, family, params)
    return TracedGraph(graph, module, flat_inputs, node_of_op)


def _tensors(value: Any) -> list[torch.Tensor]:
    return [v for v in tree_flatten(value)[0] if isinstance(v, torch.Tensor)]


def _nbytes(value: Any) -> int:
    return int(sum(t.numel() * t.element_size() for t in _tensors(value)))


def _describe(arg: Any) -> str:
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        tensors = _tensors(val)
        return "x".join(map(str, tensors[0].shape)) + f":{str(tensors[0].dtype)[6:]}" if tensors else "?"
    if isinstance(arg, (list, tuple)):
        return "[" + ",".join(_describe(a) for a in arg) + "]"
    return repr(arg)


def cost_key(node: torch.fx.Node) -> str:
    """What an operation's profiled time depends on: its target, input shapes and constant arguments."""
    args = ",".join(_describe(a) for a in node.args)
    kwargs = ",".join(f"{k}={_describe(v)}" for k, v in sorted(node.kwargs.items()))
    return f"{node.target}({args}{';' + kwargs if kwargs else ''})"


def _shape(node: Any) -> tuple[int, ...]:
    tensors = _tensors(node.meta.get("val")) if isinstance(node, torch.fx.Node) else []
    return tuple(tensors[0].shape) if tensors else ()


def estimate_flops(node: torch.fx.Node) -> float:
    """Floating-point work from shapes: 2mnk for matrix products, 2 x output x (C_in/groups x kernel) for
    convolutions (twice that for their backward), otherwise one per output element."""
    target = str(node.target)
    out = _tensors(node.meta.get("val"))
    out_numel = float(sum(t.numel() for t in out))
    if target in MATMULS or target in ("aten.addmm.default", "aten.baddbmm.default"):
        a, b = (node.args[0], node.args[1]) if target in MATMULS else (node.args[1], node.args[2])
        k = _shape(a)[-1] if _shape(a) else 1
        return 2.0 * out_numel * k
    if target.startswith("aten.convolution"):
        weight = _shape(node.args[1]) if "backward" not in target else _shape(node.args[2])
        per_output = float(np.prod(weight[1:])) if weight else 1.0  # C_in/groups x kernel
        if "backward" in target:
            return 4.0 * float(np.prod(_shape(node.args[0])) or 1.0) * per_output
        return 2.0 * out_numel * per_output
    return out_numel


def _loss_ancestors(module: torch.fx.GraphModule) -> set[str]:
    """Names of the nodes the loss (the step's first output) depends on: the forward pass."""
    output = next(n for n in module.graph.nodes if n.op == "output")
    loss = tree_flatten(output.args[0])[0][0]
    seen, stack = set(), [loss]
    while stack:
        node = stack.pop()
        if isinstance(node, torch.fx.Node) and node.name not in seen:
            seen.add(node.name)
            stack.extend(node.all_input_nodes)
    return seen


def graph_from_fx(module: torch.fx.GraphModule, n_params: int, name: str, family: str,
                  params: dict[str, Any]) -> tuple[ComputationGraph, list[str]]:
    """Columnar graph of ``module``'s operations; the first ``n_params`` placeholders are parameters."""
    index: dict[str, int] = {}
    names, kinds, targets, phases, inputs, out_bytes, flops, keys = [], [], [], [], [], [], [], []
    placeholders = 0
    forward = _loss_ancestors(module)
    for node in module.graph.nodes:
        if node.op == "output":
            continue
        if node.op == "call_function" and node.target is operator.getitem:
            index[node.name] = index[node.args[0].name]  # a tuple element: read from its producer
            continue
        sources = sorted({index[a.name] for a in node.all_input_nodes})
        if node.op == "placeholder":
            kind = "parameter" if placeholders < n_params else "input"
            placeholders += 1
            phase, target, work = "input", kind, 0.0
        else:
            kind, target = "compute", str(node.target)
            work = estimate_flops(node)
            phase = "forward" if node.name in forward else "backward"
        index[node.name] = len(names)
        names.append(node.name)
        kinds.append(kind)
        targets.append(target)
        phases.append(phase)
        inputs.append(sources)
        out_bytes.append(_nbytes(node.meta.get("val")))
        flops.append(work)
        keys.append(cost_key(node) if kind == "compute" else f"{kind}()")
    graph = ComputationGraph(name=name, family=family, params=dict(params), op_names=names, kinds=kinds,
                             targets=targets, phases=phases, inputs=inputs, output_bytes=np.array(out_bytes, float),
                             flops=np.array(flops, float), cost_keys=keys)
    return graph, names
