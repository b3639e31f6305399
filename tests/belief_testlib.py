"""Helpers of the belief tests (tests/test_belief_*.py): hand-computed references and recording trackers.

The particle-filter tolerances are standard-error bounds: an estimate is a weighted mean over particles whose
(Rao-Blackwellized) values vary at most as much as under the posterior, and the asymptotic error variance of
sequential Monte Carlo is a sum of per-step terms (Chopin 2004), taken here as posterior variance / ESS of
each step that reweighted the particles plus 1/N for the sampling itself (:class:`TracedParticles`). With
``Z = 5`` standard errors a correct filter fails a comparison by chance with probability below 1e-6; on
small end games the observed errors stay below 0.6 of this bound.
"""

from __future__ import annotations

import gc
import math
import types
from typing import Any

import numpy as np
from uno_testlib import deck_names, scenario

from uno_env.belief import (
    BELIEF_FEATURES,
    ParticleBelief,
)
from uno_env.cards import NUM_CARD_TYPES, PLAYABLE, card_id, card_rank
from uno_env.game import Game
from uno_env.view import PublicView

SEAT = {"agent": 0, "opponent": 1}
Z = 5.0  # standard errors allowed for a particle-filter estimate (module docstring)
WILDS = [card_id("wild"), card_id("wild_draw4")]


def counts(names: list[str]) -> np.ndarray:
    """54 card counts of a list of card names."""
    out = np.zeros(NUM_CARD_TYPES, np.int64)
    for name in names:
        out[card_id(name)] += 1
    return out


FULL_DECK = counts(deck_names())


def vector(values: dict[str, float]) -> np.ndarray:
    """A 54-vector from ``{card name: value}``, 0 elsewhere."""
    out = np.zeros(NUM_CARD_TYPES)
    for name, value in values.items():
        out[card_id(name)] = value
    return out


def unseen(view: PublicView) -> np.ndarray:
    """The pool from RULES.md's card list: every card in neither the seat's hand nor the discard pile."""
    return FULL_DECK - np.asarray(view.hand) - np.asarray(view.discard)


def _fixed_sets() -> np.ndarray:
    """(54 x 5) the card-type sets of can_play[red/green/blue/yellow] (a colour plus the wilds) and holds_wild."""
    sets = np.zeros((NUM_CARD_TYPES, 5), bool)
    for c in range(4):
        sets[c * 13:(c + 1) * 13, c] = True
    sets[WILDS, :] = True
    return sets


FIXED_SETS = _fixed_sets()


def feature_sets(top: int, colour: int) -> np.ndarray:
    """(54 x 6) the card-type sets behind the 6 probability features, written from their names
    (FEATURE_NAMES): each colour plus the wilds, the wilds, and the cards playable on the top card now."""
    playable = np.zeros((NUM_CARD_TYPES, 1), bool)
    playable[list(PLAYABLE[colour][card_rank(top)])] = True
    return np.hstack((FIXED_SETS, playable))


def counting_features(pool: np.ndarray, n: int, top: int, colour: int) -> np.ndarray:
    """Card counting in closed form: ``n * U_t / |U|``, then ``1 - C(|U| - U_S, n) / C(|U|, n)`` per set."""
    size = int(pool.sum())
    expected = n * pool / size if size else np.zeros(NUM_CARD_TYPES)
    probs = [1 - math.comb(size - int(u), n) / math.comb(size, n) for u in pool @ feature_sets(top, colour)]
    return np.concatenate((expected, probs))


class TracedParticles(ParticleBelief):
    """A :class:`ParticleBelief` that sums ``1 / ESS`` over the events that lowered its ESS (module docstring).

    ``inverse_ess`` starts at ``1 / N``: the multinomial splits of the particles are N draws themselves. It reads the
    ESS after each event, so it replays the events through the hooks, not in the one compiled call.
    """

    _compiled_replay = False

    def reset(self, view: PublicView) -> None:
        self.inverse_ess = 1.0 / self.n_particles
        super().reset(view)

    def _apply(self, event: Any) -> None:
        super()._apply(event)
        if not self._public_only:
            ess = self.states.ess()
            if ess < self.n_particles * (1 - 1e-9):
                self.inverse_ess += 1.0 / ess


def se_tolerance(pf: TracedParticles, variance: np.ndarray) -> np.ndarray:
    """``Z`` standard errors of a particle estimate of a quantity with this posterior variance."""
    return Z * np.sqrt(np.maximum(variance, 0.0) * pf.inverse_ess) + 1e-9


class Replay:
    """A game from a scenario; after every move seat 0's view goes to each tracker (each view exactly once)."""

    def __init__(self, scn: dict[str, Any], *trackers: Any, seed: int = 0) -> None:
        self.game = Game.from_scenario(scn, np.random.default_rng(seed))
        self.trackers = trackers
        self.view = self.game.observe(0)
        for tracker in trackers:
            tracker.reset(self.view)

    def move(self, seat: str, action: int) -> PublicView:
        assert self.game.current == SEAT[seat], f"the scenario gives the move to the other seat, not {seat}"
        self.game.step(action)
        self.view = self.game.observe(0)
        for tracker in self.trackers:
            tracker.update(self.view)
        return self.view


def reachable(root: Any) -> list[Any]:
    """Every object reachable from ``root`` through references, without descending into modules, classes,
    functions or code (which reach the whole interpreter)."""
    skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType)
    seen: set[int] = set()
    stack, out = [root], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        out.append(obj)
        stack.extend(gc.get_referents(obj))
    return out


def check_invariants(tracker: Any, view: PublicView, rng: np.random.Generator | None) -> None:
    """What every belief must satisfy in any position, whatever happened before (see the test docstrings);
    with ``rng``, also a few sampled hands."""
    pool = unseen(view)
    n = view.opponent_hand_size
    features = tracker.features()
    assert features.dtype == np.float32 and features.shape == (BELIEF_FEATURES,)
    assert np.all(np.isfinite(features))
    expected = tracker.expected_counts()
    assert np.max(np.abs(features[:NUM_CARD_TYPES] - expected)) <= 1e-5
    assert abs(expected.sum() - n) <= 1e-9
    assert expected.min() >= 0.0 and np.all(expected <= pool + 1e-9)
    assert not expected[pool == 0].any(), "a type with no unseen copy cannot be in the opponent's hand"
    probs = features[NUM_CARD_TYPES:].astype(np.float64)
    assert probs.min() >= 0.0 and probs.max() <= 1.0
    # P(holds a card of S) is at most E[#S] (Markov) and at least E[#S] / (largest possible #S).
    sets = feature_sets(view.top, view.active_colour)
    mean, most = expected @ sets, np.minimum(n, pool @ sets)
    assert np.all(probs <= mean + 1e-5)
    assert np.all(probs >= np.where(most > 0, mean / np.maximum(most, 1), 0.0) - 1e-5)
    if rng is None:
        return
    hands = tracker.sample_hands(4, rng)
    assert hands.shape == (4, NUM_CARD_TYPES) and np.all(hands.sum(axis=1) == n)
    assert np.all((hands >= 0) & (hands <= pool))


#: The opponent to move, holding red:1 and green:7 over a pool that adds blue:5, red:1 and yellow:3 (the deck).
PLAY_SCN = scenario(["green:9", "yellow:9"], ["red:1", "green:7"], ["red:3"], ["blue:5", "red:1", "yellow:3"],
                    rest="discard", to_move="opponent")
