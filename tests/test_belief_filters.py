"""Card counting and the particle filter (uno_env/belief/filters.py), and make_belief (uno_env/belief/__init__.py):
the closed form, every update case against posteriors derived by hand, recovery when every particle dies, seeding.

The hand computations count *physical* cards: the opponent's hand is a uniformly random subset of the
unseen cards (deck and opponent hand together, the "pool"), so each k-subset of the pool's physical cards
is one equally likely hand before any evidence. Scenarios mostly put every card they do not name into the
discard pile (``rest="discard"``), so the pool is exactly the opponent's hand plus the named deck.
Tolerances of particle estimates: :mod:`belief_testlib`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from belief_testlib import PLAY_SCN, Replay, TracedParticles, Z, check_invariants, counts, se_tolerance, unseen, vector
from uno_testlib import COLOUR_ORDER, DRAW, RANK_ORDER, ScriptedPolicy, act, capped, scenario

from uno_env.belief import (
    BELIEF_FEATURES,
    FEATURE_NAMES,
    CountingBelief,
    ExactBelief,
    NoBelief,
    ParticleBelief,
    RandomModel,
    RuleModel,
    TrajectoryBelief,
    make_belief,
)
from uno_env.belief.tracker import pool_of
from uno_env.cards import NUM_CARD_TYPES, PLAYABLE, card_id, card_rank
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.observation import BASE_SIZE
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import DRAW as DRAW_EVENT
from uno_env.view import PLAY, RESHUFFLE, PublicView


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
    unseen_cards = counts(["red:1", "red:1", "wild", "blue:5", "green:7", "yellow:3"])
    assert np.array_equal(pool_of(np.array(view.hand), np.array(view.discard)), unseen_cards)
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
    rounding, the lazy particle filter (N = 4000, plain-likelihood cases) within its standard-error bound
    (count of t in [0, U_t], so its standard deviation is at most U_t / 2)."""
    exact = ExactBelief(model=case.model() if case.model else None)
    trackers = [exact] if case.model else [TracedParticles(4000, np.random.default_rng(0)), exact]
    replay = Replay(case.scenario, *trackers)
    for seat, action in case.moves:
        view = replay.move(seat, action)
    expected = vector(case.expected)
    assert expected.sum() == pytest.approx(view.opponent_hand_size), "the hand computation adds up"
    assert np.allclose(exact.expected_counts(), expected, atol=1e-12)
    for name, count in case.impossible:
        assert exact.marginals()[card_id(name), count] == 0.0
    if case.check is not None:
        assert case.check(exact.hands)
    if case.model:
        return
    pf = trackers[0]
    pool = unseen(view)
    assert np.all(np.abs(pf.expected_counts() - expected) <= se_tolerance(pf, (pool / 2.0) ** 2))
    for name, count in case.impossible:
        assert pf.marginals()[card_id(name), count] == 0.0
    if case.check is not None:
        assert case.check(pf.sample_hands(500, np.random.default_rng(1)))
    assert (pf.recoveries, pf.fallbacks) == (0, 0)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_update_case_of_the_trajectory_filter(case):
    """The same cases for the trajectory filter (the policy-aware one, with the case's model or none): the
    mean of 24 independent filters (N = 500) is within Z standard errors of that mean (t, 23 degrees of
    freedom) of the hand-computed expected counts, impossible counts get no particle, hard constraints hold
    in every particle, and no event needs a recovery."""
    replicas = 24
    estimates = np.zeros((replicas, NUM_CARD_TYPES))
    for r in range(replicas):
        pf = TrajectoryBelief(500, np.random.default_rng(r), model=case.model() if case.model else None)
        replay = Replay(case.scenario, pf)
        for seat, action in case.moves:
            replay.move(seat, action)
        estimates[r] = pf.expected_counts()
        for name, count in case.impossible:
            assert pf.marginals()[card_id(name), count] == 0.0
        if case.check is not None:
            assert case.check(pf.hands()[0])
        assert (pf.recoveries, pf.fallbacks) == (0, 0)
    error = np.abs(estimates.mean(axis=0) - vector(case.expected))
    assert np.all(error <= Z * estimates.std(axis=0, ddof=1) / np.sqrt(replicas) + 1e-9)


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

# ---------------------------------------------------------------------------------------------- 5. recovery
def seat0_views(game: Game, policy: Any, rng: np.random.Generator) -> Iterator[PublicView]:
    """Seat 0 plays at random (from ``rng``) and seat 1 with ``policy`` to the end; seat 0's view after each move."""
    for _ in capped():
        if game.done:
            return
        if game.current == 0:
            game.step(int(rng.choice(game.legal_actions())))
        else:
            game.step(policy.act(game.observe(1, consume_events=False)))
        yield game.observe(0)


def follow_game(pf: Any, game: Game, policy: Any, rng: np.random.Generator) -> None:
    """:func:`seat0_views` fed to ``pf``, which keeps every invariant at each view."""
    pf.reset(game.observe(0))
    for view in seat0_views(game, policy, rng):
        pf.update(view)
        check_invariants(pf, view, rng)


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
        pf = ParticleBelief(1, np.random.default_rng(seed), lazy=False)
        follow_game(pf, game, policy, rng)
        fallbacks += pf.fallbacks
    assert fallbacks > 0


def test_tiny_trajectory_filters_rescue_recover_and_fall_back_without_raising():
    """N = 2 trajectory particles with the deterministic rule model over whole games: events no particle
    explains happen all the time; the filter rescues (more moves, then retries), replays or falls back, never
    raises, and its belief keeps every invariant (finite, consistent) at every view."""
    repairs = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        policy = RulePolicy()
        pf = TrajectoryBelief(2, np.random.default_rng(seed), model=RuleModel(), moves=2, retries=1)
        follow_game(pf, game, policy, rng)
        repairs += pf.stats()["rescues"] + pf.recoveries + pf.fallbacks
    assert repairs > 0


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
    for pf in (ParticleBelief(200, np.random.default_rng(0)), ParticleBelief(200, np.random.default_rng(0), lazy=False),
               TrajectoryBelief(200, np.random.default_rng(0))):
        pf.reset(first)
        for view in views:
            pf.update(view)
        assert (pf.recoveries, pf.fallbacks) == (0, 1)
        check_invariants(pf, views[-1], np.random.default_rng(0))
        playable = list(PLAYABLE[0][card_rank(card_id("red:8"))])
        assert pf.expected_counts()[playable].sum() <= 1 + 1e-9
        assert np.all(pf.sample_hands(500, np.random.default_rng(1))[:, playable].sum(axis=1) <= 1)


@pytest.mark.parametrize("make", [lambda: ParticleBelief(64, np.random.default_rng(0)), ExactBelief,
                                  lambda: TrajectoryBelief(64, np.random.default_rng(0), model=RuleModel())],
                         ids=["particles", "exact", "trajectory"])
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
    assert type(pf) is ParticleBelief and pf.n_particles == 8
    model = RuleModel()
    for policy, kind in ((RandomPolicy(), RandomModel), (RulePolicy(), RuleModel)):
        aware = make_belief("particles", n_particles=8, rng=rng, opponent_policy=policy)
        assert isinstance(aware, TrajectoryBelief) and isinstance(aware.model, kind) and aware.n_particles == 8
    assert make_belief("particles", rng=rng, opponent_policy=model).model is model
    assert type(make_belief("particles", rng=rng, opponent_policy=ScriptedPolicy([]))) is ParticleBelief


def particle_state(pf: ParticleBelief) -> list[Any]:
    """Everything a lazy filter's later answers and draws depend on: live rows, counts, weights, domains, stream,
    public state, history length and repair counts."""
    states = pf.states
    S, D = int(states.meta[0]), int(states.meta[1])
    return [states.rows[:S, :NUM_CARD_TYPES + D].tolist(), states.cnt.tolist(), states.w.tolist(),
            states.dom.tolist(), int(states.stream[0]), pf.pool.tolist(), pf.my_hand.tolist(), pf.discard.tolist(),
            (pf.top, pf.colour, pf.pending, pf.opp_size, pf.deck_size, pf.my_size), len(pf._history),
            pf.recoveries, pf.fallbacks]


@pytest.mark.parametrize("n", [1000, 3])
def test_compiled_replay_is_the_event_by_event_replay_bit_for_bit(n):
    """A view's events replayed in one compiled call (with the features of the position in the same call, and
    recoveries re-run in one call) leave exactly the particles, stream, public state and features that the
    tracker's hooks leave event by event, over whole games with reshuffles, recoveries and (N = 3) fallbacks."""
    repairs = reshuffles = views = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        policy = RandomPolicy()
        policy.reset(seed)
        fast, slow = ParticleBelief(n, np.random.default_rng(seed)), ParticleBelief(n, np.random.default_rng(seed))
        slow._compiled_replay = False
        for pf in (fast, slow):
            pf.reset(game.observe(0))
        for view in seat0_views(game, policy, rng):
            ask = views % 5 != 0  # now and then a caller that does not ask for the features
            for pf in (fast, slow):
                pf.update(view)
            assert particle_state(fast) == particle_state(slow)
            if ask:
                assert np.array_equal(fast.features(), slow.features())
            reshuffles += any(event[0] == RESHUFFLE for event in view.events)
            views += 1
        repairs += fast.recoveries + fast.fallbacks
    assert reshuffles > 0 and (repairs > 0 or n > 3)


@pytest.mark.parametrize("make", [lambda seed: ParticleBelief(64, np.random.default_rng(seed)),
                                  lambda seed: TrajectoryBelief(64, np.random.default_rng(seed), model=RandomModel())],
                         ids=["lazy", "trajectory"])
def test_same_seed_same_features(make):
    """The particle filter's randomness comes only from its generator: the same seed gives the same features
    at every view of a game (and another seed, somewhere, different ones); the env with particles replays
    the same observations for the same seed."""
    def run(seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(5)
        game = Game.deal(rng, 0)
        policy = RandomPolicy()
        policy.reset(5)
        pf = make(seed)
        pf.reset(game.observe(0))
        out = []
        for view in seat0_views(game, policy, rng):
            pf.update(view)
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
