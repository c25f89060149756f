"""Graph families: seeded generators of training-step computation graphs, like the query workloads.

A family has default parameters and, for randomised tasks, ranges to draw some of them from (the study's
NMT tasks vary batch size and unroll length). ``sample(seed)`` returns the parameters of one graph,
deterministically from the seed; ``build(params)`` traces that graph. ``nmt`` is the in-distribution
family; ``transformer`` and ``convnet`` serve as out-of-distribution graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from wield.errors import ConfigError
from wield.seeding import make_rng

if TYPE_CHECKING:  # torch is imported when a graph is built, not when the families are listed (--help)
    import torch

    from workloads.graphs.trace import TracedGraph


def _token_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    import torch.nn.functional as F

    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def _build_nmt(p: dict[str, Any]) -> TracedGraph:
    import torch

    from workloads.graphs.models import NMTModel
    from workloads.graphs.trace import trace_training_step

    torch.manual_seed(int(p.get("model_seed", 0)))
    model = NMTModel(p["vocab"], p["hidden"], p["layers"], p["cell"])
    g = torch.Generator().manual_seed(int(p.get("model_seed", 0)))
    source = torch.randint(0, p["vocab"], (p["batch"], p["unroll"]), generator=g)
    target_in = torch.randint(0, p["vocab"], (p["batch"], p["unroll"]), generator=g)
    target_out = torch.randint(0, p["vocab"], (p["batch"], p["unroll"]), generator=g)
    return trace_training_step(model, _token_loss, (source, target_in, target_out), graph_name("nmt", p), "nmt", p)


def _build_transformer(p: dict[str, Any]) -> TracedGraph:
    import torch

    from workloads.graphs.models import TransformerModel
    from workloads.graphs.trace import trace_training_step

    torch.manual_seed(int(p.get("model_seed", 0)))
    model = TransformerModel(p["vocab"], p["d_model"], p["heads"], p["layers"], p["seq"])
    g = torch.Generator().manual_seed(int(p.get("model_seed", 0)))
    tokens = torch.randint(0, p["vocab"], (p["batch"], p["seq"]), generator=g)
    labels = torch.randint(0, p["vocab"], (p["batch"], p["seq"]), generator=g)
    return trace_training_step(model, _token_loss, (tokens, labels), graph_name("transformer", p), "transformer", p)


def _build_convnet(p: dict[str, Any]) -> TracedGraph:
    import torch
    import torch.nn.functional as F

    from workloads.graphs.models import ConvModel
    from workloads.graphs.trace import trace_training_step

    torch.manual_seed(int(p.get("model_seed", 0)))
    model = ConvModel(p["channels"], p["blocks"])
    g = torch.Generator().manual_seed(int(p.get("model_seed", 0)))
    images = torch.randn(p["batch"], 3, p["image"], p["image"], generator=g)
    labels = torch.randint(0, 10, (p["batch"],), generator=g)
    return trace_training_step(model, F.cross_entropy, (images, labels), graph_name("convnet", p), "convnet", p)


def graph_name(family: str, params: dict[str, Any]) -> str:
    keys = {"nmt": ("layers", "hidden", "batch", "unroll"), "transformer": ("layers", "d_model", "batch", "seq"),
            "convnet": ("blocks", "channels", "batch", "image")}[family]
    return f"{family}-" + "-".join(f"{k}{params[k]}" for k in keys)


@dataclass(frozen=True)
class GraphFamily:
    """Default parameters, the choices randomised tasks draw from, and the builder."""

    name: str
    defaults: dict[str, Any]
    randomised: dict[str, tuple]
    builder: Callable[[dict[str, Any]], TracedGraph] = field(repr=False)

    def params(self, **overrides: Any) -> dict[str, Any]:
        """The default parameters with ``overrides`` (unknown names are an error)."""
        for key in overrides:
            if key not in self.defaults:
                raise ConfigError(f"{self.name} graph parameter", key, sorted(self.defaults))
        params = {**self.defaults, **{k: v for k, v in overrides.items() if v is not None}}
        for key, value in params.items():
            if key != "cell" and (not isinstance(value, int) or isinstance(value, bool) or value < 1) \
                    and key != "model_seed":
                raise ConfigError(f"{self.name}.{key}", value, reason="must be a positive integer")
        if self.name == "nmt" and params["cell"] not in ("lstm", "gru"):
            raise ConfigError("nmt.cell", params["cell"], ("lstm", "gru"))
        return params

    def sample(self, seed: int, **fixed: Any) -> dict[str, Any]:
        """A randomised task: each randomised parameter drawn from its choices with ``seed``."""
        rng = make_rng(seed, "graph-family", self.name)
        drawn = {key: choices[int(rng.integers(len(choices)))] for key, choices in sorted(self.randomised.items())}
        return self.params(**{**drawn, **fixed})

    def build(self, params: dict[str, Any]) -> TracedGraph:
        return self.builder(self.params(**params))


FAMILIES: dict[str, GraphFamily] = {f.name: f for f in (
    GraphFamily("nmt", {"layers": 2, "hidden": 256, "vocab": 2000, "batch": 64, "unroll": 10, "cell": "lstm",
                        "model_seed": 0},
                {"batch": (16, 32, 64, 128), "unroll": (6, 8, 10, 12, 14)}, _build_nmt),
    GraphFamily("transformer", {"layers": 4, "d_model": 256, "heads": 4, "vocab": 2000, "batch": 16, "seq": 64,
                                "model_seed": 0},
                {"batch": (8, 16, 32), "seq": (32, 64, 128)}, _build_transformer),
    GraphFamily("convnet", {"blocks": 4, "channels": 32, "batch": 16, "image": 32, "model_seed": 0},
                {"batch": (8, 16, 32), "image": (16, 32)}, _build_convnet),
)}


def get_family(name: str) -> GraphFamily:
    if name not in FAMILIES:
        raise ConfigError("graph family", name, list(FAMILIES))
    return FAMILIES[name]
