"""``search-guided`` (agents/guided.py): the named player is the guided search that docs/results.md measured."""

from __future__ import annotations

import numpy as np
import pytest

from agents.compiled_actor import actor_params, value_params
from agents.guided import guided_search
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from uno_env import core
from uno_env.belief import LearnedOpponent, RandomModel
from uno_env.belief.learned import RULE_CANDIDATES
from uno_env.belief.models import HighestNumberModel
from uno_env.match import play_game
from uno_env.policy import make_policy
from uno_env.view import PublicView

SHIPPED = "models/search-q-none/model.zip"


class _Recorder:
    """Seats ``player`` and keeps every action it chooses, with the root's statistics behind it."""

    def __init__(self, player: SearchPolicy) -> None:
        self.player, self.actions = player, []

    def reset(self, seed: int | None = None) -> None:
        self.player.reset(seed)

    def observe_start(self, view: PublicView) -> None:
        self.player.observe_start(view)

    def act(self, view: PublicView) -> int:
        action = self.player.act(view)
        self.actions.append((action, dict(self.player.last_root)))
        return action


def _actions(player: SearchPolicy, seed: int, opponent: str = "rule") -> list[tuple[int, dict]]:
    """The player's (action, root statistics) at each of its decisions in one game against ``opponent``."""
    recorder = _Recorder(player)
    play_game((recorder, make_policy(opponent)), seed)
    return recorder.actions


def test_the_name_builds_the_measured_player():
    player = make_policy("search-guided")
    network = PPOPolicy.load(SHIPPED)
    assert isinstance(player, SearchPolicy)
    assert (player.simulations, player.belief, player.n_particles, player.leaf_moves) == (1_800, "particles", 500, 4)
    # The measured player's learned model: the rule-like candidates weighed by their prior, the uniform one answering
    # for itself.
    model = player.opponent_model
    assert isinstance(model, LearnedOpponent) and model.catch_all == "random" and model.proposal == "prior"
    assert [type(candidate) for candidate in model.candidates] == [type(c) for c in RULE_CANDIDATES]
    assert player.prior is None and player._compiled_rollout[1] == core.RULE_POLICY
    for built, shipped in ((player._actor, actor_params(network)), (player.value, value_params(network))):
        assert all(np.array_equal(a, b) for a, b in zip(built[0], shipped[0], strict=True))  # the layers' weights


def test_it_plays_as_the_search_spelled_out_and_the_same_seed_replays_the_game():
    # What benchmarks/search_strength.py ran as ``--players learned --guides leaf=4 --network SHIPPED``, when the
    # learned model's uniform candidate still answered for itself.
    network = PPOPolicy.load(SHIPPED)
    learned = LearnedOpponent(RULE_CANDIDATES, catch_all="random", proposal="prior")
    spelled_out = SearchPolicy(simulations=64, belief="particles", opponent_model=learned,
                               rollout=actor_params(network), opponent_rollout="rule", value=value_params(network),
                               leaf_moves=4)
    moves = _actions(guided_search(simulations=64), seed=11)
    assert len(moves) > 5
    assert moves == _actions(spelled_out, seed=11) == _actions(guided_search(simulations=64), seed=11)


def test_another_leaf_depth_plays_otherwise():
    # The twin test above must be able to fail: a change of one default changes the search's values.
    assert _actions(guided_search(simulations=64), seed=11) != _actions(guided_search(simulations=64, leaf_moves=0),
                                                                        seed=11)


def test_a_model_of_the_opponent_and_modelled_rollouts_reach_the_search():
    # benchmarks/guided_opponent.py's "told" player: the opponent's exact model plays its seat in the simulations.
    network = PPOPolicy.load(SHIPPED)

    def told() -> LearnedOpponent:
        return LearnedOpponent((HighestNumberModel(), RandomModel()), prior=(99, 1), catch_all="random")

    spelled_out = SearchPolicy(simulations=64, belief="particles", opponent_model=told(),
                               rollout=actor_params(network), opponent_rollout="modelled",
                               value=value_params(network), leaf_moves=4)
    guided = guided_search(simulations=64, opponent_model=told(), opponent_rollout="modelled")
    assert guided._compiled_rollout[1] is None  # the opponent's seat plays each world's candidate, not rule
    moves = _actions(guided, seed=11, opponent="highest-number")
    assert moves == _actions(spelled_out, seed=11, opponent="highest-number")
    # Both settings change the search: the told model with rule rolling out, and the default model rolled out.
    for other in (guided_search(simulations=64, opponent_model=told()),
                  guided_search(simulations=64, opponent_rollout="modelled")):
        assert _actions(other, seed=11, opponent="highest-number") != moves


def test_a_network_it_cannot_use_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="'no-such-agent' is neither a shipped agent"):
        guided_search("no-such-agent")
    with pytest.raises(ValueError, match="belief"):
        guided_search("search-q-particles")  # its actor reads belief features, which simulated worlds do not have
    with pytest.raises(ValueError, match="simulations"):
        guided_search(simulations=0)
