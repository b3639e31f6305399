"""Helpers shared by the engine and environment tests.

Everything here is written from RULES.md, not from ``uno_env``: the card list, the action ids by
name and the playability rule are restated independently so that the tests compare the engine
against the rules rather than against itself.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

COLOUR_ORDER = ("red", "green", "blue", "yellow")
RANK_ORDER = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip", "reverse", "draw2", "wild", "wild_draw4")
DRAW = 60
WILDS = ("wild", "wild_draw4")
#: More decisions than any real game takes (under random play about 70 on average): a test's game loop that
#: runs past it has found a rules bug that keeps the game going, and fails instead of growing until killed.
MAX_DECISIONS = 5_000


def capped(limit: int = MAX_DECISIONS) -> Iterator[int]:
    """``range(limit)`` that fails the test when exhausted: loop a game with it and ``break`` when it ends."""
    yield from range(limit)
    raise AssertionError(f"the game did not end within {limit} decisions")



def deck_names() -> list[str]:
    """The 108 cards of RULES.md "Cards" by name: per colour one 0 and two of everything else, 4+4 wilds."""
    names: list[str] = []
    for colour in COLOUR_ORDER:
        names.append(f"{colour}:0")
        for rank in RANK_ORDER[1:13]:
            names += [f"{colour}:{rank}"] * 2
    return names + ["wild"] * 4 + ["wild_draw4"] * 4


def card_type(name: str) -> int:
    """The card type (0-53) of a name: ``colour * 13 + rank`` for coloured cards, 52 wild, 53 wild_draw4.

    Card types are the engine's numbering (uno_env/cards.py docstring), restated here from that documentation.
    """
    if name in WILDS:
        return 52 + WILDS.index(name)
    colour, rank = name.split(":")
    return COLOUR_ORDER.index(colour) * 13 + RANK_ORDER.index(rank)


def counts_of(names: Iterable[str]) -> list[int]:
    """54 counts, indexed by card type, of a list of card names."""
    out = [0] * 54
    for name in names:
        out[card_type(name)] += 1
    return out


def minus(pool: Iterable[str], names: Iterable[str]) -> list[str]:
    """Multiset difference ``pool - names``, keeping ``pool``'s order; every name must be in the pool."""
    left = list(pool)
    for name in names:
        left.remove(name)
    return left


def act(card: str, colour: str | None = None) -> int:
    """The RULES.md action id that plays ``card`` (declaring ``colour`` for a wild)."""
    if card in WILDS:
        if colour is None:
            raise ValueError("a wild needs a declared colour")
        return COLOUR_ORDER.index(colour) * 15 + RANK_ORDER.index(card)
    card_colour, rank = card.split(":")
    return COLOUR_ORDER.index(card_colour) * 15 + RANK_ORDER.index(rank)


def wild_actions(card: str) -> set[int]:
    """The four action ids that play ``card`` (a wild kind), one per declared colour."""
    return {act(card, colour) for colour in COLOUR_ORDER}


def scenario(
    agent: Sequence[str],
    opponent: Sequence[str],
    discard: Sequence[str],
    deck: Sequence[str] = (),
    *,
    rest: str = "deck",
    to_move: str = "agent",
    pending_draw: int = 0,
    active_colour: str | None = None,
) -> dict[str, Any]:
    """A valid RULES.md scenario. The cards not named go to ``rest``.

    ``rest`` is ``"deck"`` (after the named deck cards), ``"discard"`` (under the named discard cards),
    ``"agent"`` or ``"opponent"`` (appended to that hand).
    """
    named = [*agent, *opponent, *discard, *deck]
    remaining = minus(deck_names(), named)
    parts = {"agent": list(agent), "opponent": list(opponent), "deck": list(deck), "discard": list(discard)}
    if rest == "discard":
        parts["discard"] = remaining + parts["discard"]
    else:
        parts[rest] += remaining
    out: dict[str, Any] = {
        "agent_hand": parts["agent"], "opponent_hand": parts["opponent"], "deck": parts["deck"],
        "discard": parts["discard"], "to_move": to_move, "pending_draw": pending_draw,
    }
    if active_colour is not None:
        out["active_colour"] = active_colour
    return out


def legal_by_rules(hand: Iterable[str], top: str, active_colour: str, pending_draw: int) -> set[int]:
    """The legal action ids of RULES.md "A turn", derived from names only.

    A pending draw allows only drawing; otherwise every playable card may be played (a wild with any
    declared colour), and drawing is legal only when nothing is playable.
    """
    if pending_draw:
        return {DRAW}
    top_rank = None if top in WILDS else top.split(":")[1]
    legal: set[int] = set()
    for card in set(hand):
        if card in WILDS:
            legal |= wild_actions(card)
            continue
        colour, rank = card.split(":")
        if colour == active_colour or rank == top_rank:
            legal.add(act(card))
    return legal or {DRAW}


def winner_by_rules(own_cards: int, opponent_cards: int) -> str:
    """Who won a finished game from the hand sizes at its end (RULES.md, "Outcome").

    An emptied hand wins, and a game stopped because the deck ran out goes to the smaller hand; both mean
    the winner holds fewer cards. Equal hands are a draw. (Not for games ended by an illegal action.)
    """
    if own_cards == opponent_cards:
        return "draw"
    return "agent" if own_cards < opponent_cards else "opponent"


def same(a: Any, b: Any) -> bool:
    """Equal observations / infos / env outputs: arrays by value, dtype and shape, the rest by type and value."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def mask_set(mask: Any) -> set[int]:
    """The action ids set in a 61-long mask."""
    return {int(i) for i, flag in enumerate(mask) if flag}


def same_cards(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether two lists of card names hold the same multiset."""
    return Counter(a) == Counter(b)


class ScriptedPolicy:
    """An opponent that plays a fixed list of action ids, recording every view it is shown.

    Asking it to move past the end of its script is a test failure: it means the env let the
    opponent move when the rules say it should not.
    """

    def __init__(self, actions: Iterable[int]) -> None:
        self.actions = list(actions)
        self.views: list[Any] = []

    def reset(self, seed: int | None = None) -> None:
        """Keep the script: one ScriptedPolicy serves one game."""

    def act(self, view: Any) -> int:
        self.views.append(view)
        if not self.actions:
            raise AssertionError("the scripted opponent was asked to move beyond its script")
        return self.actions.pop(0)


class FirstLegalPolicy:
    """A deterministic opponent that plays its lowest legal action id, recording every view it is shown."""

    def __init__(self) -> None:
        self.views: list[Any] = []

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: Any) -> int:
        self.views.append(view)
        return min(view.legal_actions)


def as_from_a_terminal() -> None:
    """``preexec_fn`` for a child that a Ctrl-C test signals: SIGINT at its default action, as in a terminal.

    pytest-xdist's workers ignore SIGINT and a child inherits an ignored signal; Python then installs no
    KeyboardInterrupt handler, so the child would never see the test's Ctrl-C (whether it did depended on which
    test had run before in the same worker: the notebook tests' kernels restore the default)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
