"""The native vector env: N games of two-player UNO stepped in one compiled call (``Uno-v0``'s ``vector_entry_point``).

``gym.make_vec("Uno-v0", num_envs=N, vectorization_mode="vector_entry_point", opponent="rule")`` gives a
:class:`UnoVectorEnv`. Each step applies the N agents' actions, lets each game's built-in opponent (``random``,
``rule`` or an opponent style of :mod:`uno_env.styles`: a name of :data:`uno_env.core.COMPILED_PLAYERS`) move until
it is the agent's turn again, and encodes the N observations, all inside one numba kernel over the packed game states
of :mod:`uno_env.core`: each game's step is the compiled step sequence's one driver, :func:`uno_env.core.play_turn`
(the single env's compiled path and the playouts run it too), its reward core's one outcome table
(:func:`uno_env.core.reward`), the observation is :func:`uno_env.observation.encode_seat_into` (the one definition of
the encoding) and the ``counting`` belief features :func:`uno_env.observation.counting_state_features_into`. Python
runs once per batch, not once per game.

Randomness and seeds (docs/design.md, "Compiled kernels and their Python twin"). Each sub-env owns a splitmix64 stream
(:func:`uno_env.core.below`) that deals its games (:func:`uno_env.core.deal_into`), reshuffles, flips the coin
for the first player, draws the opponent of a mix and makes a random opponent's choices. ``reset(seed=s)``
starts sub-env ``i``'s stream from ``s + i`` (Gymnasium's convention for vector envs), so a seed replays the same
games, and sub-env ``i`` of a vector seeded ``s`` plays the games of sub-env 0 of one seeded ``s + i``.

These are not the games :class:`~uno_env.env.UnoEnv` deals for the same seed: the single env shuffles with a
``numpy.random.Generator`` (:mod:`uno_env.seat`), which compiled code cannot call, and dealing every new game in
Python would cost more than the rest of a game's steps together. What "the same as N single envs" means here is
therefore: from the same position (:meth:`UnoVectorEnv.scenario` gives a sub-env's position as a RULES.md
scenario for ``UnoEnv.reset(options={"scenario": ...})``), with a deterministic opponent (``rule``) and the same
actions, both give the same observations, masks, rewards and terminations until the first reshuffle, after
which each shuffles with its own generator (tests/test_vector_env.py). With a random opponent they agree
in distribution only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numba import njit

from uno_env import core
from uno_env.cards import CARD_NAMES, COLOURS, DRAW_ACTION, NUM_ACTIONS, NUM_CARD_TYPES, action_name
from uno_env.game import IllegalActionError
from uno_env.observation import BASE_SIZE, SeatObserver, counting_state_features_into, encode_seat_into, mask_into
from uno_env.seeding import seed_words
from uno_env.view import AGENT, OPPONENT

#: The built-in opponents the kernel plays, by code: core's table of compiled players (the index is the policy code
#: :func:`uno_env.core.choose` plays); a :class:`CompiledOpponent` has the next code, :data:`uno_env.core.EXTERNAL`.
OPPONENTS: tuple[str, ...] = core.COMPILED_PLAYERS
#: The largest weight of an opponent mix: weights are relative, so any mix is expressed below it, and their sum
#: stays finite.
MAX_WEIGHT = 1e9
_FIRST_PLAYER = {"agent": AGENT, "opponent": OPPONENT, "random": -1}
_AUTORESET = {AutoresetMode.NEXT_STEP: 0, AutoresetMode.SAME_STEP: 1, AutoresetMode.DISABLED: 2}
_SAME_STEP = 1
_NO_LIMIT = 2**62


@dataclass(frozen=True)
class CompiledOpponent:
    """A player compiled into the kernel, to sit as the opponent: a chooser and the parameters it reads.

    ``chooser`` is a numba-compiled function ``(state, legal, n, params) -> action`` choosing one of
    ``legal[:n]`` for the seat to move; ``name`` labels its games (``info["opponent"]``). A checkpoint's actor
    is one: :func:`agents.compiled_actor.compiled_opponent` (:func:`~agents.actor_kernels.actor_choice`).
    """

    name: str
    chooser: Callable[..., int]
    params: tuple


class Games(NamedTuple):
    """The sub-envs' games, one row each, as the kernels read and write them (named, not a positional list)."""

    states: np.ndarray  # (N, core.STATE_SIZE) int64: the packed games
    streams: np.ndarray  # (N,) uint64: each sub-env's splitmix64 stream
    opponents: np.ndarray  # (N,) int64: the opponent code of the game under way
    steps: np.ndarray  # (N,) int64: the agent's steps in the game under way
    ended: np.ndarray  # (N,) bool: the game ended at the last step (next-step autoreset deals the next one)


class Settings(NamedTuple):
    """The env's settings the kernels read."""

    opponent_cdf: np.ndarray  # the opponent mix's cumulative weights over the opponent codes
    first_player: int  # AGENT, OPPONENT or -1 (a coin flip)
    max_steps: int  # agent steps before truncation
    autoreset: int  # a value of _AUTORESET
    counting: bool  # the counting belief features follow the base observation


class Outputs(NamedTuple):
    """What a step writes, one row per sub-env (a reset writes ``obs`` and ``masks``)."""

    obs: np.ndarray  # (N, obs) float32
    masks: np.ndarray  # (N, 61) int8: the legal actions, read back by the next step
    rewards: np.ndarray  # (N,) float64
    terminated: np.ndarray  # (N,) bool
    truncated: np.ndarray  # (N,) bool
    success: np.ndarray  # (N,) bool: the agent won the game that ended
    illegal: np.ndarray  # (N,) bool: the agent's action was outside the mask (a forfeit)
    finished_by: np.ndarray  # (N,) int64: the opponent code of a game that ended in this step, -1 elsewhere
    final_obs: np.ndarray  # (N, obs) float32 under SAME_STEP autoreset (the ended game's), else a placeholder row


# ---------------------------------------------------------------------------------------------- kernels
@njit(cache=True)
def _new_game(state: np.ndarray, stream: np.ndarray, ctl: np.ndarray, legal: np.ndarray, settings: Settings, chooser,
              params: tuple) -> int:
    """Deal a game, draw its opponent from the mix and play the opponent's opening moves; returns the opponent."""
    while True:
        opponent = 0
        if settings.opponent_cdf[0] < 1.0:  # a mix: one draw per game
            u = core.uniform(stream)
            while u >= settings.opponent_cdf[opponent]:
                opponent += 1
        core.deal_into(state, stream, settings.first_player)
        ctl[core.ACTION] = core.NO_ACTION
        ctl[core.POLICY1] = opponent
        core.play_turn_inline(state, ctl, stream, None, chooser, params, legal, None)
        # Going first, the opponent may (very rarely: a hand of skips and reverses) go out before the agent's first
        # decision. A vector env cannot report a game that ended at its reset, so that deal is dealt again.
        if state[core.OUTCOME] == core.RUNNING:
            return opponent


@njit(inline="always")  # in every kernel step of every game: as observation.encode_into, a call costs there
def _observe(state: np.ndarray, legal: np.ndarray, obs: np.ndarray, mask: np.ndarray, counting: bool) -> None:
    """The agent's observation and mask (int8) of a game; after the game only "draw" is set, as in UnoEnv."""
    n = core.legal_actions_inline(state, legal)  # the agent's: it is to move whenever the game runs here
    mask_into(legal, n, mask)
    encode_seat_into(state, AGENT, legal, n, obs)  # the base channels, obs[:BASE_SIZE]
    if counting:
        counting_state_features_into(state, AGENT, obs[BASE_SIZE:])


@njit(cache=True)
def _restart(games: Games, i: int, ctl: np.ndarray, legal: np.ndarray, settings: Settings, chooser,
             params: tuple) -> None:
    """Sub-env ``i``'s next game (:func:`_new_game`) with its bookkeeping reset."""
    games.opponents[i] = _new_game(games.states[i], games.streams[i:i + 1], ctl, legal, settings, chooser, params)
    games.steps[i] = 0
    games.ended[i] = False


# The kernels called from Python take the fields of Games, Settings and Outputs as plain tuples and name them inside:
# numba's dispatcher types a NamedTuple argument on a slow path, about 10 us a call here (measured against a plain
# tuple of the same arrays, which costs as little as separate arguments), too much for a step of a few games.
@njit(cache=True)
def _reset_kernel(games_fields: tuple, which: np.ndarray, settings_fields: tuple, chooser, params: tuple,
                  out_fields: tuple) -> None:
    """New games in the sub-envs where ``which`` is set; every observation and mask written."""
    games, settings, out = Games(*games_fields), Settings(*settings_fields), Outputs(*out_fields)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    ctl = core.control(AGENT, True, 0, 0, _NO_LIMIT)  # the agent's decisions, forced ones too, are env steps
    for i in range(games.states.shape[0]):
        if which[i]:
            _restart(games, i, ctl, legal, settings, chooser, params)
        _observe(games.states[i], legal, out.obs[i], out.masks[i], settings.counting)


@njit(cache=True)
def _step_kernel(games_fields: tuple, actions: np.ndarray, settings_fields: tuple, chooser, params: tuple,
                 out_fields: tuple) -> tuple[int, int]:
    """One step of every sub-env (see :meth:`UnoVectorEnv.step`): the driver (:func:`uno_env.core.play_turn`) on each
    game, then the episode's end and autoreset. ``out.masks`` holds the masks of the last step; an action outside it
    forfeits the game (``out.illegal[i]``); "raise" mode refused such actions before the call. Every row of every
    output is written. Returns how many games ended and how many actions were illegal (so Python looks at those
    arrays only when there is something in them)."""
    games, settings, out = Games(*games_fields), Settings(*settings_fields), Outputs(*out_fields)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    ctl = core.control(AGENT, True, 0, 0, _NO_LIMIT)  # the agent's decisions, forced ones too, are env steps
    ended = illegal = 0
    for i in range(games.states.shape[0]):
        state = games.states[i]
        out.rewards[i] = 0.0
        out.terminated[i] = out.truncated[i] = out.success[i] = out.illegal[i] = False
        out.finished_by[i] = -1
        if games.ended[i]:  # next-step autoreset: the game ended in the last step, this step starts the next one
            _restart(games, i, ctl, legal, settings, chooser, params)
        else:
            action = actions[i]
            out.illegal[i] = not (0 <= action < NUM_ACTIONS and out.masks[i, action])
            ctl[core.ACTION] = core.FORFEIT if out.illegal[i] else action  # UnoEnv's illegal_action="lose"
            illegal += out.illegal[i]
            ctl[core.POLICY1] = games.opponents[i]
            core.play_turn_inline(state, ctl, games.streams[i:i + 1], None, chooser, params, legal, None)
            games.steps[i] += 1
            outcome = state[core.OUTCOME]
            if outcome != core.RUNNING:
                out.terminated[i] = True
                out.rewards[i] = core.reward(outcome, AGENT)
                out.success[i] = outcome == AGENT
            elif games.steps[i] >= settings.max_steps:
                out.truncated[i] = True
            if out.terminated[i] or out.truncated[i]:
                ended += 1
                out.finished_by[i] = games.opponents[i]
                if settings.autoreset == _SAME_STEP:
                    _observe(state, legal, out.final_obs[i], out.masks[i], settings.counting)
                    _restart(games, i, ctl, legal, settings, chooser, params)
                else:
                    games.ended[i] = True
        _observe(state, legal, out.obs[i], out.masks[i], settings.counting)
    return ended, illegal


# ---------------------------------------------------------------------------------------------- the env
class UnoVectorEnv(VectorEnv):
    """N two-player UNO games against built-in opponents, stepped together by one compiled kernel.

    ## Description
    Each sub-env is the game of :class:`~uno_env.env.UnoEnv` (RULES.md) from the agent's seat, against the
    built-in opponent (a compiled player) moving inside the kernel; the module docstring says how seeds map to games and
    in what sense the games equal the single env's. Skip, Reverse, +2 and +4 give their player another turn;
    forced draws are agent decisions with one legal action.

    ## Action Space
    ``MultiDiscrete([61] * N)``: one action per sub-env, laid out as the single env's ``Discrete(61)``.
    An integer array of shape ``(N,)``; legal actions are ``info["action_mask"]`` (int8, ``(N, 61)``), never all
    zero. After a game ends (next-step autoreset) the sub-env's next action is ignored: that step starts a new game.

    ## Observation Space
    ``Box`` of shape ``(N, 294 + B)``, float32: row ``i`` is the single env's flat observation of sub-env ``i``
    (:mod:`uno_env.observation`), with ``B = 60`` belief features for ``belief="counting"``, 0 for ``"none"``.

    ## Rewards
    +1 when the agent wins, -1 when it loses, 0 for a drawn game and on every other step.

    ## Episode End
    Terminated when a game ends (RULES.md) or, with ``illegal_action="lose"``, on an illegal action
    (``info["illegal_action"]``); truncated after ``max_episode_steps`` agent steps (1,000 through
    ``gym.make_vec``). Autoreset (``metadata["autoreset_mode"]``, Gymnasium 1.x's conventions):

    * ``NEXT_STEP`` (the default): the step after a game's end deals the next game (reward 0, not terminated);
    * ``SAME_STEP``: the ending step already returns the next game's observation; the ended game's is in
      ``info["final_obs"]`` (an ``(N, obs)`` array, rows valid where ``info["_final_obs"]``);
    * ``DISABLED``: ended sub-envs must be reset with ``reset(options={"reset_mask": mask})`` before the next step.

    The first reset deals every sub-env: a ``reset_mask`` that leaves one out there raises ``ValueError`` (refused
    rather than silently widened, so a mask never means more than it says).

    ``info`` holds ``"action_mask"`` after every reset and step; after a step where games ended, ``"is_success"``
    (the agent won) and ``"opponent"`` (who played it: an index into :attr:`opponent_names`), each with its Gymnasium
    ``"_key"`` mask of the sub-envs whose game ended; ``"illegal_action"`` likewise when one was played.

    ## Arguments
    * ``num_envs``: N, a positive int.
    * ``opponent``: ``"random"``, ``"rule"``, a mix ``{"random": w, "rule": w}`` of weights in 0..1e9 (each
      game's opponent drawn from it), or a :class:`CompiledOpponent` (a checkpoint trained with ``belief="none"``:
      :func:`agents.compiled_actor.compiled_opponent`). Other players (search, belief checkpoints) need
      ``vectorization_mode="sync"``.
    * ``first_player``: ``"agent"``, ``"opponent"`` or ``"random"`` (50/50, the default).
    * ``belief``: ``"none"`` or ``"counting"`` (the particle filter is not compiled: use ``"sync"`` for it).
    * ``illegal_action``: ``"lose"`` (the default, as ``UnoEnv``) or ``"raise"``
      (:class:`~uno_env.game.IllegalActionError` naming the sub-env; nothing is stepped).
    * ``max_episode_steps``: agent steps before truncation, ``None`` for no limit.
    * ``autoreset_mode``: an :class:`~gymnasium.vector.AutoresetMode` or its value (``"NextStep"``, ...).
    * ``render_mode``: only ``None``: render one game with ``UnoEnv`` from :meth:`scenario`.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponent: str | Mapping[str, float] | CompiledOpponent = "random",
        first_player: str = "random",
        belief: str = "none",
        illegal_action: str = "lose",
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(num_envs, int | np.integer) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if first_player not in _FIRST_PLAYER:
            raise ValueError(f"first_player must be 'agent', 'opponent' or 'random', got {first_player!r}")
        if belief not in ("none", "counting"):
            raise ValueError(f"belief must be 'none' or 'counting' in the native vector env, got {belief!r} "
                             "(the particle filter is not compiled: use vectorization_mode='sync')")
        if illegal_action not in ("lose", "raise"):
            raise ValueError(f"illegal_action must be 'lose' or 'raise', got {illegal_action!r}")
        if max_episode_steps is not None and (not isinstance(max_episode_steps, int | np.integer)
                                              or isinstance(max_episode_steps, bool) or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode must be None in the native vector env, got {render_mode!r} (render a "
                             "sub-env's game with UnoEnv from scenario(i))")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, "
                             f"got {autoreset_mode!r}") from None
        self.num_envs = int(num_envs)
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.render_mode = None
        self.first_player = first_player
        self.belief = belief
        self.illegal_action = illegal_action
        self.max_episode_steps = max_episode_steps
        self.set_opponent_mix(opponent)

        channels = SeatObserver(belief).channels()
        high = np.concatenate([high for _, _, high in channels]).astype(np.float32)
        self.single_observation_space = spaces.Box(0.0, high, (high.size,), np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        n, size = self.num_envs, high.size
        self._states = np.zeros((n, core.STATE_SIZE), dtype=np.int64)
        self._streams: np.ndarray | None = None  # one splitmix64 state per sub-env, set by the first reset
        self._opponents = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._ended = np.zeros(n, dtype=np.bool_)
        self._obs = np.zeros((n, size), dtype=np.float32)  # the observations last returned (not read by the kernels)
        self._masks = np.zeros((n, NUM_ACTIONS), dtype=np.int8)  # the last masks: the next step checks actions on them
        # What the kernels write besides what a step returns (see _outputs). Only SAME_STEP writes final observations;
        # the other modes pass a placeholder row the kernel never touches.
        self._out = Outputs(self._obs, self._masks, rewards=np.zeros(n, dtype=np.float64),
                            terminated=np.zeros(n, dtype=np.bool_), truncated=np.zeros(n, dtype=np.bool_),
                            success=np.zeros(n, dtype=np.bool_), illegal=np.zeros(n, dtype=np.bool_),
                            finished_by=np.zeros(n, dtype=np.int64),
                            final_obs=np.zeros((n if mode == AutoresetMode.SAME_STEP else 1, size), dtype=np.float32))

    def _outputs(self) -> tuple:
        """:class:`Outputs`' fields as the kernels take them (see ``_reset_kernel``), with new arrays for the
        observations, rewards and flags, which the kernels write whole: they are returned as they are, fresh at every
        call, instead of a copy of one buffer (a copy cost about a tenth of a
        step). The masks stay the env's own (the next step reads them), so they are copied into ``info``."""
        n, out = self.num_envs, self._out
        self._obs = np.empty_like(self._obs)
        self._out = out = Outputs(self._obs, out.masks, np.empty(n, dtype=np.float64), np.empty(n, dtype=np.bool_),
                                  np.empty(n, dtype=np.bool_), out.success, out.illegal, out.finished_by, out.final_obs)
        return tuple(out)

    def _games_fields(self) -> tuple:
        """:class:`Games`' fields, as the kernels take them (see ``_reset_kernel``)."""
        return self._states, self._streams, self._opponents, self._steps, self._ended

    def _settings_fields(self, mode: int) -> tuple:
        """:class:`Settings`' fields under autoreset ``mode``, as the kernels take them."""
        max_steps = _NO_LIMIT if self.max_episode_steps is None else self.max_episode_steps
        return self._opponent_cdf, _FIRST_PLAYER[self.first_player], max_steps, mode, self.belief == "counting"

    @staticmethod
    def _mix(opponent: str | Mapping[str, float]) -> dict[str, float]:
        """The opponent argument as weights over :data:`OPPONENTS`; ``ValueError`` naming what is wrong."""
        if isinstance(opponent, str):
            opponent = {opponent: 1.0}
        if not isinstance(opponent, Mapping):
            raise ValueError(f"opponent must be one of {', '.join(map(repr, OPPONENTS))} or a mix of them, got "
                             f"{opponent!r} (other players need vectorization_mode='sync')")
        unknown = [name for name in opponent if name not in OPPONENTS]
        if unknown:
            raise ValueError(f"the native vector env plays the opponents {', '.join(map(repr, OPPONENTS))}; got "
                             f"{', '.join(map(repr, unknown))} (other players need vectorization_mode='sync')")
        mix = {}
        for name, weight in opponent.items():
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= MAX_WEIGHT:
                # NaN fails the comparison; inf or 1e308 would overflow the sum the weights are divided by
                raise ValueError(f"opponent weight of {name!r} must be a number in 0..{MAX_WEIGHT:g}, got {weight!r}")
            if weight > 0:
                mix[name] = float(weight)
        if not mix:
            raise ValueError(f"opponent mix needs a positive weight, got {dict(opponent)!r}")
        return mix

    def set_opponent_mix(self, opponent: str | Mapping[str, float] | CompiledOpponent) -> None:
        """Draw each next game's opponent from ``opponent`` (as the constructor's); games under way keep theirs."""
        if isinstance(opponent, CompiledOpponent):
            mix, cdf = {opponent.name: 1.0}, np.array([0.0] * len(OPPONENTS) + [1.0])
            self._chooser, self._params = opponent.chooser, opponent.params
            self.opponent_names = (*OPPONENTS, opponent.name)
        else:
            mix = self._mix(opponent)
            cdf = np.cumsum([mix.get(name, 0.0) for name in OPPONENTS] + [0.0])
            cdf /= cdf[-1]
            cdf[len(OPPONENTS) - 1:] = 1.0  # exactly, whatever the rounding: every draw below 1 finds an opponent
            self._chooser, self._params = None, ()  # no compiled opponent: the driver drops its branch
            self.opponent_names = OPPONENTS
        self.opponent_mix: dict[str, float] = mix
        self._opponent_cdf = cdf

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """New games in every sub-env (or those of ``options["reset_mask"]``); see the class docstring for seeds.

        The first reset deals every sub-env: a ``reset_mask`` that leaves one out raises ``ValueError`` there (its
        game would be undealt). A seed may be an int, a numpy integer or a 0-d integer array.

        ``seed``: an int ``s`` seeds sub-env ``i`` with ``s + i``; a sequence gives each sub-env its seed; ``None``
        continues the sub-envs' streams (the first reset then seeds them from fresh entropy).
        """
        options = dict(options or {})
        which = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset option(s): {', '.join(sorted(map(str, options)))}; known: reset_mask")
        if which is None:
            which = np.ones(self.num_envs, dtype=np.bool_)
        else:
            which = np.asarray(which)
            if which.dtype != np.bool_ or which.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), got "
                                 f"{which.dtype} {which.shape}")
        if self._streams is None and not which.all():
            raise ValueError("the first reset deals every sub-env: give no reset_mask, or one of all True")
        seeds = self._seeds(seed)
        if seeds is not None:
            streams = np.array([seed_words(s).generate_state(1, np.uint64)[0] for s in seeds], dtype=np.uint64)
            if self._streams is None:
                self._streams = streams
            else:
                self._streams[which] = streams[which]
        elif self._streams is None:
            self._streams = self.np_random.integers(0, 2**64, size=self.num_envs, dtype=np.uint64, endpoint=False)
        _reset_kernel(self._games_fields(), which, self._settings_fields(_AUTORESET[self.metadata["autoreset_mode"]]),
                      self._chooser, self._params, self._outputs())
        return self._obs, {"action_mask": self._masks.copy()}

    def _seeds(self, seed: int | Sequence[int] | None) -> list[int] | None:
        if seed is None:
            return None
        if isinstance(seed, np.ndarray) and seed.ndim == 0:
            seed = seed[()]  # a 0-d array: its scalar (a numpy integer when it holds one)
        if isinstance(seed, int | np.integer) and not isinstance(seed, bool) and seed >= 0:
            super().reset(seed=int(seed))  # self.np_random follows the seed, as in Gymnasium's vector envs
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed) if isinstance(seed, Sequence | np.ndarray) else None
        if seeds is None or len(seeds) != self.num_envs or not all(
                isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 0 for s in seeds):
            raise ValueError(f"seed must be None, a non-negative int or {self.num_envs} non-negative ints, "
                             f"got {seed!r}")
        return [int(s) for s in seeds]

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply one action per sub-env (an int array of shape ``(N,)``); see the class docstring."""
        if self._streams is None:
            raise RuntimeError("call reset() before step()")
        given, actions = actions, self._as_actions(actions)
        mode = _AUTORESET[self.metadata["autoreset_mode"]]
        if mode == _AUTORESET[AutoresetMode.DISABLED] and self._ended.any():
            raise RuntimeError(f"sub-env(s) {np.flatnonzero(self._ended).tolist()} finished their games; with "
                               "autoreset_mode DISABLED, reset(options={'reset_mask': mask}) them before stepping")
        if self.illegal_action == "raise":
            self._check_legal(actions, given)
        ended, illegal = _step_kernel(self._games_fields(), actions, self._settings_fields(mode), self._chooser,
                                      self._params, self._outputs())
        out = self._out
        return out.obs, out.rewards, out.terminated, out.truncated, self._step_info(mode, ended, illegal)

    def _step_info(self, mode: int, ended: int, illegal: int) -> dict[str, Any]:
        """The step's ``info`` (class docstring), given how many games ended and how many actions were illegal."""
        out = self._out
        info: dict[str, Any] = {"action_mask": self._masks.copy()}
        if ended:
            where = out.finished_by >= 0
            info["is_success"], info["_is_success"] = out.success.copy(), where
            info["opponent"], info["_opponent"] = out.finished_by.copy(), where.copy()
            if mode == _SAME_STEP:
                info["final_obs"], info["_final_obs"] = out.final_obs.copy(), where.copy()
        if illegal:
            info["illegal_action"], info["_illegal_action"] = out.illegal.copy(), out.illegal.copy()
        return info

    def _as_actions(self, actions: Any) -> np.ndarray:
        """The actions as the kernels read them, int64. Any integer outside 0..60 is illegal there: one that int64
        cannot hold (``2**64 - 1``) wraps to a negative number (from uint64) or, from Python ints, numpy holds as
        floats or objects and -1 stands for it."""
        array = np.asarray(actions)
        if array.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {array.shape}")
        if array.dtype.kind in "iu":
            return array.astype(np.int64, copy=False)
        if not isinstance(actions, np.ndarray) and all(
                isinstance(action, int | np.integer) and not isinstance(action, bool) for action in actions):
            return np.array([action if 0 <= action < NUM_ACTIONS else -1 for action in actions], dtype=np.int64)
        raise TypeError(f"actions must be integers, got an array of dtype {array.dtype}")

    def _check_legal(self, actions: np.ndarray, given: Any) -> None:
        """``illegal_action="raise"``: refuse the batch if a running sub-env's action is not in its mask; ``given``
        are the actions as passed (a message names an integer out of range as given, not as int64 holds it)."""
        in_range = (actions >= 0) & (actions < NUM_ACTIONS)
        legal = self._masks[np.arange(self.num_envs), np.where(in_range, actions, DRAW_ACTION)] != 0
        bad = np.flatnonzero(~(in_range & legal) & ~self._ended)
        if bad.size:
            i, action = int(bad[0]), int(actions[bad[0]])
            listing = ", ".join(f"{a} ({action_name(a)})" for a in np.flatnonzero(self._masks[i]))
            what = f"action {action} ({action_name(action)})" if 0 <= action < NUM_ACTIONS else \
                f"action {int(given[i])} (outside 0..60)"
            raise IllegalActionError(f"sub-env {i}: {what} is not legal; legal actions: {listing} "
                                     f"({bad.size} sub-env(s) with an illegal action; nothing was stepped)")

    # ------------------------------------------------------------------ inspection
    def scenario(self, index: int) -> dict[str, Any]:
        """Sub-env ``index``'s position as a RULES.md scenario (``UnoEnv.reset(options={"scenario": ...})``).

        Raises ``ValueError`` once its game is over (a scenario is a position to play on).
        """
        if self._streams is None:
            raise RuntimeError("call reset() before scenario()")
        if not isinstance(index, int | np.integer) or isinstance(index, bool) or not 0 <= index < self.num_envs:
            raise ValueError(f"index must be an int in 0..{self.num_envs - 1}, got {index!r}")
        state = self._states[index]
        if state[core.OUTCOME] != core.RUNNING:
            raise ValueError(f"sub-env {index}'s game is over; step it to start the next one")

        def hand(seat: int) -> list[str]:
            counts = state[core.HANDS + NUM_CARD_TYPES * seat:core.HANDS + NUM_CARD_TYPES * (seat + 1)]
            return [CARD_NAMES[card] for card in np.repeat(np.arange(NUM_CARD_TYPES), counts)]

        deck = state[core.DECK:core.DECK + state[core.DECK_LEN]][::-1]  # the kernel draws from the end
        discard = state[core.DISCARD:core.DISCARD + state[core.DISCARD_LEN]]
        return {"agent_hand": hand(AGENT), "opponent_hand": hand(OPPONENT),
                "deck": [CARD_NAMES[card] for card in deck], "discard": [CARD_NAMES[card] for card in discard],
                "active_colour": COLOURS[state[core.COLOUR]],
                "to_move": "agent" if state[core.CURRENT] == AGENT else "opponent",
                "pending_draw": int(state[core.PENDING])}
