"""Properties of the labels expert iteration fits (train.training.search_labels): the side they are scored from,
common random numbers between the moves of one label, and their dependence on the seed alone.

* **Sides.** A hand-made position whose best move is known (skip, then go out: +1 for sure) is labelled with the
  mover on seat 0 and on seat 1: the labels are the mover's, so they are the same. A position and its seat-swapped
  copy (the hands exchanged, the other seat to move) get exactly the same labels from the same random stream: a
  label scored from a fixed seat breaks the equality.
* **Common random numbers.** The k-th world (hidden hand, deck order and random stream) of every move of a label
  is the same world: checked on the worlds themselves, recorded as the simulations receive them (the search's
  compiled root loop run as plain Python, ``run_root.py_func``, so that each simulation's world can be seen).
* **Seeds.** Labels made twice with the same seed are equal; with another seed they differ.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from uno_testlib import act, scenario

import agents.search
import agents.search_kernels
from agents.ppo import save_model
from train.training.labelling import LabelJob, label_shard
from train.training.search_labels import BasePlayer, SearchLabels, _Labeller, collect
from uno_env import UnoEnv
from uno_env.game import Game
from uno_env.seat import Seat

# The mover holds red:skip and red:5, the other seat red:7, on red:9. Skip, then red:5: out, a sure win, in every
# world. Red:5 at once lets the other seat go out if its card follows it.
MOVER, OTHER, TOP = ["red:skip", "red:5"], ["red:7"], "red:9"
SKIP, FIVE = act("red:skip"), act("red:5")


def known_position(mover_seat: int) -> Game:
    """The known position with the mover on ``mover_seat`` (seat 0 is the scenario's agent)."""
    scn = scenario(MOVER, OTHER, [TOP]) if mover_seat == 0 else scenario(OTHER, MOVER, [TOP], to_move="opponent")
    return Game.from_scenario(scn, np.random.default_rng(0))


def swapped(game: Game) -> Game:
    """The same position with the seats exchanged: the other hand order, the other seat to move."""
    return Game([game.hands[1], game.hands[0]], list(game.deck), list(game.discard), game.active_colour,
                1 - game.current, game.pending_draw, np.random.default_rng(0))


def mid_game(seed: int) -> Game:
    """A real position a few random moves into a seeded game, with a choice for the seat to move."""
    rng = np.random.default_rng(seed)
    game = Game.deal(rng, seed % 2)
    for _ in range(200):
        legal = game.legal_actions()
        if len(legal) > 1 and game.current == seed % 2 and len(game.discard) > 4:
            return game
        game.step(int(rng.choice(legal)))
        assert not game.done
    raise AssertionError("no choice reached")


@pytest.fixture(scope="module")
def network_base(tmp_path_factory) -> BasePlayer:
    """A small untrained network as the base player (a checkpoint, compiled into the playouts)."""
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=3, device="cpu", policy_kwargs={"net_arch": [16]})
    path = tmp_path_factory.mktemp("base") / "base.zip"
    return BasePlayer(save_model(model, path, {"belief": "none", "config": "test", "steps": 0}))


# ---------------------------------------------------------------------------------------------- sides
def label_once(game: Game, seed: int, search: SearchLabels, base: str = "rule") -> np.ndarray:
    """The labels the labeller records at ``game``'s decision (then played), seated on the seat to move, with the
    base player ``base`` (a name or a checkpoint's path)."""
    labeller = _Labeller("none", base, search)
    seat = Seat(game.current, labeller)
    seat.start(game, seed)
    labeller.deal(game)
    seat.play(game)
    (_, values, move), = labeller.records
    return values


@pytest.mark.parametrize("search", [SearchLabels(simulations=800, belief="counting"),
                                    SearchLabels(simulations=800, belief="aware")], ids=["search", "aware search"])
def test_the_labeller_scores_the_known_position_for_the_seat_it_plays(search):
    for seat in (0, 1):
        values = label_once(known_position(seat), seat, search)
        assert values[SKIP] == 1.0, seat
        # The search does not see the other hand: a card drawn from the 105 unseen ones. It goes out on red:5 if
        # that card is playable (22 reds, 6 other 5s, 8 wilds: p = 36/105); otherwise it draws and the skip
        # wins. On the +-1 scale: 1 - 2p = 0.314; 400 simulations per move, a standard error about 0.05.
        assert abs(values[FIVE] - (1 - 2 * 36 / 105)) < 0.2, seat


def test_search_labels_of_seat_swapped_games_are_equal():
    """The search labels a seat from that seat's view: seat 0 of a position and seat 1 of its swapped copy see the
    same view, and with the same seed their labels are equal."""
    search = SearchLabels(simulations=120, belief="counting")
    for seed in range(3):
        game = mid_game(seed)
        first = label_once(game, seed, search)
        assert np.array_equal(first, label_once(swapped(mid_game(seed)), seed, search), equal_nan=True)


# ---------------------------------------------------------------------------------------------- common random numbers
class WorldLog:
    """Per root action, the worlds (packed state, seed) its compiled simulations ran in, in order."""

    def __init__(self) -> None:
        self.by_action: dict[int, list[tuple[bytes, int]]] = defaultdict(list)

    def wrap_simulate(self, kernel):
        """A recording :func:`uno_env.core.simulate`: one simulation a call."""
        def recording(state, action, policy, opponent_policy, seed, max_actions):
            self.by_action[int(action)].append((state.tobytes(), int(seed)))
            return kernel(state, action, policy, opponent_policy, seed, max_actions)
        return recording

    def wrap_network(self, kernel):
        """A recording :func:`agents.search_kernels.network_rewards`: a batch of simulations a call."""
        def recording(worlds, actions, picks, n, *args):
            states, seeds = worlds[0], worlds[1]
            for i, k in picks[:n]:
                self.by_action[int(actions[i])].append((states[k].tobytes(), int(seeds[k])))
            return kernel(worlds, actions, picks, n, *args)
        return recording


@pytest.mark.parametrize(("kernel", "leaf_moves"), [("simulate", None), ("network_rewards", None),
                                                    ("network_rewards", 1)])
def test_every_move_of_a_search_label_plays_in_the_same_worlds(kernel, leaf_moves, network_base, monkeypatch):
    """The labelling search's root loop, run as Python (``run_root.py_func``, the same source) with the compiled
    simulations wrapped to record their worlds: built-in rollouts, a network's rollouts (in batches), and the guided
    search's leaves."""
    log = WorldLog()
    compiled = getattr(agents.search_kernels, kernel)
    monkeypatch.setattr(agents.search_kernels, kernel,
                        log.wrap_simulate(compiled) if kernel == "simulate" else log.wrap_network(compiled))
    monkeypatch.setattr(agents.search, "run_root", agents.search_kernels.run_root.py_func)
    base = "rule" if kernel == "simulate" else network_base.name
    search = SearchLabels(simulations=150, belief="counting", leaf_moves=leaf_moves)
    game = mid_game(2)
    values = label_once(game, 4, search, base)
    sequences = list(log.by_action.values())
    assert sorted(log.by_action) == sorted(np.flatnonzero(np.isfinite(values))) and len(sequences) > 1
    assert all(len(worlds) >= 150 // len(sequences) for worlds in sequences)
    assert len({state for state, _ in sequences[0]}) > 10  # hidden hands and deck orders differ between worlds
    for worlds in sequences[1:]:
        n = min(len(worlds), len(sequences[0]))
        assert worlds[:n] == sequences[0][:n]


# ---------------------------------------------------------------------------------------------- seeds
def test_collected_labels_depend_on_the_seed_alone():
    search = SearchLabels(simulations=100, belief="counting")
    first = collect(games=3, seed=11, belief="none", base="rule", search=search)
    again = collect(games=3, seed=11, belief="none", base="rule", search=search)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, again, strict=True))
    other = collect(games=3, seed=12, belief="none", base="rule", search=search)
    assert len(other[1]) != len(first[1]) or not np.array_equal(other[1], first[1], equal_nan=True)
    # the same position labelled from another stream: same legal moves, other values
    game = mid_game(3)
    a, b = label_once(game, 1, search), label_once(mid_game(3), 2, search)
    assert np.array_equal(np.isfinite(a), np.isfinite(b)) and not np.array_equal(a, b, equal_nan=True)


# ---------------------------------------------------------------------------------------------- shards
def test_each_shard_and_generation_plays_its_own_games_and_the_shards_add_up():
    job = LabelJob(games=5, shard_games=2, seed=7, generation=1, belief="none", base="rule",
                   search=SearchLabels(simulations=20))
    assert job.shards == 3 and [job.shard_size(shard) for shard in range(3)] == [2, 2, 1]
    seeds = [job.shard_seed(shard) for shard in range(3)]
    seeds += [replace(job, generation=2).shard_seed(shard) for shard in range(3)] + [replace(job, seed=8).shard_seed(0)]
    assert len(set(seeds)) == len(seeds)
    first, second = label_shard(job, 0), label_shard(job, 1)
    assert len(first[0]) != len(second[0]) or not np.array_equal(first[0], second[0])
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, label_shard(job, 0), strict=True))


def test_the_search_settings_the_labels_depend_on_are_all_recorded():
    job = LabelJob(4, 2, 0, 1, "none", "rule", SearchLabels(simulations=30))
    guided = replace(job, search=SearchLabels(simulations=30, leaf_moves=2))
    assert job.settings()["expert_iteration.leaf_moves"] is None
    assert guided.settings()["expert_iteration.leaf_moves"] == 2
    assert {key: value for key, value in job.settings().items() if value != guided.settings()[key]} == \
        {"expert_iteration.leaf_moves": None}
    settings = job.settings()
    assert (settings["expert_iteration.simulations"], settings["expert_iteration.belief"]) == (30, "counting")
