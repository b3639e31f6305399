"""The world critic (agents/world_critic.py, train/training/world_critic.py): the leaf values that read the drawn
world's hidden channels, how they are computed, fitted, saved, refused, and that the search using them still plays
from the public view alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from decisions_testlib import decisions
from uno_testlib import scenario

from agents.actor_kernels import BATCH, WORLD_INPUTS, value_of, values_into
from agents.compiled_actor import actor_params
from agents.guided import guided_search
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from agents.world_critic import FORMAT, WorldCritic, load
from train.training import world_critic as fitting
from uno_env import core
from uno_env.cards import NUM_ACTIONS
from uno_env.game import Game
from uno_env.observation import BASE_SIZE, encode_privileged

SHIPPED = "models/search-q-none/model.zip"


def _critic(seed: int = 0, layers: tuple[int, ...] = (16,)) -> tuple[WorldCritic, torch.nn.Sequential]:
    """A random world critic and the torch MLP it was read from (tanh hidden layers, one output)."""
    torch.manual_seed(seed)
    network = fitting._network(list(layers), "tanh")
    linear = [m for m in network if isinstance(m, torch.nn.Linear)]
    critic = WorldCritic(tuple(m.weight.detach().numpy() for m in linear),
                         tuple(m.bias.detach().numpy() for m in linear), "tanh")
    return critic, network


def _positions(games: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(packed state, the public encoding and the hidden channels of the seat to move) at every decision of random
    games: the world critic's input as the Python definitions give it."""
    return [(state, np.concatenate((np.asarray(view.observation, dtype=np.float32),
                                    encode_privileged(game, game.current)))) for game, state, view in decisions(games)]


def test_the_compiled_world_critic_is_the_torch_mlp_on_the_encoding_and_the_hidden_channels():
    critic, network = _critic(3)
    params = critic.params()
    positions = _positions(6)
    inputs = torch.from_numpy(np.stack([x for _, x in positions]))
    with torch.no_grad():
        expected = network(inputs).squeeze(-1).clamp(-1.0, 1.0).numpy()
        public_only = network(torch.cat((inputs[:, :BASE_SIZE], torch.zeros_like(inputs[:, BASE_SIZE:])), 1))
    compiled = np.array([value_of(state, params) for state, _ in positions])
    assert len(positions) > 150 and inputs.shape[1] == WORLD_INPUTS
    assert np.abs(compiled - expected).max() < 1e-4
    # the hidden channels move the value: a kernel that left them out would be far from the torch values
    assert np.abs(public_only.squeeze(-1).clamp(-1, 1).numpy() - expected).mean() > 1e-2


def test_the_fits_inputs_are_the_ones_the_search_computes():
    positions = _positions(3)
    states = np.stack([state for state, _ in positions]).astype(np.int8)
    out = np.empty((len(positions), WORLD_INPUTS), dtype=np.float32)
    fitting.inputs_into(states, np.arange(len(positions)), out)
    assert np.array_equal(out, np.stack([x for _, x in positions]))


def test_a_batched_pass_of_the_world_critic_is_the_single_one():
    critic, _ = _critic(4, (32, 16))
    params = critic.params()
    states = np.stack([state for state, _ in _positions(4)][:BATCH])
    legal = np.empty((len(states), NUM_ACTIONS), dtype=np.int64)
    batched = np.empty(len(states), dtype=np.float32)
    values_into(states, np.arange(len(states)), len(states), params, legal, batched)
    single = np.array([value_of(state, params) for state in states])
    assert np.abs(batched - single).max() < 1e-5


def _same_public_position(opponent: list[str], deck: list[str]) -> Game:
    """The agent's hand, the pile and the opponent's hand size fixed; the opponent's cards and the deck's order vary."""
    return Game.from_scenario(scenario(["red:5", "blue:7", "green:skip", "wild", "yellow:2"], opponent, ["red:3"],
                                       deck), np.random.default_rng(0))


def test_a_search_with_a_world_critic_plays_from_the_public_view_alone():
    """The critic reads the hidden channels of the worlds the belief draws, never the true ones: two games that
    differ only in what the searching seat cannot see get the same search, visit for visit."""
    critic, _ = _critic(5)
    roots = []
    for opponent, deck in ((["red:9", "red:8", "wild_draw4", "blue:1"], ["green:1", "green:2"]),
                           (["yellow:9", "green:4", "blue:skip", "yellow:1"], ["red:1", "wild"])):
        game = _same_public_position(opponent, deck)
        player = SearchPolicy(simulations=300, belief="particles", n_particles=100,
                              rollout=actor_params(PPOPolicy.load(SHIPPED)), opponent_rollout="rule",
                              value=critic.params(), leaf_moves=1)
        player.reset(11)
        player.observe_start(game.observe(0, consume_events=False))
        action = player.act(game.observe(0))
        roots.append((action, player.last_root))
    assert roots[0] == roots[1]
    assert len(roots[0][1]) > 1


def test_the_guided_search_scores_its_leaves_with_the_world_critic(tmp_path):
    """A world critic that says +1 of every position (its bias beyond the clip) makes every simulation that reaches
    its leaf a win; the network's own critic does not."""
    critic, _ = _critic(6)
    rigged = WorldCritic(tuple(np.zeros_like(w) for w in critic.weights),
                         (*critic.biases[:-1], np.array([3.0], dtype=np.float32)), "tanh")
    rigged.save(tmp_path / "win.npz")
    game = Game.from_scenario(scenario(["red:5", "blue:5", "wild", "wild"], ["yellow:3", "yellow:4", "red:8"],
                                       ["green:5"]), np.random.default_rng(0))
    totals = {}
    for name, path in (("world", tmp_path / "win.npz"), ("network", None)):
        player = guided_search(simulations=120, n_particles=50, leaf_moves=0, critic=path)
        player.reset(2)
        player.observe_start(game.observe(0, consume_events=False))
        player.act(game.observe(0, consume_events=False))
        totals[name] = player.last_root
    # every simulation scores the critic's +1 at its leaf, or a finished game's 0, 1/2 or 1 (a drawn world whose
    # opponent goes out in one turn): whole or half wins only, nearly all of them wins
    world = totals["world"].values()
    assert all(2 * total == round(2 * total) for _, total in world)
    assert sum(total for _, total in world) >= 0.9 * sum(visits for visits, _ in world)
    assert any(2 * total != round(2 * total) for _, total in totals["network"].values())


def test_a_saved_critic_loads_as_it_was(tmp_path):
    critic, _ = _critic(7, (8, 4))
    critic.save(tmp_path / "c.npz")
    loaded = load(tmp_path / "c.npz")
    assert loaded.activation == "tanh" and loaded.meta["format"] == FORMAT
    assert all(np.array_equal(a, b) for a, b in zip(loaded.weights + loaded.biases, critic.weights + critic.biases,
                                                     strict=True))


def _write(path, meta: str | None, **arrays) -> None:
    with open(path, "wb") as file:
        np.savez(file, **({} if meta is None else {"meta": np.array(meta)}), **arrays)


@pytest.mark.parametrize(("content", "match"), [
    (None, "is not a file"),
    ("text", "is not a .npz archive"),
    ({"meta": None}, "no readable 'meta'"),
    ({"meta": '{"format": "something-else"}'}, "of format 'something-else'"),
    ({"meta": f'{{"format": "{FORMAT}", "inputs": 7}}'}, "reads 7 inputs"),
    ({"meta": f'{{"format": "{FORMAT}", "inputs": {WORLD_INPUTS}, "activation": "tanh"}}', "w0": np.zeros((1, 3)),
      "b0": np.zeros(1)}, "layer 0 has weights"),
    ({"meta": f'{{"format": "{FORMAT}", "inputs": {WORLD_INPUTS}, "activation": "tanh"}}',
      "w0": np.zeros((2, WORLD_INPUTS)), "b0": np.zeros(2)}, "one output"),
    ({"meta": f'{{"format": "{FORMAT}", "inputs": {WORLD_INPUTS}, "activation": "sigmoid"}}',
      "w0": np.zeros((1, WORLD_INPUTS)), "b0": np.zeros(1)}, "activation must be one of"),
    ({"meta": f'{{"format": "{FORMAT}", "inputs": {WORLD_INPUTS}}}', "w0": np.zeros((1, WORLD_INPUTS))},
     "expected w0, b0"),
])
def test_a_bad_critic_file_is_refused_by_name(tmp_path, content, match):
    path = tmp_path / "critic.npz"
    if content == "text":
        path.write_text("not an archive")
    elif content is not None:
        meta = content.pop("meta")
        _write(path, meta, **content)
    with pytest.raises(ValueError, match=match):
        load(path)


def test_guided_search_refuses_a_critic_that_is_not_a_world_critic(tmp_path):
    with pytest.raises(ValueError, match="world critic: .* is not a file"):
        guided_search(critic=tmp_path / "missing.npz")


def test_recorded_games_are_the_networks_decisions_and_the_same_for_a_seed():
    params = actor_params(PPOPolicy.load(SHIPPED))
    states, game_of, results = fitting.record(params, 70, seed=4)
    again = fitting.record(params, 70, seed=4)
    assert np.array_equal(states, again[0]) and np.array_equal(results, again[2])
    assert not np.array_equal(states[:50], fitting.record(params, 70, seed=5)[0][:50])
    assert set(np.unique(game_of)) == set(range(70))  # every game has decisions, two batches of games
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for row in states[::7].astype(np.int64):
        assert row[core.CURRENT] == 0 and row[core.OUTCOME] == core.RUNNING
        assert core.legal_actions_into(row, legal) > 1  # a decision with a choice
    assert set(np.unique(results)) <= {-1.0, 0.0, 1.0} and len(set(results)) > 1


def test_the_command_fits_and_writes_a_critic_that_loads(tmp_path, capsys):
    fitting.main([SHIPPED, "--games", "60", "--epochs", "2", "--layers", "8", "--out", str(tmp_path / "c.npz")])
    critic = load(tmp_path / "c.npz")
    assert critic.meta["games"] == 60 and len(critic.meta["held_out_error"]) == 2
    assert critic.weights[0].shape == (8, WORLD_INPUTS)
    assert "held-out squared error" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "match"), [
    (["--games", "5"], "--games must be at least"),
    (["--epochs", "0"], "--epochs and every layer"),
    (["--out", "/nonexistent/folder/c.npz"], "does not exist"),
])
def test_the_command_refuses_bad_arguments(tmp_path, capsys, args, match):
    argv = [SHIPPED, "--games", "60", "--out", str(tmp_path / "c.npz"), *args]
    with pytest.raises(SystemExit):
        fitting.main(argv)
    assert match in capsys.readouterr().err


def test_the_command_refuses_an_unknown_network(tmp_path):
    with pytest.raises(SystemExit, match="neither a shipped agent"):
        fitting.main(["no-such-agent", "--out", str(tmp_path / "c.npz")])


def test_a_fit_learns_what_the_outcomes_say():
    """On recorded games the fitted critic's held-out error falls below the constant's (the mean outcome)."""
    params = actor_params(PPOPolicy.load(SHIPPED))
    states, game_of, results = fitting.record(params, 1500, seed=1)
    held = game_of % fitting.HELD_OUT == 0
    targets = results[game_of]
    constant = float(((targets[held] - targets[~held].mean()) ** 2).mean())
    _, errors = fitting.fit(states, targets, held, [32], "tanh", 4, 3e-3, seed=0, log=lambda _: None)
    assert errors[-1] < constant - 0.02



def test_the_command_refuses_a_network_whose_actor_does_not_compile(tmp_path):
    with pytest.raises(SystemExit, match="search-q-particles: only networks trained with belief='none'"):
        fitting.main(["search-q-particles", "--out", str(tmp_path / "c.npz")])
    assert not (tmp_path / "c.npz").exists()


def test_an_interrupted_fit_writes_nothing_and_ends_with_130(tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fitting, "fit", interrupted)
    with pytest.raises(SystemExit) as stop:
        fitting.main([SHIPPED, "--games", "40", "--out", str(tmp_path / "c.npz")])
    assert stop.value.code == 130 and "interrupted; nothing written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
