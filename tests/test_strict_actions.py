"""Strict actions: only integers are actions, in the Gymnasium env, a vector env and the PettingZoo env.

``int(action)`` used to turn ``4.3``, ``"4"``, ``b"4"`` and ``Fraction(9, 2)`` into action 4, ``inf`` into an
OverflowError, and a bad value into "got -1" in the error. Now anything but an integer raises ``TypeError``
naming the value, whatever ``illegal_action`` says, and the game is unchanged.
"""

from __future__ import annotations

from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest

import uno_env  # noqa: F401  (registers Uno-v0)
from uno_env.cards import as_action
from uno_env.env import UnoEnv
from uno_env.game import IllegalActionError
from uno_env.multiagent import UnoAECEnv

NOT_ACTIONS = [4.3, 4.0, "4", b"4", Fraction(9, 2), float("nan"), float("inf"), True, False, None, np.float32(4),
               np.array([4]), np.array([[4]]), np.array(4.0), np.array(True), np.bool_(True), [4], (4,), "x" * 10_000]


def first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@pytest.mark.parametrize("action", [4, np.int8(4), np.uint64(4), np.int64(4), np.array(4), np.array(4, np.int16)])
def test_integers_are_actions(action):
    assert as_action(action) == 4 and type(as_action(action)) is int


@pytest.mark.parametrize("action", NOT_ACTIONS, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("mode", ["lose", "raise"])
def test_non_integers_raise_and_leave_the_game_unchanged(action, mode):
    env = UnoEnv(illegal_action=mode)
    obs, info = env.reset(seed=3)
    with pytest.raises(TypeError, match="an action must be an integer") as error:
        env.step(action)
    assert len(str(error.value)) < 300  # names the value, cut to a sensible length
    assert type(action).__name__ in str(error.value)
    again, _, terminated, _, info2 = env.step(first_legal(info["action_mask"]))  # the env is still usable
    assert "illegal_action" not in info2


def test_the_error_names_the_value_passed():
    env = UnoEnv(illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="got -7"):
        env.step(-7)
    with pytest.raises(TypeError, match="4.3"):
        env.step(4.3)


def test_gym_make_and_vector_envs_are_strict():
    env = gym.make("Uno-v0")
    env.reset(seed=0)
    with pytest.raises(TypeError):
        env.step(2.0)
    vec = gym.make_vec("Uno-v0", num_envs=2, vectorization_mode="sync")
    _, infos = vec.reset(seed=0)
    with pytest.raises(TypeError):
        vec.step(np.array([0.5, 1.5]))
    vec.step(np.array([first_legal(m) for m in infos["action_mask"]]))  # an int array is fine
    vec.close()


@pytest.mark.parametrize("action", [4.3, "4", b"4", float("inf"), True, np.array([1])], ids=repr)
@pytest.mark.parametrize("mode", ["lose", "raise"])
def test_pettingzoo_env_is_strict(action, mode):
    aec = UnoAECEnv(illegal_action=mode)
    aec.reset(seed=5)
    mover = aec.agent_selection
    with pytest.raises(TypeError, match="an action must be an integer"):
        aec.step(action)
    assert aec.agent_selection == mover and not any(aec.terminations.values())
    aec.step(first_legal(aec.observe(mover)["action_mask"]))
