"""The control variates' lookahead: the replay reaches the state where the game next drew, and plays only the seats
it can."""

from __future__ import annotations

import numpy as np
import pytest
from uno_testlib import scenario

from train.evaluation.control_variates import replay, state_of
from train.evaluation.lookahead import NETWORK, STOP, next_chance_rows, seat_players
from train.policies import resolve_policy
from uno_env.core import COMPILED_PLAYERS
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import make_policy
from uno_env.seat import deal_game
from uno_env.view import DRAW, PLAY


def _draws(events: list[tuple]) -> list[bool]:
    """For each event of :func:`replay` (a play, or one card of a draw), whether it is a card off the deck."""
    out: list[bool] = []
    for kind, _seat, _value, extra in events:
        if kind == PLAY:
            out.append(False)
        elif kind == DRAW:
            out.extend([True] * len(extra))
    return out


@pytest.mark.parametrize("agent", ["rule", "search-q-none", "search-q-afterstate"])
def test_the_replay_reaches_the_state_where_the_game_drew_next(agent: str):
    # Both seats replayed: from the state after any move or card, the replay must play exactly the moves the game
    # played, up to the state before the next card off the deck (or the end). A compiled actor that chose otherwise
    # than the network, or a replay that stopped early or drew, fails here.
    policies = (resolve_policy(agent), RulePolicy())
    players = seat_players(policies)
    assert (players.codes != STOP).all()
    checked = 0
    for seed in range(4):
        dealt: list[Game] = []
        result = play_game(policies, seed, seed % 2, on_deal=dealt.append)
        chance = replay(deal_game(seed, seed % 2), dealt[0].events)
        draws = _draws(dealt[0].events)
        assert len(draws) == len(chance.actual)
        trajectory = chance.states[chance.actual]
        running = np.isnan(chance.fixed[chance.actual])
        rows, ended = next_chance_rows(trajectory[running], players)
        for row, end, event in zip(rows, ended, np.flatnonzero(running), strict=True):
            later = [j for j in range(event + 1, len(draws)) if draws[j]]
            if later:
                assert np.isnan(end)
                assert row.tolist() == trajectory[later[0] - 1].tolist()
            else:
                assert end == float(result.winner == 0)
            checked += 1
    assert checked > 100


def test_the_replay_stops_at_the_choices_of_a_seat_it_cannot_play():
    players = seat_players((RulePolicy(), RandomPolicy()))
    assert players.codes.tolist() == [COMPILED_PLAYERS.index("rule"), STOP]
    # Seat 1 (random) to choose among three plays: nothing is replayed.
    choosing = state_of(Game.from_scenario(scenario(["red:1", "blue:2"], ["red:4", "red:5", "green:7"], ["red:9"],
                                                    ["green:1"], to_move="opponent"), np.random.default_rng(0)))
    rows, ended = next_chance_rows(choosing[None], players)
    assert rows[0].tolist() == choosing.tolist() and np.isnan(ended[0])
    # Seat 0 (rule) to move: its one play is replayed, and the replay stops at seat 1's choice after it.
    game = Game.from_scenario(scenario(["red:1", "blue:2"], ["red:4", "red:5", "green:7"], ["red:9"], ["green:1"]),
                              np.random.default_rng(0))
    row = state_of(game)
    game.step(game.legal_actions()[0])  # red:1, the only card that fits
    rows, ended = next_chance_rows(row[None], players)
    assert rows[0].tolist() == state_of(game).tolist() and np.isnan(ended[0])


def test_a_winning_play_ends_the_replay_with_the_score():
    players = seat_players((RulePolicy(), RulePolicy()))
    row = state_of(Game.from_scenario(scenario(["red:1"], ["blue:4", "green:5"], ["red:9"], ["green:1"]),
                                      np.random.default_rng(0)))
    _, ended = next_chance_rows(row[None], players)
    assert ended.tolist() == [1.0]  # seat 0 plays its last card


def test_which_seats_are_replayed():
    network = resolve_policy("search-q-none")
    players = seat_players((network, make_policy("noisy-rule")))
    assert players.codes.tolist() == [NETWORK, STOP]  # noisy-rule draws random numbers
    swapped = players.swapped()  # the other game of a deal pair
    assert swapped.codes.tolist() == [STOP, NETWORK] and swapped.params == (None, players.params[0])
    sampling = resolve_policy("search-q-none", deterministic=False)
    assert seat_players((sampling, make_policy("highest-number"))).codes.tolist() == [
        STOP, COMPILED_PLAYERS.index("highest-number")]
    assert not seat_players((RandomPolicy(), RandomPolicy())).replays
