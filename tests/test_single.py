"""The single env's compiled path (uno_env.single) plays exactly the games of the Python path.

The Python path is forced by a subclass of the built-in policy: it decides the same (it inherits ``act``), but is not
the exact class with a compiled twin (``Seat.compiled_twin``), so ``UnoEnv`` steps its ``Game`` in Python.
"""

from __future__ import annotations

import pickle
from typing import Any

import numba
import numpy as np
import pytest
from uno_testlib import capped, same

import uno_env.single
from uno_env.core import generator_below, generator_random
from uno_env.env import UnoEnv
from uno_env.game import IllegalActionError
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.styles import STYLES


class PythonRandom(RandomPolicy):
    """``random``, played through the Python path."""


class PythonRule(RulePolicy):
    """``rule``, played through the Python path."""


# The styles' Python twins likewise: a subclass of each style's class (uno_env.styles).
_TWINS = {"random": PythonRandom, "rule": PythonRule,
          **{name: type(f"Python{cls.__name__}", (cls,), {}) for name, cls in STYLES.items()}}


def envs(opponent: str, **kwargs: Any) -> tuple[UnoEnv, UnoEnv]:
    compiled, python = UnoEnv(opponent=opponent, **kwargs), UnoEnv(opponent=_TWINS[opponent](), **kwargs)
    assert compiled._twin is not None and python._twin is None, "the test must compare the two paths"
    return compiled, python


def play_both(compiled: UnoEnv, python: UnoEnv, seed: int, action_seed: int, options: dict | None = None,
              illegal_at: int | None = None) -> dict[str, int]:
    """Reset both with ``seed`` and play the same random legal actions, checking every output is identical."""
    rng = np.random.default_rng(action_seed)
    seen = {"steps": 0, "reshuffles": 0, "opponent_moves": 0}
    outputs = [env.reset(seed=seed, options=options) for env in (compiled, python)]
    assert same(outputs[0], outputs[1]), f"reset differs, seed {seed}"
    info = outputs[0][1]
    for step in capped(2000):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        if step == illegal_at:
            action = int(np.flatnonzero(info["action_mask"] == 0)[0])
        outputs = [env.step(action) for env in (compiled, python)]
        assert same(outputs[0], outputs[1]), f"step {step} differs, seed {seed}: {outputs[0][4]} vs {outputs[1][4]}"
        assert same(compiled.action_masks(), python.action_masks())
        info = outputs[0][4]
        seen["steps"] += 1
        seen["reshuffles"] += sum(event["kind"] == "reshuffle" for event in info["events"])
        seen["opponent_moves"] += sum(event.get("player") == "opponent" for event in info["events"])
        if outputs[0][2]:
            again = [env.step(0) for env in (compiled, python)]  # a finished game: nothing changes
            assert same(again[0], again[1])
            break
    return seen


def play_seeds(compiled: UnoEnv, python: UnoEnv, seeds: int, action_offset: int) -> dict[str, int]:
    """:func:`play_both` on game seeds ``0..seeds-1`` (actions seeded ``seed + action_offset``); what they covered."""
    seen = {"steps": 0, "reshuffles": 0, "opponent_moves": 0}
    for seed in range(seeds):
        for key, count in play_both(compiled, python, seed, seed + action_offset).items():
            seen[key] += count
    return seen


@pytest.mark.parametrize("opponent", ["random", "rule"])
def test_compiled_path_plays_the_python_paths_games(opponent: str) -> None:
    seen = play_seeds(*envs(opponent), 60, 1000)
    # The comparison covered reshuffles (the game's Generator, in Python) and many opponent decisions.
    assert seen["reshuffles"] > 0 and seen["opponent_moves"] > 500, seen


@pytest.mark.parametrize("opponent", ["random", "rule"])
@pytest.mark.parametrize("belief", ["counting", "particles"])
def test_compiled_path_gives_the_python_paths_belief_features(opponent: str, belief: str) -> None:
    """With belief features the observations (features included, bit for bit) are the Python path's: counting's read
    off the kernel state, the particle filter's from the views the compiled path builds for its tracker (so the views
    and the particles' draws are the same)."""
    seen = play_seeds(*envs(opponent, belief=belief, n_particles=200), 60, 500)
    assert seen["opponent_moves"] > 100 and seen["reshuffles"] > 0, seen


@pytest.mark.parametrize("opponent", sorted(STYLES))
def test_compiled_path_plays_each_styles_python_games(opponent: str) -> None:
    """Every style is a compiled player, and its compiled twin plays its Python policy's games, draw for draw."""
    assert play_seeds(*envs(opponent), 20, 1000)["opponent_moves"] > 150


@pytest.mark.parametrize("opponent", ["random", "noisy-rule"])
def test_compiled_path_refills_the_random_words(opponent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With tiny refills the kernel asks for words again and again mid-turn (noisy-rule's random() and integers(n)
    interleave whole and half words across them); the games stay the same."""
    monkeypatch.setattr(uno_env.single, "_REFILL_WORDS", 9)
    compiled, python = envs(opponent)
    for seed in range(10):
        play_both(compiled, python, seed, seed)


@pytest.mark.parametrize("kwargs", [{"first_player": "opponent"}, {"first_player": "agent"}, {"dict_obs": True},
                                    {"render_mode": "ansi"}])
def test_compiled_path_options(kwargs: dict[str, Any]) -> None:
    compiled, python = envs("rule", **kwargs)
    for seed in range(8):
        play_both(compiled, python, seed, seed)
        if kwargs.get("render_mode"):
            assert compiled.render() == python.render()


def test_compiled_path_scenario_with_reshuffles() -> None:
    """A scenario with a nearly empty deck: reshuffles (and an impossible draw, which ends the game) come early."""
    from uno_env.cards import card_name, full_deck

    cards = [card_name(card) for card in full_deck()]
    scenario = {"agent_hand": cards[:40], "opponent_hand": cards[40:80], "deck": cards[80:82],
                "discard": cards[82:108][::-1], "to_move": "agent", "pending_draw": 0}
    scenario["discard"] = [name for name in scenario["discard"] if not name.startswith("wild")]
    scenario["agent_hand"] += [name for name in cards[82:108] if name.startswith("wild")]
    reshuffles = 0
    for opponent in ("random", "rule"):
        compiled, python = envs(opponent)
        for seed in range(15):
            reshuffles += play_both(compiled, python, seed, seed, options={"scenario": scenario})["reshuffles"]
    assert reshuffles > 0


def test_compiled_path_illegal_actions() -> None:
    compiled, python = envs("random")
    play_both(compiled, python, 3, 3, illegal_at=2)  # "lose": the same loss and info
    compiled, python = envs("random", illegal_action="raise")
    for env in (compiled, python):
        _, info = env.reset(seed=4)
        illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
        with pytest.raises(IllegalActionError) as raised:
            env.step(illegal)
        env.messages = str(raised.value)
    assert compiled.messages == python.messages


def test_compiled_path_plays_play_games_games() -> None:
    """The same game as play_game's (uno_env.match): the agent replays seat 0's moves of a play_game between two
    random policies, and the env's opponent, seeded alike, answers with seat 1's."""
    for seed in range(10):
        env = UnoEnv(opponent="random", first_player="agent")
        recorder = Recorder()
        result = play_game((recorder, RandomPolicy()), seed=_game_seed(env, seed), first_player=0)
        _, info = env.reset(seed=seed)
        terminated = False
        for action in recorder.actions:
            assert not terminated
            _, reward, terminated, _, info = env.step(action)
        assert recorder.actions and terminated
        assert info["winner"] == {0: "agent", 1: "opponent", -1: "draw"}[result.winner]


class Recorder(RandomPolicy):
    """A random player that records its actions (Python path: a subclass)."""

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.actions: list[int] = []

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        action = super().act_legal(legal, hand, opponent_hand_size)  # what act calls too
        self.actions.append(action)
        return action


def _game_seed(env: UnoEnv, seed: int) -> int:
    """The game seed UnoEnv.reset(seed=seed) derives (its generator's first draw), for play_game."""
    from gymnasium.utils import seeding

    rng, _ = seeding.np_random(seed)
    return int(rng.integers(2**62))


def test_the_generator_draws_are_numpys() -> None:
    """integers(n) and random() computed from a generator's 64-bit words and its kept half-word are numpy's, in any
    interleaving (random() takes a whole word and leaves a kept half for the next 32-bit draw)."""
    for seed in range(20):
        words, rng = np.random.default_rng(seed).bit_generator.random_raw(5000), np.random.default_rng(seed)
        position, half = 0, -1
        kinds = np.random.default_rng(seed + 99).integers(0, 3, size=1000)
        for kind, n in zip(kinds, np.random.default_rng(seed + 98).integers(2, 62, size=1000), strict=True):
            if kind == 0:
                assert generator_random(words[position]) == rng.random()
                position += 1
            else:
                value, position, half = generator_below(words, position, half, int(n))
                assert value == rng.integers(int(n))
    # Lemire's rejection: with a huge bound the first draw is rejected now and then, and the results still agree.
    rng, words = np.random.default_rng(5), np.random.default_rng(5).bit_generator.random_raw(5000)
    position, half, draws = 0, -1, 0
    for _ in range(2000):
        before = (position, half)
        value, position, half = generator_below(words, position, half, 3 * 2**30)
        draws += 2 * (position - before[0]) + (before[1] >= 0) - (half >= 0)
        assert value == rng.integers(3 * 2**30)
    assert draws > 2000, "no rejection exercised"


@pytest.mark.parametrize("opponent", ["random", "rule", "hold-wilds"])
def test_the_kernels_buffers_have_the_types_its_entry_point_was_compiled_for(opponent: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The step kernel is called at its compiled entry point, past numba's dispatch: that code trusts each array's
    layout (a strided array where it expects a contiguous one would be read wrongly, not refused), so every buffer
    must be exactly of uno_env.single's _RUN_TYPES, also after the random words were refilled and after a pickle."""
    monkeypatch.setattr(uno_env.single, "_REFILL_WORDS", 9)  # refills mid-game
    env = UnoEnv(opponent=opponent)
    _, info = env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in capped(2000):
        _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if terminated:
            break
    for table in (env._twin, pickle.loads(pickle.dumps(env))._twin):
        buffers = (table.state, table.ctl, table.opponent, table.words, table.legal, table.log, table.obs, table.hand)
        assert tuple(map(numba.typeof, buffers)) == uno_env.single._RUN_TYPES
