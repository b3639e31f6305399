"""Every driver of a game step plays the same games, state by state (OpenSpiel's
``kuhn_poker_test.test_consistent`` walks twin implementations the same way).

The drivers:

* ``engine``: :class:`~uno_env.game.Game` and :class:`~uno_env.seat.Seat` walked here directly, with the env's
  seeding (the game seed is the first draw of Gymnasium's generator for the reset seed) and the reward of RULES.md
  (+1 / -1 / 0 from ``info["winner"]``), so nothing of ``uno_env/env.py`` is in it;
* ``python``: :class:`~uno_env.env.UnoEnv` stepping the ``Game`` in Python (its opponent a subclass of the built-in
  policy, which has no compiled twin);
* ``compiled``: ``UnoEnv`` on its compiled path (:mod:`uno_env.single`; the built-in policy itself);
* ``vector1`` and ``vectorN``: :class:`~uno_env.vector.UnoVectorEnv` with one sub-env and with several.

What is meant to be identical, and where the drivers legitimately part (docs/design.md, "Compiled kernels and their
Python twin"):

1. **engine, python, compiled**: for the same reset seed (or scenario) and the same agent actions, everything at
   every step, through reshuffles, impossible draws, illegal actions and steps after the end: the whole position
   (both hands, the deck order, the discard pile, the colour in force, the seat to move, the pending draw, the
   outcome), the observation, the mask (``info`` and ``action_masks()``), the reward, ``terminated``, ``truncated``
   (``TimeLimit``) and the whole ``info`` (events with the agent's drawn cards, ``winner``, ``is_success``,
   ``illegal_action``). The compiled path shuffles with the game's ``Generator`` and replays the random opponent's
   draws, so this holds for both built-in opponents.
2. **vector1 and vectorN**: sub-env ``i`` of a vector seeded ``s`` is the one-game vector seeded ``s + i``: positions,
   observations, masks, rewards, flags and every per-row ``info`` entry (with its ``"_key"`` mask) agree over many
   games, autoresets and truncations, against every built-in opponent and a mix.
3. **the vector env and the single envs**: the vector env deals and reshuffles from its own splitmix64 stream, and its
   ``random`` opponent chooses from it too, so a seed gives it other games than ``UnoEnv`` and a random opponent
   other moves: these are *not* meant to match. What is: a single env reset from the vector's position
   (``scenario(i)``) with the deterministic ``rule`` opponent gives the same positions, observations (``counting``
   features included), masks, rewards, ends and ``is_success`` as the sub-env for the same actions, until a
   reshuffle. The walk then skips that step, starts the single env again from the vector's position (keeping its
   ``TimeLimit`` count) and goes on, so whole games are compared except their reshuffling steps. One flag differs
   by design of the two wrappers: a game that ends on its last allowed step is ``terminated`` and ``truncated`` under
   Gymnasium's ``TimeLimit`` (it sets ``truncated`` whenever the count is reached), ``terminated`` only in the
   vector env (its truncation is for games still running); the walk compares the vector's flag with the single
   env's ``truncated and not terminated``.

Agents: a seeded random legal action, and the rule player's choice (:class:`~uno_env.opponents.RulePolicy` on the
agent's seat). ``tests/test_single.py``, ``tests/test_vector_env.py`` and ``tests/test_endings.py`` hold narrower
twins of these comparisons; this file is the one that walks every driver.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding
from uno_testlib import capped, counts_of, deck_names, minus, same, scenario

from uno_env import core
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.seat import Seat, start_game
from uno_env.vector import UnoVectorEnv

#: RULES.md, "Outcome and reward": the agent's reward by ``info["winner"]``.
REWARD = {"agent": 1.0, "opponent": -1.0, "draw": 0.0}
BUILT_IN = {"random": RandomPolicy, "rule": RulePolicy}


class PythonRandom(RandomPolicy):
    """``random`` without a compiled twin: ``UnoEnv`` steps its game in Python."""


class PythonRule(RulePolicy):
    """``rule`` without a compiled twin: ``UnoEnv`` steps its game in Python."""


PYTHON_TWIN = {"random": PythonRandom, "rule": PythonRule}


# ---------------------------------------------------------------------------------------------- the engine driver
class EngineDriver:
    """``UnoEnv``'s contract walked on the engine itself (``Game`` + ``Seat``); the reward from RULES.md."""

    def __init__(self, opponent: str, first_player: str = "random", max_episode_steps: int | None = None) -> None:
        self.agent = Seat(0)
        self.opponent = Seat(1, BUILT_IN[opponent]())
        self.first_player = {"agent": 0, "opponent": 1, "random": None}[first_player]
        self.max_episode_steps = max_episode_steps
        self.game: Game | None = None

    def reset(self, seed: int, options: dict | None = None) -> tuple[np.ndarray, dict]:
        start = Game.from_scenario(options["scenario"], np.random.default_rng(0)) if options else None
        np_random, _ = seeding.np_random(seed)  # what gym.Env.reset(seed=seed) makes; UnoEnv draws the game seed
        self.game = start_game((self.agent, self.opponent), int(np_random.integers(2**62)), self.first_player, start)
        self.steps = 0
        self._opponent_moves()
        return self._observe(), self.view.to_info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        game = self.game
        self.steps += 1
        truncated = self.max_episode_steps is not None and self.steps >= self.max_episode_steps
        if game.done:
            return self.obs.copy(), 0.0, True, truncated, self.view.to_info()
        if not game.is_legal(action):
            game.forfeit(0)
            self._observe()
            info = self.view.to_info()
            info["illegal_action"] = True
            return self.obs.copy(), REWARD[info["winner"]], True, truncated, info
        game.apply(action)
        self._opponent_moves()
        obs = self._observe()
        info = self.view.to_info()
        return obs, REWARD[info["winner"]] if game.done else 0.0, game.done, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.view.action_mask.astype(bool)

    @property
    def unwrapped(self) -> EngineDriver:
        return self

    def _opponent_moves(self) -> None:
        while not self.game.done and self.game.current == 1:
            self.opponent.play(self.game)

    def _observe(self) -> np.ndarray:
        self.view = self.agent.observe(self.game)
        self.obs = self.view.observation
        return self.obs.copy()


def game_of(driver: Any) -> Game:
    """The driver's game as a ``Game`` (the compiled path rebuilds one from its packed state)."""
    env = driver.unwrapped
    return env.game if isinstance(env, EngineDriver) else env._table.to_game()


def position(game: Game) -> tuple:
    """Everything of a game's state: hands, deck order, discard pile, colour, seat to move, pending draw, outcome."""
    return (tuple(game.hands[0]), tuple(game.hands[1]), tuple(game.deck), tuple(game.discard), game.active_colour,
            game.current, game.pending_draw, game.outcome)


def single_drivers(opponent: str, max_episode_steps: int | None = None, **kwargs: Any) -> dict[str, Any]:
    """The engine, the Python single env and the compiled one, against ``opponent``."""
    def env(policy: Any) -> Any:
        made = UnoEnv(opponent=policy, **kwargs)
        return made if max_episode_steps is None else gym.wrappers.TimeLimit(made, max_episode_steps)

    drivers = {"engine": EngineDriver(opponent, kwargs.get("first_player", "random"), max_episode_steps),
               "python": env(PYTHON_TWIN[opponent]()), "compiled": env(opponent)}
    assert drivers["python"].unwrapped._twin is None and drivers["compiled"].unwrapped._twin is not None, \
        "the test must drive both paths of UnoEnv"
    return drivers


# ---------------------------------------------------------------------------------------------- the agents
def agent_action(agent: str, rng: np.random.Generator, mask: np.ndarray, hand: list[str],
                 opponent_hand_size: int) -> int:
    """The agent's action: a seeded random legal one, or the rule player's from the agent's seat."""
    legal = np.flatnonzero(mask).tolist()
    if agent == "random":
        return int(rng.choice(legal))
    return RulePolicy().act_legal(legal, counts_of(hand), opponent_hand_size)


def info_action(agent: str, rng: np.random.Generator, info: dict) -> int:
    return agent_action(agent, rng, info["action_mask"], info["hand"], info["opponent_hand_size"])


# ---------------------------------------------------------------------------------------------- 1. single drivers
def agree(outputs: dict[str, tuple], drivers: dict[str, Any], where: str) -> None:
    """Every driver's outputs, mask and position equal the engine's."""
    reference = outputs["engine"]
    expected = position(game_of(drivers["engine"]))
    for name in drivers:
        assert same(outputs[name], reference), f"{where}: {name} gave {outputs[name]}, the engine {reference}"
        mask = drivers[name].unwrapped.action_masks()
        assert same(mask, drivers["engine"].action_masks()), f"{where}: {name}'s mask"
        assert position(game_of(drivers[name])) == expected, f"{where}: {name}'s position differs from the engine's"


def walk_single(drivers: dict[str, Any], seed: int, agent: str, options: dict | None = None,
                illegal_at: int | None = None) -> Counter:
    """Reset every driver with ``seed`` and play one game with the same agent actions, comparing every step."""
    rng = np.random.default_rng(seed + 7919)
    seen: Counter = Counter()
    outputs = {name: driver.reset(seed=seed, options=options) for name, driver in drivers.items()}
    agree(outputs, drivers, f"seed {seed} reset")
    info = outputs["engine"][1]
    for step in capped(2000):
        action = info_action(agent, rng, info)
        if step == illegal_at:
            action = int(np.flatnonzero(info["action_mask"] == 0)[0])
        outputs = {name: driver.step(action) for name, driver in drivers.items()}
        agree(outputs, drivers, f"seed {seed} step {step}")
        _, _, terminated, truncated, info = outputs["engine"]
        seen["steps"] += 1
        seen["reshuffles"] += sum(event["kind"] == "reshuffle" for event in info["events"])
        seen["opponent moves"] += sum(event.get("player") == "opponent" for event in info["events"])
        if terminated or truncated:
            seen["terminated" if terminated else "truncated"] += 1
            seen["agent wins"] += info.get("winner") == "agent"
            outputs = {name: driver.step(action) for name, driver in drivers.items()}  # past the end
            agree(outputs, drivers, f"seed {seed} after the end")
            return seen
    return seen  # not reached: capped fails the test first


@pytest.mark.parametrize("agent", ["random", "rule"])
@pytest.mark.parametrize("opponent", ["random", "rule"])
def test_seeded_games_on_the_engine_and_both_single_env_paths(opponent: str, agent: str) -> None:
    drivers = single_drivers(opponent)
    seen: Counter = Counter()
    for seed in range(100):
        seen += walk_single(drivers, seed, agent)
    # The walk covered what parts the paths: reshuffles (the game's Generator; the scenarios below have many more),
    # many opponent choices, both results.
    assert seen["terminated"] == 100 and seen["reshuffles"] >= 1 and seen["opponent moves"] > 2000, seen
    assert 20 < seen["agent wins"] < 80, seen


@pytest.mark.parametrize("kwargs", [{"first_player": "agent"}, {"first_player": "opponent"},
                                    {"max_episode_steps": 12}])
def test_options_on_the_engine_and_both_single_env_paths(kwargs: dict) -> None:
    seen: Counter = Counter()
    for opponent in ("random", "rule"):
        drivers = single_drivers(opponent, **kwargs)
        for seed in range(12):
            seen += walk_single(drivers, 100 + seed, "random")
    assert seen["truncated" if "max_episode_steps" in kwargs else "terminated"] > 5, seen


def test_illegal_actions_on_the_engine_and_both_single_env_paths() -> None:
    for opponent in ("random", "rule"):
        drivers = single_drivers(opponent)
        for seed in range(6):
            walk_single(drivers, seed, "random", illegal_at=seed % 3)


def _deck_runs_low(to_move: str) -> dict:
    """From test_single: two cards in the deck, the discard pile long: reshuffles (and impossible draws) come early."""
    names = deck_names()
    wilds = [name for name in names[82:] if name.startswith("wild")]
    discard = [name for name in reversed(names[82:]) if not name.startswith("wild")]
    return {"agent_hand": names[:40] + wilds, "opponent_hand": names[40:80], "deck": names[80:82],
            "discard": discard, "to_move": to_move, "pending_draw": 0}


def _pending_on_a_thin_deck(pending: int) -> dict:
    """A pending +2/+4 at the agent with one card in the deck and the rest of the cards under the top card."""
    top = "yellow:draw2" if pending == 2 else "wild_draw4"
    return scenario(["red:7", "blue:1", "green:skip", "wild"], ["green:2", "yellow:5", "red:reverse"], [top],
                    ["blue:9"], rest="discard", pending_draw=pending, active_colour="green" if pending == 4 else None)


def _deck_empty_hands_even() -> dict:
    """A +2 pending with one card in the deck and nothing under the top: the draw is impossible at once."""
    rest = minus(deck_names(), ["red:draw2", "blue:0"])
    return scenario(rest[:53], rest[53:], ["red:draw2"], ["blue:0"], pending_draw=2)


SCENARIOS = {
    "deck runs low": _deck_runs_low("agent"),
    "deck runs low, opponent first": _deck_runs_low("opponent"),
    "+2 on a thin deck": _pending_on_a_thin_deck(2),
    "+4 on a thin deck": _pending_on_a_thin_deck(4),
    "wild on top, big hands": scenario(deck_names()[:20], deck_names()[20:44], ["wild"], rest="deck",
                                       active_colour="yellow"),
    "draw impossible, equal hands": _deck_empty_hands_even(),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenarios_on_the_engine_and_both_single_env_paths(name: str) -> None:
    seen: Counter = Counter()
    for opponent in ("random", "rule"):
        drivers = single_drivers(opponent)
        for seed in range(8):
            seen += walk_single(drivers, seed, "random" if seed % 2 else "rule", {"scenario": SCENARIOS[name]})
    assert seen["terminated"] == 16, seen
    if "thin deck" in name or "low" in name:
        assert seen["reshuffles"] >= 16, seen


# ---------------------------------------------------------------------------------------------- 2. batch 1 and N
def vector_action(agent: str, rng: np.random.Generator, env: UnoVectorEnv, index: int, mask: np.ndarray) -> int:
    """The agent's action in sub-env ``index`` (its hand read from the sub-env's position); 0 in a finished game,
    whose next step deals the next one and ignores the action."""
    try:
        at = env.scenario(index)
    except ValueError:
        return 0
    return agent_action(agent, rng, mask, at["agent_hand"], len(at["opponent_hand"]))


def row_info(info: dict, i: int) -> dict:
    """Sub-env ``i``'s entries of a vector ``info`` (Gymnasium's layout: a value array and its ``"_key"`` mask)."""
    out = {"action_mask": info["action_mask"][i]}
    for key, values in info.items():
        if key != "action_mask" and not key.startswith("_") and info[f"_{key}"][i]:
            out[key] = values[i]
    return out


def vector_position(env: UnoVectorEnv, i: int) -> tuple | None:
    """Sub-env ``i``'s position, or None once its game is over."""
    try:
        return position(Game.from_scenario(env.scenario(i), np.random.default_rng(0)))
    except ValueError:
        return None


@pytest.mark.parametrize("opponent", ["random", "rule", "mix"])
def test_a_batch_plays_its_sub_envs_games(opponent: str) -> None:
    """Sub-env i of the vector seeded s is the one-game vector seeded s + i, step for step, game after game."""
    n, seed, mix = 5, 40, {"random": 1.0, "rule": 2.0}
    kwargs = {"opponent": mix if opponent == "mix" else opponent, "max_episode_steps": 30}
    batch = UnoVectorEnv(n, **kwargs)
    ones = [UnoVectorEnv(1, **kwargs) for _ in range(n)]
    rngs = [np.random.default_rng(i) for i in range(n)]
    outputs = batch.reset(seed=seed)
    singles = [one.reset(seed=seed + i) for i, one in enumerate(ones)]
    seen: Counter = Counter()
    for step in range(240):
        for i in range(n):
            obs, info = outputs[0], outputs[-1]
            one_obs, one_info = singles[i][0], singles[i][-1]
            where = f"step {step}, sub-env {i}"
            assert same(obs[i], one_obs[0]), where
            assert same(row_info(info, i), row_info(one_info, 0)), where
            assert vector_position(batch, i) == vector_position(ones[i], 0), where
            if len(outputs) == 5:
                assert same([part[i] for part in outputs[1:4]], [part[0] for part in singles[i][1:4]]), where
                seen["ends"] += bool(outputs[2][i] or outputs[3][i])
                seen["truncated"] += bool(outputs[3][i])
        agent = "rule" if step % 2 else "random"
        actions = np.array([vector_action(agent, rngs[i], batch, i, outputs[-1]["action_mask"][i])
                            for i in range(n)])
        outputs = batch.step(actions)
        singles = [one.step(actions[i:i + 1]) for i, one in enumerate(ones)]
    assert seen["ends"] >= 20 and seen["truncated"] >= 1, seen


# ---------------------------------------------------------------------------------------------- 3. vector vs single
def walk_vector_against_singles(vector: UnoVectorEnv, make_single: Any, outputs: tuple, agent: str,
                                steps: int) -> Counter:
    """Step ``vector`` (just reset, ``outputs`` its reset's) and one single env per sub-env with the same actions,
    each single env started from its sub-env's position; compare them until a reshuffle parts them, then start the
    single env again from the vector's position (module docstring, 3)."""
    n = vector.num_envs
    singles = [make_single() for _ in range(n)]
    infos: list[dict] = [{}] * n  # each single env's last info, for the agent's next action
    rng = np.random.default_rng(agent == "rule")
    seen: Counter = Counter()
    start = np.full(n, _NEW_GAME)  # every sub-env is at a game's start: its single env must start there
    dealing = np.zeros(n, dtype=bool)  # the sub-env's game ended: its next step deals the next one
    for _ in range(steps):
        obs, info = outputs[0], outputs[-1]
        for i in np.flatnonzero(start):
            # A new game restarts the single env's TimeLimit; a game going on after a reshuffle keeps its count.
            env = singles[i] if start[i] == _NEW_GAME else singles[i].unwrapped
            single_obs, infos[i] = env.reset(seed=int(i), options={"scenario": vector.scenario(i)})
            assert same(obs[i], single_obs) and same(info["action_mask"][i], infos[i]["action_mask"])
        start[:] = _GOING_ON
        actions = np.array([info_action(agent, rng, infos[i]) for i in range(n)])
        outputs = vector.step(actions)
        obs, rewards, terminated, truncated, info = outputs
        for i in range(n):
            if dealing[i]:  # this step dealt the sub-env's next game (the action ignored): the single env starts there
                dealing[i], start[i] = False, _NEW_GAME
                continue
            single_obs, reward, single_terminated, single_truncated, infos[i] = singles[i].step(int(actions[i]))
            dealing[i] = terminated[i] or truncated[i]
            if any(event["kind"] == "reshuffle" for event in infos[i]["events"]):
                seen["reshuffles"] += 1  # each side shuffled with its own generator: the games part here
                start[i] = _GOING_ON if dealing[i] else _RESYNC
                continue
            where = f"sub-env {i}"
            assert same(obs[i], single_obs), where
            assert same(info["action_mask"][i], infos[i]["action_mask"]), where
            # A game ending on its last allowed step: TimeLimit flags it truncated too, the vector env terminated only.
            single_truncated = single_truncated and not single_terminated
            assert (rewards[i], terminated[i], truncated[i]) == (reward, single_terminated, single_truncated), where
            if dealing[i]:
                assert info["_is_success"][i] and info["is_success"][i] == infos[i].get("is_success", False), where
                seen["terminated" if terminated[i] else "truncated"] += 1
            else:
                assert vector_position(vector, i) == position(game_of(singles[i])), where
            seen["compared"] += 1
    return seen


_GOING_ON, _NEW_GAME, _RESYNC = 0, 1, 2


def single_env_maker(path: str, belief: str, max_episode_steps: int | None) -> Any:
    """A maker of single envs against ``rule`` on ``path`` (the compiled one, or Python)."""
    def make() -> Any:
        env = UnoEnv(opponent="rule" if path == "compiled" else PythonRule(), belief=belief)
        assert (env._twin is not None) == (path == "compiled"), "the test must drive the path it names"
        return env if max_episode_steps is None else gym.wrappers.TimeLimit(env, max_episode_steps)
    return make


@pytest.mark.parametrize(("path", "belief"), [("compiled", "none"), ("python", "none"), ("python", "counting")])
@pytest.mark.parametrize("n", [1, 6])
def test_the_vector_env_plays_the_single_envs_games_from_its_positions(path: str, belief: str, n: int) -> None:
    steps = 720 // n
    seen: Counter = Counter()
    for agent in ("random", "rule"):
        vector = UnoVectorEnv(n, opponent="rule", belief=belief, max_episode_steps=60)
        outputs = vector.reset(seed=3)
        seen += walk_vector_against_singles(vector, single_env_maker(path, belief, 60), outputs, agent, steps)
    # Ordinary games rarely reshuffle (about one in a hundred here): the scenarios below walk reshuffles.
    assert seen["compared"] > 1000 and seen["terminated"] >= 40 and seen["truncated"] >= 1, seen


def test_the_vector_env_plays_the_single_envs_games_from_the_scenarios() -> None:
    """The scenarios where the agent moves first, packed into sub-envs (as the kernel holds a game), against single
    envs started from them; the vector then deals its next games, on which the walk goes on."""
    starts = [s for s in SCENARIOS.values() if s["to_move"] == "agent"]
    seen: Counter = Counter()
    for path in ("compiled", "python"):
        vector = UnoVectorEnv(len(starts), opponent="rule", max_episode_steps=40)
        vector.reset(seed=0)
        for i, start in enumerate(starts):
            game = Game.from_scenario(start, np.random.default_rng(0))
            core.pack_into(vector._states[i], game.hands, game.deck, game.discard, game.active_colour, game.current,
                           game.pending_draw)
            vector._masks[i] = 0
            vector._masks[i, game.legal_actions()] = 1
            vector._obs[i] = UnoEnv().reset(options={"scenario": start})[0]
        outputs = (vector._obs.copy(), {"action_mask": vector._masks.copy()})
        seen += walk_vector_against_singles(vector, single_env_maker(path, "none", 40), outputs, "rule", 60)
    assert seen["compared"] > 200 and seen["reshuffles"] >= 2, seen
