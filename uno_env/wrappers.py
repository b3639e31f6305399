"""Gymnasium wrappers for RL code that reads the action mask differently, or cannot use one.

Which to use:

* **sb3-contrib's MaskablePPO** needs nothing: it calls ``action_masks()``, which it finds through
  ``gym.make``'s wrappers. Your own loop calls ``env.unwrapped.action_masks()`` (or
  ``env.get_wrapper_attr("action_masks")()``), or reads ``info["action_mask"]``; a bare
  ``env.action_masks()`` on what ``gym.make`` returns fails, as with any method Gymnasium's wrappers do
  not forward.
* **RLlib, Tianshou, your own masked network**: :class:`ActionMaskObservation` puts the mask into the
  observation, ``{"observation": ..., "action_mask": ...}``.
* **Algorithms that cannot mask** (plain PPO, DQN, A2C, rl-zoo3): :class:`IllegalMovePenalty` turns an
  illegal move into a small negative reward and another try at the same position, instead of the
  env's default (an illegal move loses the game, which leaves an unmasked learner with nothing but losses).

    env = IllegalMovePenalty(gym.make("Uno-v0", opponent="rule"), penalty=-0.1)
    model = PPO("MlpPolicy", env).learn(100_000)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from uno_env.cards import NUM_ACTIONS, as_action


class ActionMaskObservation(gym.Wrapper):
    """Observations become ``{"observation": obs, "action_mask": mask}`` (the format RLlib and Tianshou read).

    ``action_mask`` is an ``int8`` vector of 61 entries, 1 for each legal action (the env's
    ``info["action_mask"]``): never all zero, only ``60`` (draw) once the game is over.
    ``"observation"`` is the wrapped env's observation, flat ``Box`` or ``Dict`` alike.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = spaces.Dict({
            "observation": env.observation_space,
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
        })

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._with_mask(obs, info), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_mask(obs, info), reward, terminated, truncated, info

    @staticmethod
    def _with_mask(obs: Any, info: dict[str, Any]) -> dict[str, Any]:
        return {"observation": obs, "action_mask": np.asarray(info["action_mask"], dtype=np.int8).copy()}


class IllegalMovePenalty(gym.Wrapper):
    """For algorithms that cannot mask: an illegal move costs ``penalty`` and the agent moves again.

    An illegal action (an integer outside the mask, or outside 0..60) does not reach the game: ``step`` returns
    the same observation, reward ``penalty`` (default -0.1), ``terminated = truncated = False``, and ``info`` as
    before with
    ``info["illegal_action"] = True``. Every ``info`` carries ``illegal_moves``, the episode's count so
    far, so a logger can watch the learner stop trying. After ``max_retries`` illegal moves in a row at
    one position (default 500; a uniformly random player needs more than 500 tries for one legal move
    out of 61 about once in 4,000 positions) the next illegal action is passed to the env, whose
    ``illegal_action`` setting applies (by default the game is lost): a stuck agent cannot loop for ever. An action
    that is not an integer (a float, even ``0.5``, a string) raises ``TypeError`` naming it, as the env does.

    Legality comes from ``info["action_mask"]``, so this wraps ``Uno-v0`` with or without
    ``gym.make``'s wrappers (put it outside ``TimeLimit``: retries do not count as steps).
    """

    def __init__(self, env: gym.Env, penalty: float = -0.1, max_retries: int = 500) -> None:
        super().__init__(env)
        if not penalty <= 0.0:
            raise ValueError(f"penalty must be a number <= 0 (a cost), got {penalty!r}")
        if not (isinstance(max_retries, int) and max_retries >= 0):
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.penalty = float(penalty)
        self.max_retries = max_retries
        self.illegal_moves = 0
        self._retries = 0  # illegal moves in a row at the current position
        self._obs: Any = None
        self._info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.illegal_moves = self._retries = 0
        return self._remember(obs, info)

    def step(self, action: Any):
        mask = self._info.get("action_mask")
        if mask is None:
            raise RuntimeError("call reset() before step()")
        action_id = as_action(action)  # a TypeError for anything but an integer, as the env's own step
        legal = 0 <= action_id < NUM_ACTIONS and bool(mask[action_id])
        if not legal and self._retries < self.max_retries:
            self.illegal_moves += 1
            self._retries += 1
            obs, info = self._copy(self._obs), dict(self._info)
            info["illegal_moves"] = self.illegal_moves
            info["illegal_action"] = True
            return obs, self.penalty, False, False, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._retries = 0
        obs, info = self._remember(obs, info)
        return obs, reward, terminated, truncated, info

    def _remember(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        info["illegal_moves"] = self.illegal_moves
        self._obs, self._info = self._copy(obs), dict(info)
        return obs, info

    @staticmethod
    def _copy(obs: Any) -> Any:
        if isinstance(obs, dict):
            return {name: np.array(value, copy=True) for name, value in obs.items()}
        return np.array(obs, copy=True)

