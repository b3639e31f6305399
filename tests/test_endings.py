"""Every way a game ends, on every path: reward, ``terminated``, ``info["winner"]`` and ``is_success``.

RULES.md: a player who empties their hand wins at once (whatever the last card: a number, an action card, a wild);
when a draw finds too few cards even after the discard pile is shuffled in, the game ends and fewer cards wins,
equal hands draw. The reward is +1 / -1 / 0 from the agent's side. Each ending is a hand-made scenario played on
the Python single env (a subclass of ``rule``, which has no compiled twin), the compiled single env (``rule``
itself: the default ``gym.make("Uno-v0")`` path), the native vector env (the scenario's position packed into a
sub-env) and the PettingZoo env (both seats played by the test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from uno_testlib import act, deck_names, minus, scenario

from uno_env import core
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.multiagent import UnoAECEnv
from uno_env.opponents import RulePolicy
from uno_env.vector import UnoVectorEnv


class PythonRule(RulePolicy):
    """``rule`` without a compiled twin: ``UnoEnv`` steps its game in Python."""


@dataclass(frozen=True)
class Ending:
    """A position, the agent's move, the opponent's reply (if the game goes on to it) and the agent's result."""

    id: str
    scenario: dict
    agent_move: int
    opponent_move: int | None
    winner: str  # "agent", "opponent" or "draw"


def _exhausted(agent_cards: int, top: str = "red:draw2", pending: int = 2) -> dict:
    """A pending draw of ``pending`` with one card in the deck and nothing under the top card: the draw is
    impossible, so the game ends on the hand sizes. The agent holds ``agent_cards`` cards, the opponent the rest."""
    rest = minus(deck_names(), [top, "blue:0"])
    return scenario(rest[:agent_cards], rest[agent_cards:], [top], ["blue:0"], pending_draw=pending)


def _opponent_cannot_draw(agent_cards: int) -> dict:
    """The agent plays a +2 with an empty deck and nothing under the top: the reshuffle brings one card, so the
    opponent's forced draw is impossible. The agent holds ``agent_cards`` cards before its +2 (the +2 included)."""
    rest = minus(deck_names(), ["red:9", "red:draw2"])
    return scenario(["red:draw2", *rest[:agent_cards - 1]], rest[agent_cards - 1:], ["red:9"])


ENDINGS = [
    Ending("number", scenario(["red:5"], ["blue:1", "blue:2"], ["red:9"]), act("red:5"), None, "agent"),
    Ending("skip", scenario(["red:skip"], ["blue:1", "blue:2"], ["red:9"]), act("red:skip"), None, "agent"),
    Ending("draw2", scenario(["red:draw2"], ["blue:1", "blue:2"], ["red:9"]), act("red:draw2"), None, "agent"),
    Ending("wild", scenario(["wild"], ["blue:1", "blue:2"], ["red:9"]), act("wild", "green"), None, "agent"),
    Ending("wild_draw4", scenario(["wild_draw4"], ["blue:1"], ["red:9"]), act("wild_draw4", "blue"), None,
           "agent"),
    # The opponent goes out on its reply: with a number, an action card, a wild.
    Ending("opponent number", scenario(["red:5", "blue:3"], ["red:7"], ["red:9"]), act("red:5"), act("red:7"),
           "opponent"),
    Ending("opponent reverse", scenario(["red:5", "blue:3"], ["red:reverse"], ["red:9"]), act("red:5"),
           act("red:reverse"), "opponent"),
    Ending("opponent wild", scenario(["red:5", "blue:3"], ["wild"], ["red:9"]), act("red:5"), act("wild", "red"),
           "opponent"),
    # The deck runs out on the agent's forced draw: fewer cards wins, more loses, equal draws (both hands full).
    Ending("deck out, agent fewer", _exhausted(50), 60, None, "agent"),
    Ending("deck out, agent more", _exhausted(56), 60, None, "opponent"),
    Ending("deck out, equal", _exhausted(53), 60, None, "draw"),
    Ending("deck out +4, agent fewer", _exhausted(40, "wild_draw4", 4) | {"active_colour": "red"}, 60, None,
           "agent"),
    # ... and on the opponent's forced draw after the agent's +2.
    Ending("opponent deck out, agent fewer", _opponent_cannot_draw(50), act("red:draw2"), 60, "agent"),
    Ending("opponent deck out, agent more", _opponent_cannot_draw(58), act("red:draw2"), 60, "opponent"),
    Ending("opponent deck out, equal", _opponent_cannot_draw(54), act("red:draw2"), 60, "draw"),
]
REWARD = {"agent": 1.0, "opponent": -1.0, "draw": 0.0}


def test_the_endings_are_what_they_say():
    """The scenarios themselves: every hand is non-empty at the end of a deck-out game, and the move sequence ends
    the game on the Python engine with the intended winner (so a path that agrees is right, not just consistent)."""
    for ending in ENDINGS:
        game = Game.from_scenario(ending.scenario, np.random.default_rng(0))
        game.step(ending.agent_move)
        if ending.opponent_move is not None:
            assert game.outcome is None and game.current == 1, ending.id
            game.step(ending.opponent_move)
        assert game.done, ending.id
        assert game.outcome == {"agent": 0, "opponent": 1, "draw": -1}[ending.winner], ending.id
        if ending.id.startswith(("deck out", "opponent deck out")):
            assert min(game.hand_sizes) > 0, ending.id


def _check(ending: Ending, reward: float, terminated: bool, info: dict) -> None:
    assert terminated, ending.id
    assert reward == REWARD[ending.winner], ending.id
    assert info["winner"] == ending.winner, ending.id
    assert info["is_success"] is (ending.winner == "agent"), ending.id


@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("ending", ENDINGS, ids=[e.id for e in ENDINGS])
def test_single_env_endings(path, ending):
    env = UnoEnv(opponent="rule" if path == "compiled" else PythonRule())
    assert (env._twin is not None) == (path == "compiled"), "the test must run the path it names"
    _, info = env.reset(seed=1, options={"scenario": ending.scenario})
    assert "winner" not in info and info["action_mask"][ending.agent_move]
    _, reward, terminated, truncated, info = env.step(ending.agent_move)
    assert not truncated
    _check(ending, reward, terminated, info)
    # a finished game stays finished and pays nothing more
    _, again, terminated, _, info = env.step(ending.agent_move)
    assert again == 0.0 and terminated and info["winner"] == ending.winner


def test_vector_env_endings():
    """Each sub-env of one vector env gets one ending's position (packed into its state, as the kernel holds a
    game); one step ends them all, each with its own reward and success flag."""
    env = UnoVectorEnv(num_envs=len(ENDINGS), opponent="rule")
    env.reset(seed=0)
    for i, ending in enumerate(ENDINGS):
        game = Game.from_scenario(ending.scenario, np.random.default_rng(0))
        core.pack_into(env._states[i], game.hands, game.deck, game.discard, game.active_colour, game.current,
                       game.pending_draw)
        env._masks[i] = 0
        env._masks[i, game.legal_actions()] = 1
    actions = np.array([ending.agent_move for ending in ENDINGS])
    _, rewards, terminated, truncated, info = env.step(actions)
    assert terminated.all() and not truncated.any()
    assert rewards.tolist() == [REWARD[ending.winner] for ending in ENDINGS]
    assert info["is_success"].tolist() == [ending.winner == "agent" for ending in ENDINGS]
    assert info["_is_success"].all()


@pytest.mark.parametrize("ending", ENDINGS, ids=[e.id for e in ENDINGS])
def test_pettingzoo_endings(ending):
    env = UnoAECEnv()
    env.reset(seed=3, options={"scenario": ending.scenario})
    assert env.agent_selection == "player_0"
    env.step(ending.agent_move)
    if ending.opponent_move is not None:
        assert env.agent_selection == "player_1" and not any(env.terminations.values())
        env.step(ending.opponent_move)
    assert all(env.terminations.values()) and not any(env.truncations.values())
    result = {"agent": ("player_0", "player_1"), "opponent": ("player_1", "player_0")}.get(ending.winner)
    for agent in ("player_0", "player_1"):
        info = env.infos[agent]
        expected = 0.0 if result is None else (1.0 if agent == result[0] else -1.0)
        assert env._cumulative_rewards[agent] == expected, (ending.id, agent)
        # each seat sees the result from its own side
        side = "draw" if result is None else ("agent" if agent == result[0] else "opponent")
        assert info["winner"] == side and info["is_success"] is (side == "agent"), (ending.id, agent)
