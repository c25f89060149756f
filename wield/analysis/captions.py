"""Captions built from what a figure draws, so that a caption never describes a band, a line or a bar that is
not there.

A figure function describes each artist as it draws it (``describe(axis.plot(...), "lines: ...")``); the
description is kept beside the artist, not in the figure. ``drawn_key(figure)`` then walks the figure's
artists and joins the descriptions of those it shows (visible, on a visible axis, still in the figure), each
once, in drawing order: the key part of the caption. ``caption(figure, lead, tail)`` puts the caption
together (what the figure is, the key, then s, n and the seeds) and ``draw_caption`` writes one under the
axes, wrapped to the figure's width.
"""

from __future__ import annotations

import textwrap
from typing import Iterable, TypeVar
from weakref import WeakKeyDictionary

from matplotlib.artist import Artist
from matplotlib.container import Container
from matplotlib.figure import Figure

_DESCRIBED: WeakKeyDictionary[Artist, str] = WeakKeyDictionary()

Drawn = TypeVar("Drawn")


def _artists(drawn: object) -> Iterable[Artist]:
    """The artists of what a drawing call returned: an artist, a container (bars, error bars) or a list."""
    if isinstance(drawn, Artist):
        yield drawn
    elif isinstance(drawn, (Container, list, tuple)):
        for part in drawn:
            yield from _artists(part)


def describe(drawn: Drawn, phrase: str) -> Drawn:
    """Attach ``phrase`` (what the artist shows, e.g. ``"dashed: the greedy policy's return"``) to every artist
    of ``drawn`` (what ``plot``, ``bar``, ``axhspan``, ``errorbar``, ``text`` ... returned); returns ``drawn``."""
    for artist in _artists(drawn):
        _DESCRIBED[artist] = phrase
    return drawn


def _shown(artist: Artist, figure: Figure) -> bool:
    axis = artist.axes
    return artist.get_visible() and artist.get_figure() is figure and (axis is None or axis.get_visible())


def drawn_phrases(figure: Figure) -> list[str]:
    """The descriptions of the artists ``figure`` shows, each once, in drawing order."""
    found = figure.findobj(lambda artist: artist in _DESCRIBED and _shown(artist, figure))
    return list(dict.fromkeys(_DESCRIBED[artist] for artist in found))


def drawn_key(figure: Figure) -> str:
    """The key of a caption from the described artists ``figure`` shows (``"Lines: ...; dashed: ..."``); empty
    when none is described."""
    phrases = drawn_phrases(figure)
    if not phrases:
        return ""
    return _sentence("; ".join(phrases))


def caption(figure: Figure, lead: str = "", tail: str = "") -> str:
    """``lead`` (what the figure is), the key of what it draws (``drawn_key``) and ``tail`` (s, n, seeds), as
    sentences."""
    parts = [_sentence(lead.strip()) if lead.strip() else "", drawn_key(figure),
             _sentence(tail.strip(), capital=False) if tail.strip() else ""]
    return " ".join(part for part in parts if part)


def _sentence(text: str, capital: bool = True) -> str:
    """``text`` with a capital first letter (unless ``capital`` is False: ``s = 2 trials`` keeps its symbol)
    and a closing full stop."""
    text = text[0].upper() + text[1:] if capital else text
    return text if text.endswith((".", "?", "!")) else text + "."


def draw_caption(figure: Figure, text: str) -> None:
    """``text`` under the axes, wrapped to the figure's width (nothing when empty)."""
    if not text:
        return
    width = int(figure.get_figwidth() * 13)
    figure.text(0.5, -0.01, textwrap.fill(text, max(60, width)), ha="center", va="top", fontsize=10)
