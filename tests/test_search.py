"""The search player (agents/search.py): legal moves only, its budget, no hidden state, the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from uno_testlib import act, capped, scenario

from agents.search import OracleSearchPolicy, SearchPolicy, play_oracle_game
from uno_env import UnoEnv
from uno_env.core import RANDOM_POLICY, RULE_POLICY
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import make_policy, policy_names
from uno_env.view import PublicView


class Recorder:
    """Wraps a search player: checks each answer is legal, counts simulations, forwards the start hook."""

    def __init__(self, player: SearchPolicy) -> None:
        self.player = player
        self.simulations: list[int] = []
        self.started = 0
        self.acted_before_start = False

    def reset(self, seed: int | None = None) -> None:
        self.player.reset(seed)

    def observe_start(self, view: PublicView) -> None:
        self.started += 1
        self.player.observe_start(view)

    def act(self, view: PublicView) -> int:
        self.acted_before_start |= self.started == 0
        self.player.last_simulations = 0
        action = self.player.act(view)
        assert action in view.legal_actions
        if len(view.legal_actions) > 1:
            self.simulations.append(self.player.last_simulations)
        return action


@pytest.mark.parametrize(("belief", "rollout"), [("counting", "random"), ("particles", "rule"), ("counting", "rule")])
def test_plays_only_legal_moves_and_spends_exactly_its_simulations(belief, rollout):
    for seed, opponent in ((1, RandomPolicy()), (2, RulePolicy())):
        for first in (0, 1):
            player = Recorder(SearchPolicy(simulations=12, belief=belief, n_particles=64, rollout=rollout))
            result = play_game((opponent, player), seed, first_player=first)  # raises on an illegal move
            assert result.decisions < 5000  # the game ended by the rules, not at play_game's cap (a draw)
            assert player.started == 1 and not player.acted_before_start
            assert player.simulations and set(player.simulations) == {12}


def test_embedded_opponent_in_the_env_gets_the_start_hook_and_plays_legally():
    player = Recorder(SearchPolicy(simulations=8))
    env = UnoEnv(opponent=player, first_player="opponent", illegal_action="raise")
    for seed in range(3):
        _, info = env.reset(seed=seed)
        terminated = False
        for _ in capped():
            if terminated:
                break
            action = int(np.flatnonzero(info["action_mask"])[0])
            _, _, terminated, _, info = env.step(action)
        assert player.started == seed + 1
    assert not player.acted_before_start and player.simulations


class FakeClock:
    """Advances one millisecond each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += 0.001
        return self.now


def _choice_position() -> tuple[PublicView, PublicView]:
    """The agent's start view and first decision view, with four legal actions."""
    game = Game.from_scenario(scenario(["red:5", "blue:5", "green:7", "wild"], ["yellow:3", "yellow:4"],
                                       ["green:5"]), np.random.default_rng(0))
    return game.observe(0, consume_events=False), game.observe(0)


@pytest.mark.parametrize(("simulations", "time_ms", "expected"), [(None, 10.0, 10), (50, 10.0, 10), (4, 10.0, 4)])
def test_time_budget_stops_the_search(simulations, time_ms, expected):
    clock = FakeClock()
    player = SearchPolicy(simulations=simulations, time_ms=time_ms, clock=clock)
    player.reset(0)
    start, view = _choice_position()
    player.observe_start(start)
    player.act(view)
    # One read sets the deadline; then the loop reads once per simulation after the first.
    assert player.last_simulations == expected


def test_same_seed_same_decisions():
    def moves(seed: int) -> list[int]:
        player = SearchPolicy(simulations=16, rollout="rule")
        chosen: list[int] = []

        class Spy:
            def reset(self, s: int | None = None) -> None:
                player.reset(s)

            def observe_start(self, view: PublicView) -> None:
                player.observe_start(view)

            def act(self, view: PublicView) -> int:
                chosen.append(player.act(view))
                return chosen[-1]

        play_game((Spy(), RandomPolicy()), seed)
        return chosen

    assert moves(5) == moves(5)


def _one_card_race(opponent_card: str) -> Game:
    """The agent must pick red:5 or blue:5 on green:5; the opponent holds one card, so only one choice survives."""
    return Game.from_scenario(scenario(["red:5", "blue:5", "yellow:9"], [opponent_card], ["green:5"]),
                              np.random.default_rng(0))


def test_decisions_depend_only_on_the_public_view_but_the_oracle_sees_the_hand():
    decisions = {}
    for card in ("red:3", "blue:3"):
        game = _one_card_race(card)
        player = SearchPolicy(simulations=64)
        player.reset(11)
        player.observe_start(game.observe(0, consume_events=False))
        decisions[card] = player.act(game.observe(0))
        oracle = OracleSearchPolicy(lambda game=game: game.hands[1], simulations=64)
        oracle.reset(11)
        oracle.observe_start(game.observe(0, consume_events=False))
        decisions["oracle " + card] = oracle.act(game.observe(0))
    # The two positions look the same from the agent's seat, so the belief player must play the same move.
    assert decisions["red:3"] == decisions["blue:3"]
    # Knowing the hand, the oracle plays the colour the opponent cannot follow.
    assert decisions["oracle red:3"] == act("blue:5")
    assert decisions["oracle blue:3"] == act("red:5")


def test_works_without_the_start_hook():
    player = SearchPolicy(simulations=8)
    player.reset(3)
    game = Game.deal(np.random.default_rng(3), first_player=1)
    opponent = RulePolicy()
    for _ in capped():
        if game.done:
            break
        view = game.observe(game.current)
        game.step(player.act(view) if game.current == 0 else opponent.act(view))


def test_play_oracle_game_reads_the_other_seats_hand():
    # Determinizations must match the opponent's hand size, so reading the wrong seat fails within a game.
    for seat in (0, 1):
        result, oracle = play_oracle_game(RulePolicy(), seed=4, oracle_seat=seat, first_player=1, simulations=8)
        assert result.decisions < 5000 and oracle.searches > 0  # a real end, with searched decisions


def test_hands_of_the_wrong_size_are_rejected():
    game = _one_card_race("red:3")
    oracle = OracleSearchPolicy(lambda: game.hands[0], simulations=8)  # its own hand: 3 cards, not 1
    oracle.reset(0)
    with pytest.raises(ValueError, match="hand"):
        oracle.act(game.observe(0))


def test_registered_as_search_and_the_oracle_is_not_an_opponent():
    assert isinstance(make_policy("search"), SearchPolicy)
    assert not any("oracle" in name for name in policy_names())


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"simulations": None, "time_ms": None}, "budget"), ({"simulations": 0}, "simulations"),
    ({"time_ms": 0}, "time_ms"), ({"belief": "oracle"}, "belief"),
    ({"rollout": RulePolicy()}, "rollout must be"), ({"rollout": "search"}, "rollout must be"),
    ({"opponent_rollout": RandomPolicy()}, "opponent_rollout"), ({"opponent_rollout": "self"}, "opponent_rollout"),
])
def test_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SearchPolicy(**kwargs)


def _mean_root_value(rollout: str, opponent_rollout: str) -> float:
    player = SearchPolicy(simulations=200, belief="counting", rollout=rollout, opponent_rollout=opponent_rollout,
                          keep_default_z=None)
    player.reset(0)
    start, view = _choice_position()
    player.observe_start(start)
    player.act(view)
    return sum(total for _, total in player.last_root.values()) / 200


def test_each_seat_rolls_out_with_its_own_policy():
    # The seat that plays rule against random wins most rollouts, so the searching seat's values show which of the
    # two policies played its seat.
    assert _mean_root_value("rule", "random") > _mean_root_value("random", "rule") + 0.15


def test_built_in_rollouts_per_seat_run_compiled():
    assert SearchPolicy(rollout="random", opponent_rollout="rule")._compiled_rollout == (RANDOM_POLICY, RULE_POLICY)
    assert SearchPolicy(rollout="rule", opponent_rollout="random")._compiled_rollout == (RULE_POLICY, RANDOM_POLICY)
    assert SearchPolicy(rollout="random")._compiled_rollout == (RANDOM_POLICY, RANDOM_POLICY)
