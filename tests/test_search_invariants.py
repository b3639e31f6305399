"""The search player's invariants (agents/search.py): common random numbers, the default-move guard, the oracle.

A recording subclass sees the simulated game each simulation starts from, right after its root action; the
root child it runs under identifies the root action. That is enough to check which world each simulation used.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from uno_testlib import act, counts_of, deck_names, minus, scenario

from agents.actor_kernels import BATCH, actor_simulate
from agents.compiled_actor import actor_params
from agents.ppo import PPOPolicy
from agents.search import OracleSearchPolicy, SearchPolicy, _Root, _Worlds
from agents.search_kernels import Playouts, Worlds, reward_of, run_root
from uno_env import UnoEnv, core
from uno_env.cards import COPIES
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import PublicView


class WorldLog:
    """Per root action (by its tree node), the worlds its simulations ran in, in order."""

    def __init__(self) -> None:
        self.by_node: dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]] = defaultdict(list)

    def record(self, node: Any, game: Game) -> None:
        # The root action was the searching seat's move: it changed neither the other hand nor the deck.
        self.by_node[id(node)].append((tuple(game.hands[1]), tuple(game.deck)))


def recording(cls: type[SearchPolicy]) -> type[SearchPolicy]:
    """``cls`` with every simulation's starting world logged in ``self.log``."""
    class Recording(cls):  # type: ignore[valid-type,misc]
        log: WorldLog

        def _simulate(self, node: Any, game: Game, uniform: Any) -> float:
            self.log.record(node, game)
            return super()._simulate(node, game, uniform)
    return Recording


def choice_position(opponent: list[str]) -> tuple[Game, PublicView, PublicView]:
    """Four legal moves for the agent (red:5, blue:5, wild in four colours counts as four) on green:5."""
    game = Game.from_scenario(scenario(["red:5", "blue:5", "green:7", "yellow:9"], opponent, ["green:5"]),
                              np.random.default_rng(0))
    return game, game.observe(0, consume_events=False), game.observe(0)


@pytest.mark.parametrize("belief", ["counting", "particles"])
def test_kth_simulation_of_every_root_action_sees_the_same_world(belief):
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2"])
    player = recording(SearchPolicy)(simulations=60, belief=belief, n_particles=128, rollout="random")
    player.log = WorldLog()
    player.reset(0)  # a seed whose worlds give every root action at least 5 visits (the worlds differ per seed)
    player.observe_start(start)
    player.act(view)
    sequences = list(player.log.by_node.values())
    assert len(sequences) == len(view.legal_actions) == 3
    assert all(len(worlds) >= 5 for worlds in sequences)
    # The worlds differ from one simulation to the next, so equal sequences are not an accident.
    assert len(set(sequences[0])) >= 3
    for worlds in sequences[1:]:
        n = min(len(worlds), len(sequences[0]))
        assert worlds[:n] == sequences[0][:n]


def _tiny_actor() -> tuple:
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=5, device="cpu", policy_kwargs={"net_arch": [16]})
    return actor_params(PPOPolicy(model.policy))


# (the searching seat's built-in policy, the opponent's, whether a network plays the searching seat instead)
ROLLOUTS = {"random": (core.RANDOM_POLICY, core.RANDOM_POLICY, False),
            "rule": (core.RULE_POLICY, core.RULE_POLICY, False),
            "random-vs-rule": (core.RANDOM_POLICY, core.RULE_POLICY, False),
            "network-vs-rule": (core.RANDOM_POLICY, core.RULE_POLICY, True)}


@pytest.mark.parametrize("rollouts", ROLLOUTS)
def test_the_compiled_root_loop_runs_the_kth_simulation_of_every_action_in_world_k(rollouts):
    # The one-level search with compiled rollouts never reaches _simulate: its simulations run in run_root. Each
    # recorded reward must be that of the action's own compiled simulation in world k, each seat with its policy.
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
        done = run_root(Worlds(worlds.states, worlds.seeds), root.stats(), done, 150,
                        Playouts(0.7, policy, opponent_policy, 3000, 0, 0.0, BATCH), actor)
        worlds.extend()
        root.fit(len(worlds))
    assert root.visits.sum() == 150 and (root.visits >= 5).all()
    for i, action in enumerate(view.legal_actions):
        expected = [reward_of(actor_simulate(worlds.states[k], action, 0, opponent_policy, actor, worlds.seeds[k],
                                             3000) if network else
                              core.simulate(worlds.states[k], action, policy, opponent_policy, worlds.seeds[k], 3000))
                    for k in range(root.visits[i])]
        assert root.rewards_of(i).tolist() == expected
        assert root.totals[i] == sum(expected)
    assert len({tuple(root.rewards_of(i)[:5]) for i in range(3)}) > 1  # the actions' results differ


@pytest.mark.parametrize("kwargs", [{}, {"opponent_rollout": "rule", "tree_depth": 2},
                                    {"opponent_rollout": RandomPolicy()}])
def test_a_network_rolls_out_only_the_searching_seat_and_only_compiled(kwargs):
    with pytest.raises(ValueError, match="actor"):
        SearchPolicy(rollout=_tiny_actor(), **kwargs)


def test_the_oracle_determinizes_with_the_true_hand_and_the_rest_as_the_deck():
    opponent = ["yellow:3", "yellow:4", "red:8", "blue:2"]
    game, start, view = choice_position(opponent)
    oracle = recording(OracleSearchPolicy)(lambda: game.hands[1], simulations=30)
    oracle.log = WorldLog()
    oracle.reset(2)
    oracle.observe_start(start)
    oracle.act(view)
    true_hand = tuple(game.hands[1])
    deck = counts_of(minus(deck_names(), ["red:5", "blue:5", "green:7", "yellow:9", "green:5", *opponent]))
    worlds = [world for sequence in oracle.log.by_node.values() for world in sequence]
    assert len(worlds) == 30
    assert {hand for hand, _ in worlds} == {true_hand}
    assert all(counts_of_types(order) == deck for _, order in worlds)
    assert len({order for _, order in worlds}) > 1  # only the deck order is sampled


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


class Stubborn:
    """The rule player, except that in the race below (three cards in hand) it plays the losing red:5."""

    def __init__(self) -> None:
        self.rule = RulePolicy()

    def reset(self, seed: int | None = None) -> None:
        self.rule.reset(seed)

    def act(self, view: PublicView) -> int:
        if view.hand_size == 3 and act("red:5") in view.legal_actions:
            return act("red:5")
        return self.rule.act(view)


def race() -> tuple[Game, PublicView, PublicView]:
    """red:5 or blue:5 on green:5 while the opponent holds only red:3: red:5 loses at once, blue:5 does not."""
    game = Game.from_scenario(scenario(["red:5", "blue:5", "yellow:9"], ["red:3"], ["green:5"]),
                              np.random.default_rng(0))
    return game, game.observe(0, consume_events=False), game.observe(0)


@pytest.mark.parametrize(("z", "expected"), [(1.0, "blue:5"), (None, "blue:5"), (1e9, "red:5")])
def test_default_move_guard(z, expected):
    # The search's own choice (blue:5) replaces the rollout policy's move only when clearly better on shared
    # worlds; with an impossible margin the rollout policy's move stands.
    game, start, view = race()
    oracle = OracleSearchPolicy(lambda: game.hands[1], simulations=40, rollout=Stubborn(), keep_default_z=z)
    # With 40 simulations red:5 gets 6 to 9, and whether blue:5 is more than one standard error ahead on those few
    # worlds depends on their draws (it is for seeds 2, 3 and 4, not for 0 and 1); z=None and 1e9 hold for any seed.
    oracle.reset(2)
    oracle.observe_start(start)
    assert oracle.act(view) == act(expected)
