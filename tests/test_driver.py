"""The compiled step sequence's one driver, ``core.play_turn``, and the one outcome table.

The driver's stopping rules (the envs stop at every decision of the agent's seat, the playouts only at real choices,
within a budget) and its forfeit are checked on seeded games against a loop written here from RULES.md's turn; the
outcome table against what each caller pays; and, read from the sources (nothing run), that no other kernel moves a
seat through turns and that no kernel takes a long positional list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from agents.search_kernels import reward_of
from uno_env import core
from uno_env.cards import NUM_ACTIONS
from uno_env.game import Game

ROOT = Path(__file__).resolve().parent.parent
#: The packages whose kernels (every one, the belief filters' too) take at most 10 positional parameters.
KERNEL_PACKAGES = ("uno_env", "agents", "train")
#: The calls that make a move on a packed state; a loop around one of them moves seats through turns.
MOVES = {"play_card", "draw_planned", "apply_action", "_draw"}


def _state(seed: int) -> np.ndarray:
    game = Game.deal(np.random.default_rng(seed), seed & 1)
    return core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current, game.pending_draw)


def _drive(state: np.ndarray, stop_seat: int, stop_forced: bool, budget: int, seed: int) -> tuple[np.ndarray, int]:
    ctl = core.control(stop_seat, stop_forced, core.RULE_POLICY, core.RANDOM_POLICY, budget)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    assert core.play_turn(state, ctl, core.seed_stream(seed), None, None, (), legal, None) == core.DONE
    return ctl, ctl[core.CHOICES]


def _by_hand(state: np.ndarray, stop_seat: int, stop_forced: bool, budget: int, seed: int) -> tuple[int, int]:
    """The same stopping rules, move by move from the kernels' pieces: (moves played, choices at the stop)."""
    stream, legal = core.seed_stream(seed), np.empty(NUM_ACTIONS, dtype=np.int64)
    moves = 0
    while state[core.OUTCOME] == core.RUNNING and moves < budget:
        seat = state[core.CURRENT]
        if seat == stop_seat and stop_forced:
            return moves, 0
        n = core.legal_actions_into(state, legal)
        if n > 1 and seat == stop_seat:
            return moves, n
        policy = core.RULE_POLICY if seat == 0 else core.RANDOM_POLICY
        core.apply_action(state, legal[0] if n == 1 else core.choose(state, legal, n, policy, stream), stream)
        moves += 1
    return moves, 0


@pytest.mark.parametrize(("stop_seat", "stop_forced", "budget"),
                         [(0, True, 10**9), (1, True, 10**9), (0, False, 10**9), (-1, False, 10**9), (-1, False, 7),
                          (1, False, 3)])
def test_the_driver_stops_where_its_control_says(stop_seat, stop_forced, budget):
    forced_stops = 0
    for seed in range(150):
        driven, by_hand = _state(seed), _state(seed)
        ctl, choices = _drive(driven, stop_seat, stop_forced, budget, seed)
        moves, expected = _by_hand(by_hand, stop_seat, stop_forced, budget, seed)
        assert driven.tolist() == by_hand.tolist(), seed
        assert choices == expected and ctl[core.BUDGET] == budget - moves, seed
        if stop_forced and driven[core.OUTCOME] == core.RUNNING:
            assert driven[core.CURRENT] == stop_seat
            forced_stops += core.legal_actions_into(driven, np.empty(NUM_ACTIONS, dtype=np.int64)) == 1
    if stop_forced:  # the envs' stop: a forced draw of the agent is a decision too, and it happens
        assert forced_stops > 0


def test_the_driver_resumes_its_stop_and_forfeits():
    state = _state(3)
    ctl, choices = _drive(state, 0, True, 10**9, 3)
    assert state[core.CURRENT] == 0 and state[core.OUTCOME] == core.RUNNING
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    n = core.legal_actions_into(state, legal)
    ctl[core.ACTION] = legal[n - 1]  # the stop seat's own move, then play on to its next decision
    core.play_turn(state, ctl, core.seed_stream(4), None, None, (), legal, None)
    assert state[core.OUTCOME] != core.RUNNING or state[core.CURRENT] == 0
    for stop_seat in (0, 1):
        state = _state(5)
        ctl = core.control(stop_seat, True, core.RULE_POLICY, core.RULE_POLICY, 10**9)
        ctl[core.ACTION] = core.FORFEIT
        before = state.copy()
        core.play_turn(state, ctl, core.seed_stream(0), None, None, (), legal, None)
        assert state[core.OUTCOME] == 1 - stop_seat and ctl[core.ACTION] == core.NO_ACTION
        before[core.OUTCOME] = 1 - stop_seat
        assert state.tolist() == before.tolist()  # nothing else moved


def test_one_outcome_table():
    assert core.OUTCOME_REWARD.shape == (2, 4)
    for seat in (0, 1):
        assert core.reward(seat, seat) == 1.0 and core.reward(1 - seat, seat) == -1.0
        assert core.reward(core.DRAWN, seat) == core.reward(core.RUNNING, seat) == 0.0
    # the search's 0..1 scale is the table's, mapped
    assert [reward_of(outcome) for outcome in (0, 1, core.DRAWN, core.RUNNING)] == [1.0, 0.0, 0.5, 0.5]


def _kernels(path: str) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / path).read_text())
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            and any("njit" in ast.unparse(decorator) for decorator in node.decorator_list)]


def _called(node: ast.AST) -> set[str]:
    return {call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            for call in ast.walk(node) if isinstance(call, ast.Call)}


def test_no_kernel_takes_more_than_ten_positional_parameters():
    paths = [path.relative_to(ROOT).as_posix() for package in KERNEL_PACKAGES
             for path in sorted((ROOT / package).rglob("*.py"))]
    assert "uno_env/belief/trajectory_kernels.py" in paths
    for path in paths:
        for kernel in _kernels(path):
            count = len(kernel.args.posonlyargs) + len(kernel.args.args)
            assert count <= 10, f"{path}: {kernel.name} takes {count} positional parameters"


def test_one_kernel_moves_seats_through_turns():
    """A loop that makes moves on a packed state exists once, in core.play_turn; every other kernel of the project
    (the belief filters' kernels excepted: they replay logged events, not moves) calls it, or makes one move."""
    movers = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.split("/")[0] not in ("uno_env", "agents", "train") or relative.startswith("uno_env/belief/"):
            continue
        for kernel in _kernels(relative):
            loops = [node for node in ast.walk(kernel) if isinstance(node, ast.For | ast.While)]
            if any(_called(loop) & MOVES for loop in loops):
                movers.append(f"{relative}:{kernel.name}")
    assert movers == ["uno_env/core.py:play_turn"]
