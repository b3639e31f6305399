"""What every belief tracker shares (uno_env/belief/tracker.py): it sees only public views, must see each
once, and keeps its invariants under random play.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from belief_testlib import Replay, check_invariants, counting_features, reachable, unseen
from uno_testlib import DRAW, ScriptedPolicy, act, capped, scenario

from uno_env.belief import (
    CountingBelief,
    ExactBelief,
    ParticleBelief,
    RandomModel,
    TrajectoryBelief,
    make_belief,
)
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import PublicView

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
            TrajectoryBelief(500, np.random.default_rng(7), model=RandomModel()), ExactBelief(),
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
            assert not any(isinstance(x, Game) for x in reachable(env._agent_view()))
        assert runs[0] == runs[1]

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
