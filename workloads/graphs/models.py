"""The PyTorch models whose training steps become computation graphs: an NMT encoder-decoder with
unrolled recurrent cells and attention, a transformer encoder and a convolutional network.

Recurrent cells are unrolled by hand (one ``LSTMCell`` / ``GRUCell`` call per time step), so the traced
graph grows linearly with the unroll length, as the study's graphs did.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class NMTModel(nn.Module):
    """Encoder-decoder: ``layers`` stacked recurrent cells on each side, dot-product (Luong) attention over
    the encoder outputs, a tanh attention layer and a softmax over the vocabulary at every decoder step."""

    def __init__(self, vocab: int, hidden: int, layers: int, cell: str = "lstm") -> None:
        super().__init__()
        cell_type = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}[cell]
        self.cell = cell
        self.hidden = hidden
        self.src_embedding = nn.Embedding(vocab, hidden)
        self.tgt_embedding = nn.Embedding(vocab, hidden)
        self.encoder = nn.ModuleList(cell_type(hidden, hidden) for _ in range(layers))
        self.decoder = nn.ModuleList(cell_type(hidden, hidden) for _ in range(layers))
        self.attention = nn.Linear(2 * hidden, hidden)
        self.projection = nn.Linear(hidden, vocab)

    def _step(self, cells: nn.ModuleList, x: torch.Tensor, states: list) -> torch.Tensor:
        for layer, cell in enumerate(cells):
            if self.cell == "lstm":
                states[layer] = cell(x, states[layer])
                x = states[layer][0]
            else:
                states[layer] = cell(x, states[layer])
                x = states[layer]
        return x

    def _initial(self, batch: int) -> list:
        zeros = lambda: torch.zeros(batch, self.hidden)  # noqa: E731
        return [(zeros(), zeros()) if self.cell == "lstm" else zeros() for _ in self.encoder]

    def forward(self, source: torch.Tensor, target_in: torch.Tensor) -> torch.Tensor:
        batch, steps = source.shape
        states = self._initial(batch)
        memory = []
        for t in range(steps):
            memory.append(self._step(self.encoder, self.src_embedding(source[:, t]), states))
        memory = torch.stack(memory, dim=1)  # batch x steps x hidden
        logits = []
        for t in range(target_in.shape[1]):
            h = self._step(self.decoder, self.tgt_embedding(target_in[:, t]), states)
            weights = torch.softmax(torch.bmm(memory, h.unsqueeze(2)).squeeze(2), dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            attended = torch.tanh(self.attention(torch.cat([h, context], dim=1)))
            logits.append(self.projection(attended))
        return torch.stack(logits, dim=1)


class TransformerModel(nn.Module):
    """A pre-norm transformer encoder language model (multi-head self-attention written out)."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, seq: int) -> None:
        super().__init__()
        self.heads = heads
        self.embedding = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "norm1": nn.LayerNorm(d_model), "qkv": nn.Linear(d_model, 3 * d_model), "out": nn.Linear(d_model, d_model),
            "norm2": nn.LayerNorm(d_model), "ff1": nn.Linear(d_model, 4 * d_model), "ff2": nn.Linear(4 * d_model, d_model),
        }) for _ in range(layers))
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, seq = tokens.shape
        x = self.embedding(tokens) + self.position[:seq]
        for block in self.blocks:
            q, k, v = block["qkv"](block["norm1"](x)).chunk(3, dim=-1)
            split = lambda t: t.reshape(batch, seq, self.heads, -1).transpose(1, 2)  # noqa: E731
            q, k, v = split(q), split(k), split(v)
            scores = torch.softmax(q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5), dim=-1)
            x = x + block["out"]((scores @ v).transpose(1, 2).reshape(batch, seq, -1))
            x = x + block["ff2"](F.gelu(block["ff1"](block["norm2"](x))))
        return self.head(x)


class ConvModel(nn.Module):
    """A small residual convolutional network for image classification."""

    def __init__(self, channels: int, blocks: int, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.blocks = nn.ModuleList(nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels)) for _ in range(blocks))
        self.classifier = nn.Linear(channels, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(images))
        for block in self.blocks:
            x = F.relu(x + block(x))
        return self.classifier(x.mean(dim=(2, 3)))
