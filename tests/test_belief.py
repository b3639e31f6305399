"""Belief tracking of the opponent's hidden hand (:mod:`uno_env.belief`).

What is checked, one concern per section: trackers cannot see hidden state; card counting's closed form;
every particle-filter update case against posteriors derived by hand (in the comments) and against exact
enumeration; agreement with :class:`ExactBelief` on random small end games, with and without the
policy-aware models; recovery when every particle dies; systematic resampling and the ESS; invariants
under random play; the Gymnasium/SB3 integration; ``make_belief`` errors and seeding.

The hand computations count *physical* cards: the opponent's hand is a uniformly random subset of the
unseen cards (deck and opponent hand together, the "pool"), so each k-subset of the pool's physical cards
is one equally likely hand before any evidence. Scenarios mostly put every card they do not name into the
discard pile (``rest="discard"``), so the pool is exactly the opponent's hand plus the named deck.

Particle-filter tolerances are standard-error bounds: an estimate is a weighted mean over particles whose
(Rao-Blackwellized) values vary at most as much as under the posterior, and the asymptotic error variance of
sequential Monte Carlo is a sum of per-step terms (Chopin 2004), taken here as posterior variance / ESS of
each step that reweighted the particles plus 1/N for the sampling itself (:class:`TracedParticles`). With
``Z = 5`` standard errors a correct filter fails a comparison by chance with probability below 1e-6; on
small end games the observed errors stay below 0.6 of this bound. A deterministic opponent model breaks the
approximation (see its own test).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from uno_testlib import COLOUR_ORDER, DRAW, RANK_ORDER, ScriptedPolicy, act, capped, deck_names, scenario

from uno_env.belief import (
    BELIEF_FEATURES,
    FEATURE_NAMES,
    CountingBelief,
    ExactBelief,
    NoBelief,
    ParticleBelief,
    RandomModel,
    RuleModel,
    make_belief,
)
from uno_env.belief.lazy import Depleted, HandStates
from uno_env.belief.tracker import Decision, pool_of
from uno_env.cards import NUM_CARD_TYPES, PLAYABLE, card_id, card_rank
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.observation import BASE_SIZE
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import DRAW as DRAW_EVENT
from uno_env.view import PLAY, RESHUFFLE, PublicView

SEAT = {"agent": 0, "opponent": 1}
Z = 5.0  # standard errors allowed for a particle-filter estimate (module docstring)
WILDS = [card_id("wild"), card_id("wild_draw4")]


# ---------------------------------------------------------------------------------------------- helpers
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

    ``inverse_ess`` starts at ``1 / N``: the multinomial splits of the particles are N draws themselves.
    """

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


# ---------------------------------------------------------------------------------------------- 1. leakage
# Two worlds with the same public history: the agent draws blue:9, the opponent plays red:1, the agent plays
# green:1, the opponent (holding no green, no 1, no wild) draws, the agent plays green:skip, green:reverse and
# green:draw2, the opponent draws 2. The opponent's hands and the cards it draws differ; the pool (unseen
# multiset) is the same.
WORLD_A = scenario(["yellow:9", "green:1", "green:skip", "green:reverse", "green:draw2"],
                   ["red:1", "blue:5", "yellow:4"], ["red:3"],
                   ["blue:9", "blue:6", "yellow:2", "blue:7", "yellow:8"], rest="discard")
WORLD_B = scenario(["yellow:9", "green:1", "green:skip", "green:reverse", "green:draw2"],
                   ["red:1", "blue:6", "yellow:2"], ["red:3"],
                   ["blue:9", "blue:5", "yellow:8", "blue:7", "yellow:4"], rest="discard")
PUBLIC_SCRIPT = [("agent", DRAW), ("opponent", act("red:1")), ("agent", act("green:1")), ("opponent", DRAW),
                 ("agent", act("green:skip")), ("agent", act("green:reverse")), ("agent", act("green:draw2")),
                 ("opponent", DRAW)]


def _leak_trackers() -> list[Any]:
    return [CountingBelief(), ParticleBelief(500, np.random.default_rng(7)),
            ParticleBelief(500, np.random.default_rng(7), model=RandomModel()), ExactBelief(),
            ExactBelief(model=RandomModel())]


def test_trackers_see_only_the_public_view_so_hidden_differences_cannot_leak():
    """Two games with the same public history but different opponent hands and deck orders give identical
    views and identical beliefs (features, expected counts) at every step, and neither the views nor the
    trackers hold a reference to the game (nor any view: they keep only what the events said)."""
    a, b = Replay(WORLD_A, *_leak_trackers()), Replay(WORLD_B, *_leak_trackers())
    assert a.game.hands[1] != b.game.hands[1] and a.game.deck != b.game.deck
    assert a.view == b.view
    for seat, action in PUBLIC_SCRIPT:
        assert a.move(seat, action) == b.move(seat, action)
        for ta, tb in zip(a.trackers, b.trackers, strict=True):
            assert np.array_equal(ta.expected_counts(), tb.expected_counts())
            if hasattr(ta, "features"):
                assert np.array_equal(ta.features(), tb.features())
    assert a.game.hands[1] != b.game.hands[1], "the worlds still differ in what the agent cannot see"
    for obj in [a.view, *a.trackers]:
        assert not any(isinstance(x, Game | PublicView) and x is not obj for x in reachable(obj))


def test_env_observations_do_not_depend_on_hidden_state():
    """The same through UnoEnv (belief wired in by SeatObserver): the two worlds give identical observations
    and infos at every agent step, with counting and with particles; the env's views reach no Game."""
    for kwargs in ({"belief": "counting"}, {"belief": "particles", "n_particles": 256}):
        runs = []
        for world in (WORLD_A, WORLD_B):
            env = UnoEnv(opponent=ScriptedPolicy([a for s, a in PUBLIC_SCRIPT if s == "opponent"]), **kwargs)
            obs, info = env.reset(seed=3, options={"scenario": world})
            record = [(obs.tolist(), repr(info))]
            for seat, action in PUBLIC_SCRIPT:
                if seat == "agent":
                    obs, _, terminated, _, info = env.step(action)
                    assert not terminated
                    record.append((obs.tolist(), repr(info)))
            runs.append(record)
            assert not any(isinstance(x, Game) for x in reachable(env._view))
        assert runs[0] == runs[1]


# ---------------------------------------------------------------------------------------------- 2. counting
def test_feature_names_and_length():
    """60 channels: the expected count of each of the 54 types in RULES.md order, can_play per colour,
    holds_wild, can_play_top; the env's observation grows by exactly that many."""
    names = [f"{c}:{r}" for c in COLOUR_ORDER for r in RANK_ORDER[:13]] + ["wild", "wild_draw4"]
    assert list(FEATURE_NAMES) == ([f"expected_count[{n}]" for n in names]
                                   + [f"can_play[{c}]" for c in COLOUR_ORDER] + ["holds_wild", "can_play_top"])
    assert BELIEF_FEATURES == len(FEATURE_NAMES) == 60
    for belief in ("counting", "particles"):
        env = UnoEnv(belief=belief, n_particles=16)
        assert env.observation_space.shape == (294 + 60,) and BASE_SIZE == 294
        assert UnoEnv(belief=belief, dict_obs=True).observation_space["belief"].shape == (60,)
    assert UnoEnv().observation_space.shape == (294,)


def test_counting_closed_form_on_a_hand_checked_position():
    """Pool {red:1 x2, wild, blue:5, green:7, yellow:3} (|U| = 6), opponent holds n = 2, top blue:1.
    E[count] = 2 * U_t / 6; P(none of S) = C(6 - U_S, 2) / C(6, 2) = C(6 - U_S, 2) / 15:
    can_play[red]: U_S = 3 (red:1 x2, wild) -> 1 - 3/15 = 4/5; green, blue, yellow: U_S = 2 -> 1 - 6/15 = 3/5;
    holds_wild: U_S = 1 -> 1 - 10/15 = 1/3; can_play_top (blue, any 1, wilds): U_S = 4 -> 1 - 1/15 = 14/15.
    The same numbers reach the env's observation after the base channels."""
    scn = scenario(["green:9", "yellow:9"], ["red:1", "wild"], ["blue:1"],
                   ["red:1", "blue:5", "green:7", "yellow:3"], rest="discard")
    view = Game.from_scenario(scn, np.random.default_rng(0)).observe(0)
    assert np.array_equal(pool_of(view), counts(["red:1", "red:1", "wild", "blue:5", "green:7", "yellow:3"]))
    expected = np.concatenate((vector({"red:1": 2 / 3, "wild": 1 / 3, "blue:5": 1 / 3, "green:7": 1 / 3,
                                       "yellow:3": 1 / 3}), [4 / 5, 3 / 5, 3 / 5, 3 / 5, 1 / 3, 14 / 15]))
    tracker = CountingBelief()
    tracker.reset(view)
    assert np.allclose(tracker.features(), expected, atol=1e-6)
    assert np.allclose(tracker.expected_counts(), expected[:NUM_CARD_TYPES], atol=1e-12)
    obs, _ = UnoEnv(belief="counting").reset(seed=0, options={"scenario": scn})
    assert np.allclose(obs[BASE_SIZE:], expected, atol=1e-6)


# ---------------------------------------------------------------------------------------------- 3. update cases
@dataclasses.dataclass(frozen=True)
class Case:
    """A scenario, the moves after it, and the opponent's expected counts afterwards (derived by hand)."""

    id: str
    scenario: dict[str, Any]
    moves: tuple[tuple[str, int], ...]
    expected: dict[str, float]
    model: Callable[[], Any] | None = None
    impossible: tuple[tuple[str, int], ...] = ()  # (card, count) with posterior probability 0
    check: Callable[[np.ndarray], bool] | None = None  # a hard constraint every hypothesis satisfies


# Pool {red:1 x2, green:7, blue:5, yellow:3}; the opponent holds red:1 + green:7; top red:3. Of the C(5,2) = 10
# hands, 7 hold a red:1: {red:1, red:1} and 2 x {red:1, x} for each x of green:7, blue:5, yellow:3.
PLAY_SCN = scenario(["green:9", "yellow:9"], ["red:1", "green:7"], ["red:3"], ["blue:5", "red:1", "yellow:3"],
                    rest="discard", to_move="opponent")
SKIP_SCN = scenario(["red:skip", "red:reverse", "yellow:9"], ["red:1", "green:7"], ["red:3"],
                    ["blue:5", "red:1", "yellow:3"], rest="discard", to_move="opponent")
OPP_PLAYS = ("opponent", act("red:1"))
AFTER_PLAY = {"red:1": 1 / 7, "green:7": 2 / 7, "blue:5": 2 / 7, "yellow:3": 2 / 7}


def _keeps_two_old_cards(hands: np.ndarray) -> bool:
    """After the reshuffle case: the two cards held before the reshuffle came from the old pool."""
    return bool(np.all(hands[:, [card_id("blue:5"), card_id("yellow:6"), card_id("green:8")]].sum(axis=1) >= 2))


CASES = [
    # Playing red:1 leaves the other card: red:1 in 1 of the 7 hands, each other type in 2.
    Case("opponent_plays", PLAY_SCN, (OPP_PLAYS,), AFTER_PLAY, impossible=(("red:1", 2),)),
    # RandomModel: pi = 1 / (legal action ids). yellow:3 is playable on red:3 (rank), so the two {red:1, yellow:3}
    # hands play red:1 with probability 1/2, every other hand with 1: weights 1 + 2 + 2 + 2 * 1/2 = 6.
    Case("opponent_plays_random_model", PLAY_SCN, (OPP_PLAYS,),
         {"red:1": 1 / 6, "green:7": 2 / 6, "blue:5": 2 / 6, "yellow:3": 1 / 6}, model=RandomModel),
    # Then we draw blue:5 from the 3-card deck (pool minus its card): likelihood 1/3 unless it holds blue:5 (0):
    # red:1 : green:7 : yellow:3 = 1/7 : 2/7 : 2/7 -> 1/5, 2/5, 2/5 (counting would say 1/3 each).
    Case("own_draw_is_evidence", PLAY_SCN, (OPP_PLAYS, ("agent", DRAW)),
         {"red:1": 1 / 5, "green:7": 2 / 5, "yellow:3": 2 / 5}),
    # Then it draws on red:1: it held no red, no 1, no wild, so not red:1: green:7 and yellow:3 at 1/2 each; it
    # drew one of the 2 deck cards (red:1 and the other one): red:1 1/2, green:7 1/2 + 1/2 * 1/2 = 3/4, yellow:3 3/4.
    Case("voluntary_draw_after_play", PLAY_SCN, (OPP_PLAYS, ("agent", DRAW), ("opponent", DRAW)),
         {"red:1": 1 / 2, "green:7": 3 / 4, "yellow:3": 3 / 4}),
    # Pool {red:2, blue:5, green:7, yellow:3, yellow:4}, top red:9, it draws: its 2 cards were 2 of the 4
    # non-playable ones (each held with probability 1/2); the drawn card is one of the 3 others, uniformly:
    # red:2 1/3 (so the card it drew may well be playable), each other type 1/2 + 1/2 * 1/3 = 2/3.
    Case("voluntary_draw", scenario(["green:1", "yellow:1"], ["blue:5", "yellow:4"], ["red:9"],
                                    ["red:2", "green:7", "yellow:3"], rest="discard", to_move="opponent"),
         (("opponent", DRAW),),
         {"red:2": 1 / 3, "blue:5": 2 / 3, "green:7": 2 / 3, "yellow:3": 2 / 3, "yellow:4": 2 / 3}),
    # We draw one of the 2 red:1 first: hands holding both red:1 become impossible; by exchangeability the
    # posterior is counting on the new pool {red:1, blue:5, green:7, yellow:3}: 2/4 each.
    Case("own_draw_of_one_of_two_copies",
         scenario(["green:9", "yellow:9"], ["red:1", "blue:5"], ["red:3"], ["red:1", "green:7", "yellow:3"],
                  rest="discard"),
         (("agent", DRAW),), {"red:1": 1 / 2, "blue:5": 1 / 2, "green:7": 1 / 2, "yellow:3": 1 / 2},
         impossible=(("red:1", 2),)),
    # A forced draw says nothing about the hand: 1 card then 2 drawn = a uniform 3-subset of the 4-card pool,
    # 3/4 each. (Had it been read as "held nothing playable on red:draw2", red:5 would be 2/3.)
    Case("forced_draw_2", scenario(["red:draw2", "yellow:9"], ["red:5"], ["red:3"], ["red:6", "blue:1", "green:2"],
                                   rest="discard"),
         (("agent", act("red:draw2")), ("opponent", DRAW)),
         {"red:5": 3 / 4, "red:6": 3 / 4, "blue:1": 3 / 4, "green:2": 3 / 4}),
    # 1 card then 4 drawn = a uniform 5-subset of the 10-card pool: 1/2 each.
    Case("forced_draw_4",
         scenario(["wild_draw4", "yellow:9"], ["red:5"], ["red:3"],
                  ["red:6", "blue:1", "green:2", "green:4", "yellow:2", "red:7", "blue:8", "yellow:6", "blue:9"],
                  rest="discard"),
         (("agent", act("wild_draw4", "green")), ("opponent", DRAW)),
         {name: 1 / 2 for name in ("red:5", "red:6", "blue:1", "green:2", "green:4", "yellow:2", "red:7", "blue:8",
                                   "yellow:6", "blue:9")}),
    # Our skip and reverse take the opponent's turns: no opponent event, the belief after its play stays.
    Case("our_skip_and_reverse", SKIP_SCN, (OPP_PLAYS, ("agent", act("red:skip")), ("agent", act("red:reverse"))),
         AFTER_PLAY),
    # Pool {blue:5, yellow:6, green:8}: it holds 2, the deck 1. Our red:draw2 makes it draw 2 from a 1-card deck,
    # so the discard except the top (green:3, red:4) joins the deck first: it draws 2 of {x, green:3, red:4},
    # x the old card it did not hold. Old card: 2/3 + 1/3 * 2/3 = 8/9; green:3, red:4: 2/3 (counting: 4/5 each).
    Case("reshuffle", scenario(["red:draw2"], ["blue:5", "yellow:6"], ["green:3", "red:4"], ["green:8"], rest="agent"),
         (("agent", act("red:draw2")), ("opponent", DRAW)),
         {"blue:5": 8 / 9, "yellow:6": 8 / 9, "green:8": 8 / 9, "green:3": 2 / 3, "red:4": 2 / 3},
         check=_keeps_two_old_cards),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_update_case_matches_the_hand_computed_posterior(case):
    """Each update case of the particle filter (opponent plays, voluntary and forced draws, our skips, our
    draws, reshuffles) gives the posterior derived by hand in the comment of its case: ExactBelief to
    rounding, the particle filter (N = 4000) within its standard-error bound (count of t in [0, U_t], so
    its standard deviation is at most U_t / 2)."""
    pf = TracedParticles(4000, np.random.default_rng(0), model=case.model() if case.model else None)
    exact = ExactBelief(model=case.model() if case.model else None)
    replay = Replay(case.scenario, pf, exact)
    for seat, action in case.moves:
        view = replay.move(seat, action)
    expected = vector(case.expected)
    assert expected.sum() == pytest.approx(view.opponent_hand_size), "the hand computation adds up"
    assert np.allclose(exact.expected_counts(), expected, atol=1e-12)
    pool = unseen(view)
    assert np.all(np.abs(pf.expected_counts() - expected) <= se_tolerance(pf, (pool / 2.0) ** 2))
    for name, count in case.impossible:
        assert exact.marginals()[card_id(name), count] == 0.0 and pf.marginals()[card_id(name), count] == 0.0
    if case.check is not None:
        assert case.check(exact.hands) and case.check(pf.sample_hands(500, np.random.default_rng(1)))
    assert (pf.recoveries, pf.fallbacks) == (0, 0)


def test_our_skip_and_reverse_leave_the_belief_bit_for_bit():
    """A turn taken from the opponent by our Skip/Reverse is no opponent event: the views carry only our
    plays, we move again, and expected counts and marginals do not change at all; only can_play_top
    follows the new top card (ExactBelief's P(holds a red, a skip or a wild) for the PF's channel)."""
    pf, exact = TracedParticles(4000, np.random.default_rng(0)), ExactBelief()
    replay = Replay(SKIP_SCN, pf, exact)
    replay.move(*OPP_PLAYS)
    before = [(t.expected_counts(), t.marginals()) for t in (pf, exact)]
    for card in ("red:skip", "red:reverse"):
        view = replay.move("agent", act(card))
        assert view.events == [(PLAY, 0, card_id(card), 0)] and view.to_move
        for tracker, (counts_before, marginals_before) in zip((pf, exact), before, strict=True):
            assert np.array_equal(tracker.expected_counts(), counts_before)
            assert np.array_equal(tracker.marginals(), marginals_before)
        p_top = 1 - exact.prob_none(PLAYABLE[0][card_rank(card_id(card))])
        assert abs(pf.features()[-1] - p_top) <= se_tolerance(pf, p_top * (1 - p_top))


# ---------------------------------------------------------------------------------------------- 4. vs exact
def endgame_views(seed: int, opponent: Any) -> Iterator[tuple[PublicView, np.ndarray]]:
    """Seat 0's views (with the opponent's true hand) along a game from a random small end-game position:
    4 cards each, 10 in the deck, the rest in the discard pile. Seat 0 plays uniformly random legal moves,
    seat 1 the given policy. Stops when the game ends or the deck holds fewer than 4 cards (no reshuffle:
    that would add the whole discard pile to the pool and blow up the exact support)."""
    rng = np.random.default_rng(seed)
    names = deck_names()
    while True:
        order = [names[i] for i in rng.permutation(len(names))]
        if not order[18].startswith("wild"):
            break
    scn = scenario(order[:4], order[4:8], [order[18]], order[8:18], rest="discard",
                   to_move=("agent", "opponent")[seed % 2])
    game = Game.from_scenario(scn, np.random.default_rng(seed))
    opponent.reset(seed)
    yield game.observe(0), np.array(game.hands[1])
    while not game.done and len(game.deck) >= 4:
        if game.current == 0:
            game.step(int(rng.choice(game.legal_actions())))
        else:
            game.step(opponent.act(game.observe(1, consume_events=False)))
        yield game.observe(0), np.array(game.hands[1])


def exact_summary(exact: ExactBelief, view: PublicView) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts, marginals (54 x 5) and the 6 feature probabilities of the exact posterior, flattened,
    with their posterior variances (of the count, of each indicator)."""
    mean_counts = exact.expected_counts()
    var_counts = exact.marginals() @ np.arange(5.0) ** 2 - mean_counts**2
    marg = exact.marginals().ravel()
    probs = np.array([1 - exact.prob_none(np.flatnonzero(s)) for s in feature_sets(view.top, view.active_colour).T])
    values = np.concatenate((mean_counts, marg, probs))
    variances = np.concatenate((var_counts, marg * (1 - marg), probs * (1 - probs)))
    return values, variances


def particle_summary(pf: ParticleBelief) -> np.ndarray:
    """The particle filter's counterparts of :func:`exact_summary`'s values."""
    return np.concatenate((pf.expected_counts(), pf.marginals().ravel(), pf.features()[NUM_CARD_TYPES:]))


@pytest.mark.parametrize(("model", "seeds"), [(None, range(0, 8)), (RandomModel, range(8, 14))],
                         ids=["no_model", "random_model"])
def test_particle_filter_agrees_with_exact_enumeration(model, seeds):
    """On random small end games (the opponent plays RandomPolicy; both trackers use the same model, or none),
    the particle filter's expected counts, marginals and feature probabilities stay within Z standard errors
    of the exact posterior at every view (N = 4000; the probability features are float32, hence 1e-6). The
    exact posterior never rules out the opponent's true hand: the model explains what the policy did."""
    for seed in seeds:
        views = endgame_views(seed, RandomPolicy())
        first, _ = next(views)
        pf = TracedParticles(4000, np.random.default_rng(seed), model=model() if model else None)
        exact = ExactBelief(model=model() if model else None)
        pf.reset(first)
        exact.reset(first)
        for view, true_hand in views:
            pf.update(view)
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            values, variances = exact_summary(exact, view)
            assert np.all(np.abs(particle_summary(pf) - values) <= se_tolerance(pf, variances) + 1e-6), seed
        assert pf.fallbacks == 0


def test_particle_filter_with_the_deterministic_rule_model_is_unbiased():
    """With RuleModel (RulePolicy is deterministic, so pi is 0 or 1) most particles die at each opponent play
    and the survivors share ancestors, so the ESS understates the error. The standard error is therefore
    measured: the mean of R = 24 independent filters (N = 1000) must be within Z standard errors of that
    mean (t with 23 degrees of freedom, P(|t| > 5) ~ 5e-5) of the exact posterior at every view, and equal
    to it where the exact posterior is certain. The exact posterior never rules out the true hand (RuleModel mirrors
    RulePolicy)."""
    replicas = 24
    for seed in range(20, 23):
        views = list(endgame_views(seed, RulePolicy()))
        exact = ExactBelief(model=RuleModel())
        exact.reset(views[0][0])
        truth = []
        for view, true_hand in views[1:]:
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            truth.append(exact_summary(exact, view)[0])
        estimates = np.zeros((replicas, len(truth), len(truth[0])))
        for r in range(replicas):
            pf = ParticleBelief(1000, np.random.default_rng(1000 * seed + r), model=RuleModel())
            pf.reset(views[0][0])
            for step, (view, _) in enumerate(views[1:]):
                pf.update(view)
                estimates[r, step] = particle_summary(pf)
            assert pf.fallbacks == 0
        error = np.abs(estimates.mean(axis=0) - np.array(truth))
        assert np.all(error <= Z * estimates.std(axis=0, ddof=1) / math.sqrt(replicas) + 1e-6), seed


def test_opponent_models_mirror_the_builtin_policies():
    """At every decision of RandomPolicy / RulePolicy in random games, the model's likelihood of the chosen
    action given the true hand is 1 / (number of legal action ids) for RandomModel, and for RuleModel 1 for
    the chosen action and 0 for every other legal one."""
    decisions = 0
    for seed in range(12):
        for policy, model in ((RandomPolicy(), RandomModel()), (RulePolicy(), RuleModel())):
            rng = np.random.default_rng(seed)
            game = Game.deal(rng, seed % 2)
            policy.reset(seed)
            for _ in capped():
                if game.done:
                    break
                if game.current == 0:
                    game.step(int(rng.choice(game.legal_actions())))
                    continue
                view = game.observe(1, consume_events=False)
                action = policy.act(view)
                if not view.pending_draw and action != DRAW:
                    decision = Decision(view.top, view.active_colour, view.hand_size, view.opponent_hand_size,
                                        view.deck_size)
                    hand = np.array([view.hand])
                    likelihood = np.array([model.likelihood(hand, a, decision)[0] for a in view.legal_actions])
                    if isinstance(model, RandomModel):
                        assert np.allclose(likelihood, 1 / len(view.legal_actions))
                    else:
                        assert list(likelihood) == [float(a == action) for a in view.legal_actions]
                    decisions += 1
                game.step(action)
    assert decisions > 300


# ---------------------------------------------------------------------------------------------- 5. recovery
def test_tiny_unlazy_filters_deplete_and_recover_without_raising():
    """N = 1 without lazy hands: the particle dies all the time, and re-running the history with 1 or 4 fresh
    particles mostly fails too. The filter never raises, counts its fallbacks, and its belief keeps every
    invariant at every view."""
    fallbacks = 0
    for seed in range(2):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        policy = RandomPolicy()
        policy.reset(seed)
        pf = ParticleBelief(1, np.random.default_rng(seed), model=RandomModel(), lazy=False)
        pf.reset(game.observe(0))
        for _ in capped():
            if game.done:
                break
            if game.current == 0:
                game.step(int(rng.choice(game.legal_actions())))
            else:
                game.step(policy.act(game.observe(1, consume_events=False)))
            view = game.observe(0)
            pf.update(view)
            check_invariants(pf, view, rng)
        fallbacks += pf.fallbacks
    assert fallbacks > 0


# Pool {blue:5, yellow:4, green:2, green:6, red:7 x2}: it holds blue:5, yellow:4 and draws on red:3 (so it held
# none of the red:7s: at most one red:7 can be in its hand afterwards, the drawn card), we play green:3, it
# plays the green:2 it drew.
RECOVERY_SCN = scenario(["green:3", "yellow:9", "blue:9"], ["blue:5", "yellow:4"], ["red:3"],
                        ["green:2", "red:7", "red:7", "green:6"], rest="discard", to_move="opponent")


def test_a_successful_recovery_keeps_the_history_constraints():
    """When every particle dies but re-running the history with fresh particles works (a recovery, no
    fallback), the belief still honours what the whole history proved: it held no red:7 when it drew, so
    P(two red:7) = 0, a hard constraint that card counting (the fallback) would break."""
    checked = 0
    for seed in range(40):
        pf = ParticleBelief(1, np.random.default_rng(seed), lazy=False)
        replay = Replay(RECOVERY_SCN, pf)
        replay.move("opponent", DRAW)
        replay.move("agent", act("green:3"))
        replay.move("opponent", act("green:2"))
        if pf.recoveries and not pf.fallbacks:
            assert pf.marginals()[card_id("red:7"), 2] == 0.0
            assert np.all(pf.sample_hands(50, np.random.default_rng(0))[:, card_id("red:7")] <= 1)
            checked += 1
    assert checked >= 3
    counting = CountingBelief()
    counting.reset(replay.view)
    assert counting.marginals()[card_id("red:7"), 2] > 0


def _impossible_views() -> tuple[PublicView, list[PublicView]]:
    """The deal view, the real views up to a position where the opponent's hand is known to be
    {blue:5, yellow:4, red:7}, and a fabricated last view where it draws on red:8 although red:7 is playable.

    Real: we draw red:8, it draws red:7 (it held blue:5, yellow:4, none playable on red:3), we play red:8.
    Fabricated: the deck is empty, so the discard except the top is reshuffled in and it draws 1.
    """
    scn = scenario(["green:9", "yellow:9"], ["blue:5", "yellow:4"], ["red:3"], ["red:8", "red:7"], rest="discard")
    replay = Replay(scn)
    first = replay.view
    views = [replay.move("agent", DRAW), replay.move("opponent", DRAW), replay.move("agent", act("red:8"))]
    last = views[-1]
    assert last.deck_size == 0
    discard = [0] * NUM_CARD_TYPES
    discard[card_id("red:8")] = 1
    fake = dataclasses.replace(last, events=[(RESHUFFLE, -1, 0, None), (DRAW_EVENT, 1, 1, None)],
                               discard=discard, discard_size=1, deck_size=last.discard_size - 2,
                               opponent_hand_size=4, to_move=True, legal_actions=[DRAW])
    return first, [*views, fake]


def test_an_impossible_history_falls_back_without_raising():
    """Every hypothesis contradicts the last view (ExactBelief says so). The particle filter does not raise:
    re-running the history cannot help, so it falls back to counting at that position and applies the event
    there; no NaN, and the event's own hard constraint holds: it held nothing playable on red:8 before
    drawing 1, so every hand has at most one red card, 8 or wild."""
    first, views = _impossible_views()
    exact = ExactBelief()
    exact.reset(first)
    for view in views[:-1]:
        exact.update(view)
    assert exact.prob_none([card_id("red:7")]) == 0.0
    with pytest.raises(ValueError, match="impossible"):
        exact.update(views[-1])
    for lazy in (True, False):
        pf = ParticleBelief(200, np.random.default_rng(0), lazy=lazy)
        pf.reset(first)
        for view in views:
            pf.update(view)
        assert (pf.recoveries, pf.fallbacks) == (0, 1)
        check_invariants(pf, views[-1], np.random.default_rng(0))
        playable = list(PLAYABLE[0][card_rank(card_id("red:8"))])
        assert pf.expected_counts()[playable].sum() <= 1 + 1e-9
        assert np.all(pf.sample_hands(500, np.random.default_rng(1))[:, playable].sum(axis=1) <= 1)


@pytest.mark.parametrize("make", [lambda: ParticleBelief(64, np.random.default_rng(0)), ExactBelief],
                         ids=["particles", "exact"])
def test_out_of_sync_updates_raise(make):
    """A skipped view, or a view passed twice, raises the ValueError that says every view must be passed
    exactly once."""
    replay = Replay(PLAY_SCN)
    first = replay.view
    views = [replay.move(*OPP_PLAYS), replay.move("agent", DRAW)]
    skipping, twice = make(), make()
    skipping.reset(first)
    with pytest.raises(ValueError, match="out of sync.*exactly once"):
        skipping.update(views[1])
    twice.reset(first)
    twice.update(views[0])
    with pytest.raises(ValueError, match="out of sync"):
        twice.update(views[0])


# ---------------------------------------------------------------------------------------------- 6. resampling
class FixedUniform:
    """A stand-in generator whose ``random()`` returns a chosen u (systematic resampling draws one u)."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self) -> float:
        return self.u


def distinct_rows(cnt: list[int], w: list[float]) -> HandStates:
    """Rows that differ (row i holds one card of type i), with particle counts and weights."""
    rows = len(cnt)
    return HandStates(np.eye(NUM_CARD_TYPES)[:rows].copy(), np.zeros((rows, 1)), np.zeros(NUM_CARD_TYPES, np.intp),
                      np.array(cnt, np.int64), np.array(w, float))


def test_ess_formula():
    """ESS = (sum of particle weights)^2 / sum of squared particle weights: rows of (2 particles at 0.1,
    1 at 0.4) give 0.6^2 / (2 * 0.01 + 0.16) = 2; equal weights give the particle count."""
    assert distinct_rows([2, 1], [0.1, 0.4]).ess() == pytest.approx(2.0)
    assert distinct_rows([3, 5], [0.2, 0.2]).ess() == pytest.approx(8.0)
    pf = ParticleBelief(300, np.random.default_rng(0))
    pf.reset(Replay(PLAY_SCN).view)
    assert pf.ess == pytest.approx(300)


def test_systematic_resampling_counts_weights_and_unbiasedness():
    """Resampling to P particles keeps P particles of weight 1/P each (ESS = P); systematic resampling gives
    row i floor(P p_i) or ceil(P p_i) copies, and on average over u exactly P p_i (p_i its probability)."""
    cnt, w = [3, 1, 2, 4], [0.1, 0.5, 0.05, 0.2]
    mass = np.array(cnt) * np.array(w)
    target = 7 * mass / mass.sum()  # 7 * [0.3, 0.5, 0.1, 0.8] / 1.7
    grid = (np.arange(400) + 0.5) / 400  # midpoints: their mean is the integral over u to 1/400 per row
    totals = np.zeros(4)
    for u in grid:
        states = distinct_rows(cnt, w)
        states.resample(7, FixedUniform(u))
        copies = np.zeros(4)
        copies[states.R.argmax(axis=1)] = states.cnt
        assert states.particles == 7 and np.allclose(states.w, 1 / 7) and states.ess() == pytest.approx(7)
        assert np.all((copies == np.floor(target)) | (copies == np.ceil(target)))
        totals += copies
    assert np.allclose(totals / len(grid), target, atol=2 / len(grid))
    states = distinct_rows(cnt, w)
    states.resample(50, np.random.default_rng(0))
    assert states.particles == 50 and states.size <= 4


def test_reweighting_every_row_to_zero_raises_depleted():
    """The signal the filter recovers from: no row survives a zero likelihood."""
    with pytest.raises(Depleted):
        distinct_rows([2, 1], [0.5, 0.5]).reweight(np.zeros(2))


# ---------------------------------------------------------------------------------------------- 7. random play
@pytest.mark.parametrize(("kind", "opponent", "games"), [("counting", RandomPolicy, 100),
                                                         ("particles", RandomPolicy, 15),
                                                         ("particles", RulePolicy, 15)],
                         ids=["counting", "particles_random_model", "particles_rule_model"])
def test_invariants_under_random_play(kind, opponent, games):
    """At every view of random games (the particle filter with N = 64 and the opponent's own model, as the
    env builds it): finite float32 features, expected counts summing to the opponent's hand size, between 0
    and the unseen copies and 0 where none is unseen, probabilities in [0, 1] and consistent with the counts,
    sampled hands drawable from the pool; the filter's ESS never left below half of N after an update.
    Counting equals its closed form everywhere."""
    for seed in range(games):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        policy = opponent()
        policy.reset(seed)
        tracker = make_belief(kind, n_particles=64, rng=np.random.default_rng(seed), opponent_policy=policy)
        tracker.reset(game.observe(0))
        for _ in capped():
            if game.done or game.current == 0:
                view = game.observe(0)
                tracker.update(view)
                check_invariants(tracker, view, rng if view.deck_size % 8 == 0 else None)  # sampling is slow
                if kind == "counting":
                    closed = counting_features(unseen(view), view.opponent_hand_size, view.top, view.active_colour)
                    assert np.max(np.abs(tracker.features() - closed)) <= 1e-6
                else:
                    assert tracker.ess >= 0.5 * 64 - 1e-9
                if game.done:
                    break
                game.step(int(rng.choice(game.legal_actions())))
            else:
                game.step(policy.act(game.observe(1, consume_events=False)))


# ---------------------------------------------------------------------------------------------- 8. env
@pytest.mark.parametrize("kwargs", [{"belief": "counting"}, {"belief": "particles", "n_particles": 64}],
                         ids=["counting", "particles"])
def test_env_checkers_with_beliefs(kwargs):
    """Gymnasium's and SB3's env checkers accept the env with belief features (warnings are errors); the
    observation's last 60 entries are the tracker's features, and every observation lies in the space."""
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(UnoEnv(**kwargs), skip_render_check=True)
        sb3_check_env(UnoEnv(**kwargs), warn=True)
    env = UnoEnv(**kwargs)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(20):
        tracker = env._agent_seat.observer.tracker
        assert np.array_equal(obs[BASE_SIZE:], tracker.features()) and obs in env.observation_space
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if terminated:
            break


def test_maskable_ppo_learns_with_particles_and_its_checkpoint_refuses_counting(tmp_path):
    """MaskablePPO learns a few hundred steps on UnoEnv(belief="particles", n_particles=32). Its checkpoint
    refuses a counting env although both observations have 354 entries, naming both settings; it loads into a
    particles env, and as a PPOPolicy it declares belief="particles" and plays as the embedded opponent, which
    then gets particle features. (Checkpoints whose sizes differ: tests/test_evaluate.py.)"""
    import torch
    from sb3_contrib import MaskablePPO

    from agents.ppo import PPOPolicy, load_model, save_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two cores shared with the other tests
    try:
        model = MaskablePPO("MlpPolicy", UnoEnv(belief="particles", n_particles=32), n_steps=128, batch_size=64,
                            n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]}, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        path = save_model(model, tmp_path / "ppo.zip", {"belief": "particles", "n_particles": 32})
        counting = UnoEnv(belief="counting")
        assert counting.observation_space.shape == model.observation_space.shape
        with pytest.raises(ValueError) as err:
            load_model(path, env=counting)
        assert "trained with belief='particles'" in str(err.value) and "uses belief='counting'" in str(err.value)
        env = UnoEnv(belief="particles", n_particles=32)
        loaded = load_model(path, env=env)
        obs, info = env.reset(seed=0)
        action, _ = loaded.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert info["action_mask"][int(action)] == 1

        policy = PPOPolicy.load(path)
        assert policy.belief == "particles" and policy.observation_size == 294 + 60
        host = UnoEnv(opponent=policy, n_particles=32, first_player="opponent")
        _, info = host.reset(seed=2)
        rng = np.random.default_rng(2)
        plays = 0
        for _ in range(30):
            plays += sum(e.get("player") == "opponent" and e["kind"] == "play" for e in info["events"])
            _, _, terminated, _, info = host.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            if terminated:
                break
        assert plays > 0 and isinstance(host._opponent_seat.observer.tracker, ParticleBelief)
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------------------- 9. make_belief
@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "64", None])
def test_make_belief_rejects_bad_particle_counts(bad):
    """n_particles must be a positive int; the message names the parameter and the value."""
    with pytest.raises(ValueError) as err:
        make_belief("particles", n_particles=bad, rng=np.random.default_rng(0))
    assert "n_particles" in str(err.value) and repr(bad) in str(err.value)


def test_make_belief_kinds_models_and_unknown_kind():
    """Each kind builds its tracker; the opponent policy picks the model (built-in policies map to theirs, a
    model passes through, anything else means none); an unknown kind names itself and the known ones; a
    numpy int is a valid N; "none" has empty features and no expected counts."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError) as err:
        make_belief("oracle", rng=rng)
    assert "'oracle'" in str(err.value) and all(repr(k) in str(err.value) for k in ("none", "counting", "particles"))
    none = make_belief("none", rng=rng)
    assert isinstance(none, NoBelief) and none.features().shape == (0,)
    with pytest.raises(RuntimeError, match="counting"):
        none.expected_counts()
    assert isinstance(make_belief("counting", rng=rng), CountingBelief)
    pf = make_belief("particles", n_particles=np.int64(8), rng=rng)
    assert isinstance(pf, ParticleBelief) and pf.n_particles == 8 and pf.model is None
    model = RuleModel()
    assert isinstance(make_belief("particles", rng=rng, opponent_policy=RandomPolicy()).model, RandomModel)
    assert isinstance(make_belief("particles", rng=rng, opponent_policy=RulePolicy()).model, RuleModel)
    assert make_belief("particles", rng=rng, opponent_policy=model).model is model
    assert make_belief("particles", rng=rng, opponent_policy=ScriptedPolicy([])).model is None


def test_same_seed_same_features():
    """The particle filter's randomness comes only from its generator: the same seed gives the same features
    at every view of a game (and another seed, somewhere, different ones); the env with particles replays
    the same observations for the same seed."""
    def run(seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(5)
        game = Game.deal(rng, 0)
        policy = RandomPolicy()
        policy.reset(5)
        pf = ParticleBelief(64, np.random.default_rng(seed), model=RandomModel())
        pf.reset(game.observe(0))
        out = []
        for _ in capped():
            if game.done:
                break
            if game.current == 0:
                game.step(int(rng.choice(game.legal_actions())))
            else:
                game.step(policy.act(game.observe(1, consume_events=False)))
            pf.update(game.observe(0))
            out.append(pf.features())
        return out

    first, again, other = run(1), run(1), run(2)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))

    def trajectory() -> list:
        env = UnoEnv(belief="particles", n_particles=64)
        obs, info = env.reset(seed=11)
        rng = np.random.default_rng(0)
        out = [obs.tolist()]
        for _ in range(40):
            obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            out.append(obs.tolist())
            if terminated:
                break
        return out

    assert trajectory() == trajectory()


def test_env_particle_filter_does_not_model_its_opponent():
    """The env's tracker uses the plain likelihood whoever the opponent is: the policy-aware one measured worse in
    whole games (docs/BELIEF.md), and a learner's features must not change meaning with the opponent."""
    for opponent in ("random", "rule"):
        env = UnoEnv(opponent=opponent, belief="particles", n_particles=32)
        env.reset(seed=0)
        assert env._agent_seat.observer.tracker.model is None
