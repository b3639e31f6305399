"""The search guided by a network (agents/search.py): the critic at the leaves, the policy as the root prior.

The networks here are tiny (one hidden layer of 16, the shape of test_search_invariants.py's actor, so the kernels
compiled for it are reused) and rigged where a test needs a known answer: a critic whose last layer is zero
outputs its bias whatever the position, and an actor whose last layer is zero plays the action of its largest bias.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from uno_testlib import act, capped, scenario

from agents.actor_kernels import BATCH, actor_simulate, value_of
from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from agents.search import OracleSearchPolicy, SearchPolicy, _Root, _Worlds
from agents.search_kernels import (
    Playouts,
    Worlds,
    network_rewards,
    pick_batch,
    reward_of,
    run_root,
    select_root,
    value_reward,
)
from uno_env import UnoEnv, core
from uno_env.game import Game
from uno_env.observation import SeatObserver
from uno_env.opponents import RandomPolicy
from uno_env.view import PublicView

SHIPPED = "models/search-q-none/model.zip"


def _network(seed: int = 5, activation: type[torch.nn.Module] = torch.nn.Tanh) -> PPOPolicy:
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=seed, device="cpu",
                        policy_kwargs={"net_arch": [16], "activation_fn": activation})
    return PPOPolicy(model.policy)


def _rigged_critic(value: float) -> tuple:
    """A critic that says ``value`` (before clipping) of every position."""
    network = _network()
    with torch.no_grad():
        network.network.value_net.weight.zero_()
        network.network.value_net.bias.fill_(value)
    return value_params(network)


def _rigged_actor(favourite: int | None) -> tuple:
    """An actor whose logits are 0 except 8 on ``favourite`` (``None``: all 0, a uniform prior)."""
    network = _network()
    with torch.no_grad():
        network.network.action_net.weight.zero_()
        network.network.action_net.bias.zero_()
        if favourite is not None:
            network.network.action_net.bias[favourite] = 8.0
    return actor_params(network)


def _start(player: SearchPolicy, game: Game, seed: int) -> PublicView:
    player.reset(seed)
    player.observe_start(game.observe(0, consume_events=False))
    return game.observe(0)


def _positions(games: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(packed state, the env's observation of the seat to move) at every decision of ``games`` random games (deal
    ``seed`` from seed 0 on, the first player alternating), before the move is played."""
    observer, player = SeatObserver(), RandomPolicy()
    player.reset(0)
    positions = []
    for seed in range(games):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in capped():
            if game.done:
                break
            view = observer.observe(game, game.current)
            positions.append((core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                              game.pending_draw), np.asarray(view.observation, dtype=np.float32)))
            game.step(player.act(view))
    return positions


@pytest.mark.parametrize("which", ["shipped", "tanh", "relu"])
def test_the_compiled_critic_is_the_torch_critic(which):
    policy = PPOPolicy.load(SHIPPED) if which == "shipped" else \
        _network(7, torch.nn.Tanh if which == "tanh" else torch.nn.ReLU)
    params = value_params(policy)
    positions = _positions(8)
    with torch.no_grad():
        expected = policy.network.predict_values(torch.from_numpy(np.stack([obs for _, obs in positions])))
    expected = expected.squeeze(-1).clamp(-1.0, 1.0).numpy()
    compiled = np.array([value_of(state, params) for state, _ in positions])
    assert len(positions) > 200
    assert np.abs(compiled - expected).max() < 1e-4
    assert expected.std() > 1e-3  # the values differ from position to position: the inputs are really read


def test_a_network_with_belief_features_has_no_compiled_critic():
    with pytest.raises(ValueError, match="belief='particles'"):
        value_params(PPOPolicy.load("models/search-q-particles/model.zip", name="search-q-particles"))


def test_the_critics_value_is_the_searching_seats_reward_from_the_side_of_the_seat_to_move():
    state = _positions(1)[0][0]
    assert value_of(state, _rigged_critic(0.5)) == 0.5
    assert value_reward(0.5, 0) == 0.75
    assert value_reward(0.5, 1) == 0.25  # the opponent's +0.5 is the searching seat's -0.5
    assert value_of(state, _rigged_critic(3.0)) == 1.0 and value_of(state, _rigged_critic(-3.0)) == -1.0


def _leaf_position() -> Game:
    """Six legal moves for the agent (red:5, blue:5, wild in four colours) on green:5, a second wild kept for later,
    and an opponent who cannot go out in one turn or make the agent draw: after any move and the reply, the agent
    has a choice again, so the game always reaches the leaf of leaf_moves=0."""
    return Game.from_scenario(scenario(["red:5", "blue:5", "wild", "wild"], ["yellow:3", "yellow:4", "red:8"],
                                       ["green:5"]), np.random.default_rng(0))


@pytest.mark.parametrize(("bias", "reward"), [(1.0, 1.0), (-1.0, 0.0), (0.5, 0.75), (3.0, 1.0)])
def test_with_leaf_moves_0_every_simulation_is_the_critics_value(bias, reward):
    game = _leaf_position()
    player = OracleSearchPolicy(lambda: game.hands[1], simulations=60, rollout=_rigged_actor(None),
                                opponent_rollout="rule", value=_rigged_critic(bias), leaf_moves=0)
    player.act(_start(player, game, 3))
    assert len(player.last_root) == 6 and sum(v for v, _ in player.last_root.values()) == 60
    for visits, total in player.last_root.values():
        assert total == reward * visits


def test_a_leaf_beyond_the_games_end_scores_what_the_playout_scores():
    # With leaf_moves past any game's length, no simulation reaches its leaf: the root values are the playouts',
    # simulation for simulation, whatever the critic says.
    game = _leaf_position()
    roots = []
    for guide in ({}, {"value": _rigged_critic(0.5), "leaf_moves": 10_000}):
        player = OracleSearchPolicy(lambda: game.hands[1], simulations=80, rollout=_rigged_actor(None),
                                    opponent_rollout="rule", **guide)
        player.act(_start(player, game, 4))
        roots.append(player.last_root)
    assert roots[0] == roots[1]
    assert any(total not in (0.0, visits) for visits, total in roots[0].values())  # the games' results vary


def test_leaf_moves_count_the_searching_seats_decisions():
    # The same world and seed replay the same game up to any leaf, so a simulation that ends before leaf K ends so
    # before every deeper leaf; the critic's 0.75 (no game result) marks the simulations that reached their leaf.
    game = _leaf_position()
    actor, critic = _rigged_actor(None), _rigged_critic(0.5)
    player = OracleSearchPolicy(lambda: game.hands[1], simulations=8)
    view = _start(player, game, 5)
    worlds = _Worlds(player, view)
    worlds.extend()
    picks = np.array([(k % 6, k) for k in range(len(worlds))])  # world k, the k-th legal move mod 6
    rewards = np.zeros((6, len(worlds)))
    for row, leaf_moves in zip(rewards, (0, 1, 2, 3, 6, 10_000), strict=True):
        network_rewards(worlds.fields(), np.array(view.legal_actions), picks, len(picks),  # rule on the other seat
                        tuple(Playouts(0.7, core.RANDOM_POLICY, 3000, leaf_moves, 0.0, BATCH)),
                        actor, critic, row)
    reached = rewards == 0.75
    assert reached[0].all() and not reached[-1].any()
    assert reached[1].sum() < len(worlds) and reached[2].sum() < reached[1].sum()
    for shallow, deep in zip(rewards[:-1], rewards[1:], strict=True):
        ended = shallow != 0.75
        assert (deep[ended] == shallow[ended]).all()
    playouts = [reward_of(actor_simulate(state, view.legal_actions[k % 6], 0, core.RULE_POLICY, actor, seed, 3000))
                for k, (state, seed) in enumerate(zip(worlds.states, worlds.seeds, strict=True))]
    assert rewards[-1].tolist() == playouts


def test_select_root_without_priors_is_ucb1_and_with_priors_puct():
    visits, totals = np.array([4, 2, 2]), np.array([2.0, 1.2, 0.8])
    order = np.array([2, 0, 1])
    assert [select_root(visits, totals, order, done, 0.7, np.array([0.0, 0.0, 1.0]), 5.0) for done in range(3)] \
        == [2, 0, 1]  # the first tries follow the order whatever the priors
    for c in (0.0, 0.7, 3.0):
        ucb = [t / v + c * math.sqrt(math.log(1 + 8) / v) for t, v in zip(totals, visits, strict=True)]
        assert select_root(visits, totals, order, 8, c) == int(np.argmax(ucb))
    for priors, c in (([0.1, 0.1, 0.8], 0.5), ([0.8, 0.1, 0.1], 5.0), ([1 / 3] * 3, 1.0), ([0.2, 0.5, 0.3], 0.0)):
        puct = [t / v + c * p * math.sqrt(8) / (1 + v) for t, v, p in zip(totals, visits, priors, strict=True)]
        assert select_root(visits, totals, order, 8, 0.7, np.array(priors), c) == int(np.argmax(puct))
    # A uniform prior still favours the better mean at equal visits, and the less visited action at equal means.
    assert select_root(np.array([3, 3]), np.array([1.0, 2.0]), order[:0], 6, 0.7, np.array([0.5, 0.5]), 1.0) == 1
    assert select_root(np.array([5, 3]), np.array([2.5, 1.5]), order[:0], 8, 0.7, np.array([0.5, 0.5]), 1.0) == 1


@pytest.mark.parametrize("priors", [None, np.array([0.2, 0.5, 0.3])])
def test_a_batch_is_the_sequential_choice_with_pending_simulations_scoring_their_mean(priors):
    visits, totals, order = np.array([5, 2, 3]), np.array([3.0, 1.5, 1.2]), np.array([2, 0, 1])
    picks = np.zeros((BATCH, 2), np.int64)
    n, short = pick_batch(visits, totals, order, 10, 40, 1000, 0.7, priors, 2.0, picks)
    assert (n, short) == (40, False)
    counted, summed, expected = visits.copy(), totals.copy(), []
    for j in range(40):
        i = select_root(counted, summed, order, 10 + j, 0.7, priors, 2.0)
        expected.append((i, counted[i]))  # by common random numbers, the action's next world
        summed[i] += totals[i] / visits[i]
        counted[i] += 1
    assert picks[:n].tolist() == [list(pick) for pick in expected]
    assert len(set(picks[:n, 0].tolist())) == 3  # the batch spreads over the actions
    assert (visits == [5, 2, 3]).all() and (totals == [3.0, 1.5, 1.2]).all()  # the root's statistics untouched
    # one at a time, the choice is select_root's
    assert pick_batch(visits, totals, order, 10, 1, 1000, 0.7, priors, 2.0, picks) == (1, False)
    assert picks[0, 0] == select_root(visits, totals, order, 10, 0.7, priors, 2.0)


def test_a_batch_ends_with_the_first_tries_and_where_the_worlds_run_out():
    picks = np.zeros((BATCH, 2), np.int64)
    zeros = np.zeros(3, np.int64)
    assert pick_batch(zeros, np.zeros(3), np.array([2, 0, 1]), 1, 64, 100, 0.7, None, 0.0, picks) == (2, False)
    assert picks[:2].tolist() == [[0, 0], [1, 0]]
    # worlds 0 to 5 are drawn: the winning action of 5 visits gets world 5, then its next world is missing
    assert pick_batch(np.array([5, 1, 1]), np.array([5.0, 0.0, 0.0]), np.array([0, 1, 2]), 7, 64, 6, 0.1, None, 0.0,
                      picks) == (1, True)
    assert picks[0].tolist() == [0, 5]


@pytest.mark.parametrize("batch", [0, BATCH + 1, 2.0, True])
def test_a_batch_size_outside_1_to_BATCH_is_refused(batch):
    with pytest.raises(ValueError, match="batch must be an int from 1"):
        SearchPolicy(simulations=10, batch=batch)


def test_the_guided_search_in_batches_and_one_at_a_time_finds_the_same_move():
    # The race: red:5 loses at once. Batches change which simulations run, not what each simulation scores.
    game = _race()
    moves = set()
    for batch in (1, 7, BATCH):
        player = OracleSearchPolicy(lambda: game.hands[1], simulations=300, rollout=_rigged_actor(act("red:5")),
                                    opponent_rollout="rule", value=_rigged_critic(0.0), leaf_moves=1,
                                    keep_default_z=None, prior=1.0, batch=batch)
        moves.add(player.act(_start(player, game, 2)))
        assert player.last_simulations == 300
    assert moves == {act("blue:5")}


def _choice_position() -> Game:
    """Three legal moves for the agent (red:5, blue:5, green:7) on green:5."""
    return Game.from_scenario(scenario(["red:5", "blue:5", "green:7", "yellow:9"],
                                       ["yellow:3", "yellow:4", "red:8", "blue:2"], ["green:5"]),
                              np.random.default_rng(0))


def _visits(prior: float | None, actor: tuple, seed: int = 6) -> dict[int, int]:
    game = _choice_position()
    player = SearchPolicy(simulations=400, belief="counting", rollout=actor, opponent_rollout="rule", prior=prior,
                          keep_default_z=None)
    player.act(_start(player, game, seed))
    return {action: visits for action, (visits, _) in player.last_root.items()}


def test_the_prior_steers_the_visits_to_the_networks_favourite():
    favourite = act("green:7")
    actor = _rigged_actor(favourite)
    without, guided = _visits(None, actor), _visits(5.0, actor)
    assert set(without) == {act("red:5"), act("blue:5"), favourite}
    assert guided[favourite] > 0.95 * 400 and without[favourite] < 0.75 * 400
    # A uniform prior spreads the visits by the results alone: no action is steered to 90%.
    assert max(_visits(5.0, _rigged_actor(None)).values()) < 0.9 * 400


def test_the_prior_is_the_softmax_of_the_actors_logits_over_the_legal_moves():
    network = _network(11)
    game = _choice_position()
    player = SearchPolicy(simulations=8, belief="counting", rollout=actor_params(network), opponent_rollout="rule",
                          prior=1.0)
    view = _start(player, game, 0)
    root = _Root(view.legal_actions, np.arange(3))
    priors = player._priors(root, _Worlds(player, view))
    logits = network.action_logits(SeatObserver().observe(game, 0))[view.legal_actions]
    assert np.abs(priors - np.exp(logits) / np.exp(logits).sum()).max() < 1e-5


def test_with_a_prior_the_kth_simulation_of_every_action_still_runs_in_world_k():
    actor = _rigged_actor(act("green:7"))
    game = _choice_position()
    player = SearchPolicy(simulations=8, belief="counting")
    view = _start(player, game, 1)
    worlds = _Worlds(player, view)
    worlds.extend()
    root = _Root(view.legal_actions, np.array([2, 0, 1]))
    done = 0
    while done < 150:
        done = run_root(Worlds(*worlds.fields()), root.stats(), done, 150,  # rule on the other seat
                        Playouts(0.7, core.RANDOM_POLICY, 3000, 0, 2.0, BATCH), actor, None,
                        np.array([0.2, 0.2, 0.6]))
        worlds.extend()
        root.fit(len(worlds))
    assert root.visits.sum() == 150 and (root.visits >= 3).all()
    for i, action in enumerate(view.legal_actions):
        expected = [reward_of(actor_simulate(worlds.states[k], action, 0, core.RULE_POLICY, actor, worlds.seeds[k],
                                             3000)) for k in range(root.visits[i])]
        assert root.rewards_of(i).tolist() == expected


def _race() -> Game:
    """red:5 or blue:5 on green:5 while the opponent holds only red:3: red:5 loses at once, blue:5 does not."""
    return Game.from_scenario(scenario(["red:5", "blue:5", "yellow:9"], ["red:3"], ["green:5"]),
                              np.random.default_rng(0))


@pytest.mark.parametrize(("z", "expected"), [(1.0, "blue:5"), (None, "blue:5"), (1e9, "red:5")])
def test_the_networks_move_is_the_default(z, expected):
    # The network plays the losing red:5; the search finds blue:5, and plays it when it is clearly better on shared
    # worlds (z=1), or always (None); with an impossible margin the network's move stands.
    game = _race()
    player = OracleSearchPolicy(lambda: game.hands[1], simulations=100, rollout=_rigged_actor(act("red:5")),
                                opponent_rollout="rule", keep_default_z=z)
    assert player.act(_start(player, game, 2)) == act(expected)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"value": "critic", "leaf_moves": 0}, "rollout=actor_params"),
    ({"prior": 1.0}, "rollout=actor_params"),
    ({"rollout": "value", "opponent_rollout": "rule"}, "one output per action"),
    ({"rollout": "actor", "opponent_rollout": "rule", "value": "actor", "leaf_moves": 0}, "one output"),
    ({"rollout": "actor", "opponent_rollout": "rule", "value": "critic"}, "leaf_moves"),
    ({"rollout": "actor", "opponent_rollout": "rule", "leaf_moves": 2}, "leaf_moves"),
    ({"rollout": "actor", "opponent_rollout": "rule", "value": "critic", "leaf_moves": -1}, "non-negative"),
    ({"rollout": "actor", "opponent_rollout": "rule", "value": "critic", "leaf_moves": True}, "non-negative"),
    ({"rollout": "actor", "opponent_rollout": "rule", "prior": 0.0}, "positive"),
    ({"rollout": "actor", "opponent_rollout": "rule", "prior": float("nan")}, "positive"),
])
def test_bad_guidance_is_refused(kwargs, match):
    network = _network()
    params = {"actor": actor_params(network), "critic": value_params(network), "value": value_params(network)}
    kwargs = {key: params.get(value, value) if isinstance(value, str) and key in ("rollout", "value") else value
              for key, value in kwargs.items()}
    with pytest.raises(ValueError, match=match):
        SearchPolicy(**kwargs)
