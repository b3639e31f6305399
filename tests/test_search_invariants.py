"""The search player's invariants (agents/search.py): common random numbers and the oracle's worlds.

The player's searches are watched through the kernel call that runs them (:func:`agents.search_kernels.run_root`,
wrapped): its worlds (packed states and their seeds) and the root's statistics, whose ``rewards[i, k]`` is root action
``i``'s result in world ``k``. That is enough to check which world each simulation used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from uno_testlib import counts_of, deck_names, minus, scenario

from agents import search
from agents.actor_kernels import BATCH, actor_simulate
from agents.compiled_actor import actor_params
from agents.ppo import PPOPolicy
from agents.search import OracleSearchPolicy, SearchPolicy, _Root, _Worlds
from agents.search_kernels import Playouts, Worlds, reward_of, run_root
from uno_env import UnoEnv, core
from uno_env.cards import COPIES
from uno_env.game import Game
from uno_env.view import PublicView


def last_search(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Watch the searches of every player: afterwards ``["worlds"]`` is the last call's ``(states, seeds,
    opponents)`` and ``["root"]`` its root statistics (:class:`~agents.search_kernels.RootStats`' fields), as the call
    left them."""
    seen: dict[str, Any] = {}

    def watched(worlds_fields: tuple, root_fields: tuple, *args: Any) -> int:
        done = run_root(worlds_fields, root_fields, *args)
        seen["worlds"], seen["root"] = worlds_fields, root_fields
        return done

    monkeypatch.setattr(search, "run_root", watched)
    return seen


def choice_position(opponent: list[str]) -> tuple[Game, PublicView, PublicView]:
    """Four legal moves for the agent (red:5, blue:5, wild in four colours counts as four) on green:5."""
    game = Game.from_scenario(scenario(["red:5", "blue:5", "green:7", "yellow:9"], opponent, ["green:5"]),
                              np.random.default_rng(0))
    return game, game.observe(0, consume_events=False), game.observe(0)


@pytest.mark.parametrize("belief", ["counting", "particles"])
def test_kth_simulation_of_every_root_action_sees_the_same_world(belief, monkeypatch):
    # The player's own search, its worlds drawn from each belief: root action i's k-th result is its simulation in
    # world k, for every action alike.
    seen = last_search(monkeypatch)
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2"])
    player = SearchPolicy(simulations=60, belief=belief, n_particles=128, rollout="random")
    player.reset(0)
    player.observe_start(start)
    player.act(view)
    (states, seeds, _), (actions, _, visits, _, rewards, *_) = seen["worlds"], seen["root"]
    assert actions.tolist() == view.legal_actions and len(actions) == 3
    assert visits.sum() == 60 and (visits >= 3).all()
    # The worlds differ from one simulation to the next, so equal results per world are not an accident.
    assert len({tuple(state) for state in states[:5].tolist()}) == 5
    for i, action in enumerate(actions):
        expected = [reward_of(core.simulate(states[k], action, core.RANDOM_POLICY, core.RANDOM_POLICY, seeds[k], 3000))
                    for k in range(visits[i])]
        assert rewards[i, :visits[i]].tolist() == expected


def _tiny_actor() -> tuple:
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=5, device="cpu", policy_kwargs={"net_arch": [16]})
    return actor_params(PPOPolicy(model.policy))


# (the searching seat's built-in policy, the opponent's (None: random and rule in turn, world by world, as a modelled
# opponent's worlds may have them), whether a network plays the searching seat instead)
ROLLOUTS = {"random": (core.RANDOM_POLICY, core.RANDOM_POLICY, False),
            "rule": (core.RULE_POLICY, core.RULE_POLICY, False),
            "random-vs-rule": (core.RANDOM_POLICY, core.RULE_POLICY, False),
            "network-vs-rule": (core.RANDOM_POLICY, core.RULE_POLICY, True),
            "rule-vs-each-world's": (core.RULE_POLICY, None, False),
            "network-vs-each-world's": (core.RANDOM_POLICY, None, True)}


@pytest.mark.parametrize("rollouts", ROLLOUTS)
def test_the_compiled_root_loop_runs_the_kth_simulation_of_every_action_in_world_k(rollouts):
    # Each recorded reward must be that of the action's own compiled simulation in world k, each seat with its
    # policy: the opponent's is world k's.
    policy, opponent_policy, network = ROLLOUTS[rollouts]
    actor = _tiny_actor() if network else None
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2"])
    player = SearchPolicy(simulations=8, belief="counting")
    player.reset(1)
    player.observe_start(start)
    worlds = _Worlds(player, view)
    worlds.extend()
    root = _Root(view.legal_actions, np.array([2, 0, 1]))
    done = 0
    while done < 150:  # a run stops early when an action needs a world not drawn yet
        opponents = (np.where(np.arange(len(worlds)) % 2, core.RULE_POLICY, core.RANDOM_POLICY)
                     if opponent_policy is None else np.full(len(worlds), opponent_policy))
        done = run_root(Worlds(worlds.states, worlds.seeds, opponents), root.stats(), done, 150,
                        Playouts(0.7, policy, 3000, 0, 0.0, BATCH), actor)
        worlds.extend()
        root.fit(len(worlds))
    assert root.visits.sum() == 150 and (root.visits >= 5).all()
    for i, action in enumerate(view.legal_actions):
        expected = [reward_of(actor_simulate(worlds.states[k], action, 0, opponents[k], actor, worlds.seeds[k],
                                             3000) if network else
                              core.simulate(worlds.states[k], action, policy, opponents[k], worlds.seeds[k], 3000))
                    for k in range(root.visits[i])]
        assert root.rewards_of(i).tolist() == expected
        assert root.totals[i] == sum(expected)
    assert len({tuple(root.rewards_of(i)[:5]) for i in range(3)}) > 1  # the actions' results differ


def test_a_network_rolls_out_only_the_searching_seat():
    with pytest.raises(ValueError, match="actor"):
        SearchPolicy(rollout=_tiny_actor())


def test_the_oracle_determinizes_with_the_true_hand_and_the_rest_as_the_deck(monkeypatch):
    seen = last_search(monkeypatch)
    opponent = ["yellow:3", "yellow:4", "red:8", "blue:2"]
    game, start, view = choice_position(opponent)
    oracle = OracleSearchPolicy(lambda: game.hands[1], simulations=30)
    oracle.reset(2)
    oracle.observe_start(start)
    oracle.act(view)
    states = seen["worlds"][0][:seen["root"][2].max()]  # the worlds the 30 simulations ran in
    deck = counts_of(minus(deck_names(), ["red:5", "blue:5", "green:7", "yellow:9", "green:5", *opponent]))
    orders = [tuple(state[core.DECK:core.DECK + state[core.DECK_LEN]]) for state in states.tolist()]
    assert seen["root"][2].sum() == 30
    assert {tuple(state[core.HANDS + 54:core.HANDS + 108]) for state in states.tolist()} == {tuple(game.hands[1])}
    assert all(counts_of_types(order) == deck for order in orders)
    assert len(set(orders)) > 1  # only the deck order is sampled


def test_counting_worlds_are_uniform_subsets_of_the_unseen_cards_with_the_rest_shuffled_as_the_deck():
    # Card counting's worlds are drawn by the world kernel, not by the belief's own sampler: they must hold exactly
    # the unseen cards and follow the belief (each type's mean count in the hand is the belief's expected count).
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2"])
    player = SearchPolicy(simulations=8, belief="counting")
    player.reset(0)
    player.observe_start(start)
    worlds = _Worlds(player, view)
    while len(worlds) < 4000:
        worlds.extend()
    states = worlds.states
    hands = states[:, core.HANDS + 54:core.HANDS + 108]
    decks = states[:, core.DECK:core.DECK + states[0, core.DECK_LEN]]
    unseen = np.array(COPIES) - np.asarray(view.hand) - np.asarray(view.discard)
    assert (hands.sum(axis=1) == 4).all() and (states[:, core.HAND_SIZES + 1] == 4).all()
    held = [hand + np.bincount(deck, minlength=54) for hand, deck in zip(hands, decks, strict=True)]
    assert all((cards == unseen).all() for cards in held)
    # Standard error of a mean count about 0.005 here; 0.025 is 5 of them.
    assert np.abs(hands.mean(axis=0) - player._tracker.expected_counts()).max() < 0.025
    assert len(set(decks[:, -1].tolist())) > 20 and len({tuple(hand) for hand in hands.tolist()}) > 1000
    assert len(set(worlds.seeds.tolist())) == len(worlds)  # every world its own rollout stream


def counts_of_types(cards: tuple[int, ...]) -> list[int]:
    """54 counts of a sequence of card types."""
    out = [0] * 54
    for card in cards:
        out[card] += 1
    return out
