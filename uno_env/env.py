"""The Gymnasium environment: two-player UNO seen from one seat, the other seat played by a policy."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from uno_env.ansi import render_table
from uno_env.belief import BeliefKind
from uno_env.cards import NUM_ACTIONS, as_action
from uno_env.core import OUTCOME_REWARD, RUNNING
from uno_env.game import Game, IllegalActionError
from uno_env.policy import Policy, make_policy
from uno_env.python_game import PythonGame
from uno_env.seat import Seat, start_game
from uno_env.seeding import seeded_generator
from uno_env.single import CompiledGame
from uno_env.view import AGENT, OPPONENT, PublicView, event_to_dict

#: The agent's reward by ``outcome - RUNNING`` (the game's codes: running, drawn, a seat won): core's outcome table.
_REWARD = tuple(OUTCOME_REWARD[AGENT].tolist())


class UnoEnv(gym.Env):
    """Two-player UNO (RULES.md) as a POMDP from the agent's seat, with an embedded opponent policy.

    ## Description
    The agent plays one seat of a two-player UNO game; the other seat is played by an embedded
    policy (``"random"``, ``"rule"``, or any object with ``reset(seed)`` and ``act(view)``). Each
    ``step`` applies the agent's action, then lets the opponent move until it is the agent's turn
    again or the game is over. Forced draws (a pending +2/+4) are agent decisions with one legal
    action. Skip, Reverse, +2 and +4 give the player who played them another turn.

    ## Action Space
    ``Discrete(61)``: ``colour * 15 + rank`` plays a card (colours red, green, blue, yellow;
    ranks 0-9, skip, reverse, draw2; rank 13/14 plays a wild / wild draw four declaring
    ``colour``); ``60`` draws. Legal actions: ``env.action_masks()`` (bool, sb3-contrib's convention)
    or ``info["action_mask"]`` (int8). The mask is never all zero; after the game ends only 60 is set.

    ## Observation Space
    By default a flat ``Box(0, high, (294 + B,), float32)`` of the channels documented in
    :mod:`uno_env.observation` (own hand, legal actions, top card, active colour, pending draw,
    opponent hand size, pile sizes, discard multiset, unseen cards), plus ``B`` belief features
    when ``belief`` is not ``"none"``. With ``dict_obs=True``, a ``Dict`` of the same named channels.

    ## Rewards
    +1 when the agent wins, -1 when it loses, 0 for a drawn game and on every non-terminal step.

    ## Episode End
    Terminated when a player empties its hand, or when a draw cannot be supplied even after
    reshuffling (fewer cards wins; equal hands draw), or on an illegal action with
    ``illegal_action="lose"`` (a loss, ``info["illegal_action"] = True``). Truncated by the
    ``TimeLimit`` of ``gym.make("Uno-v0")`` (1,000 agent steps by default, ``max_episode_steps``).
    ``info`` carries the RULES.md public view after every reset and step; once the game is over,
    ``info["winner"]`` (``"agent"``, ``"opponent"`` or ``"draw"``) and ``info["is_success"]``.

    ## Arguments
    * ``opponent``: policy name or object playing the other seat (default ``"random"``; an instance such as
      ``RulePolicy()``: a class is refused with ``TypeError``). With ``"random"`` or
      ``"rule"`` (the built-in classes themselves), the env plays its games compiled (:mod:`uno_env.single`): the
      same games, seed for seed, at about half the cost per step.
    * ``first_player``: ``"agent"``, ``"opponent"`` or ``"random"`` (50/50, the default).
    * ``belief``: ``"none"``, ``"counting"`` or ``"particles"``: belief features about the
      opponent's hand in the observation (:mod:`uno_env.belief`). ``n_particles`` sets the filter size (1 to
      :data:`~uno_env.belief.MAX_PARTICLES`, 100,000; checked here, not at the first reset).
    * ``dict_obs``: a ``Dict`` observation instead of the flat ``Box``.
    * ``illegal_action``: ``"lose"`` (default, as PettingZoo and pgx) or ``"raise"``
      (:class:`~uno_env.game.IllegalActionError`, the game state unchanged). An integer outside 0..60 is
      an illegal action; a value that is not an integer (a float, even ``4.0``, a string, bytes, a bool,
      ``None``, an array other than a 0-d integer one) raises ``TypeError`` naming it, in either mode, and
      also once the game is over.
    * ``render_mode``: ``None``; ``"ansi"`` (``render()`` returns a text picture of the table from the
      agent's side); ``"rgb_array"`` (a ``uint8`` array of shape ``(480, 720, 3)``: both hands as the agent
      may see them, top card, colour in force, pile and deck sizes, the last events; :mod:`uno_env.render`),
      which SB3's ``make_vec_env`` and Gymnasium's ``RecordVideo`` use; ``"human"`` (that picture in a
      window, updated on every reset and step). ``save_picture(path)`` writes it as SVG, PNG or PDF.
    * ``dict_obs`` must be ``True`` or ``False`` (another value raises ``ValueError``).

    ``reset(seed=..., options={"scenario": S})`` starts from a RULES.md scenario; a malformed
    scenario raises ``ValueError`` naming the problem and leaves the env as it was.

    ## Version History
    * v0: first release (1.0.0): two-player UNO under the rules of docs/rules.md, 61 actions in RLCard's layout
      with an action mask, a 294-channel public observation plus 60 belief features (``"counting"``,
      ``"particles"``), an embedded opponent by name or Policy, ``ansi``/``rgb_array``/``human`` rendering, a
      compiled vector version (``gym.make_vec``) and a PettingZoo AEC version (:mod:`uno_env.multiagent`, ``uno_v0``).
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(
        self,
        opponent: str | Policy = "random",
        first_player: str = "random",
        belief: BeliefKind = "none",
        n_particles: int = 1000,
        dict_obs: bool = False,
        illegal_action: str = "lose",
        render_mode: str | None = None,
    ) -> None:
        if first_player not in ("agent", "opponent", "random"):
            raise ValueError(f"first_player must be 'agent', 'opponent' or 'random', got {first_player!r}")
        if illegal_action not in ("lose", "raise"):
            raise ValueError(f"illegal_action must be 'lose' or 'raise', got {illegal_action!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None, 'ansi', 'rgb_array' or 'human', got {render_mode!r}")
        if not isinstance(dict_obs, bool):  # "no" is truthy
            raise ValueError(f"dict_obs must be True or False, got {dict_obs!r}")
        self.opponent = make_policy(opponent)
        self.first_player = first_player
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.belief = belief
        self._agent_seat = Seat(AGENT, belief=belief, n_particles=n_particles, dict_obs=dict_obs)
        self._opponent_seat = Seat(OPPONENT, self.opponent, n_particles=n_particles)
        # The compiled path (uno_env.single) plays the same games at about half the cost; it takes an opponent with a
        # compiled twin (random, rule); the agent's belief tracker reads the views it builds from its state. Otherwise
        # the game is stepped in Python (uno_env.python_game). Both have the same methods, so the env's step,
        # observation and mask are written once over either.
        twin = self._opponent_seat.compiled_twin()
        self._twin = None if twin is None else CompiledGame(*twin, observer=self._agent_seat.observer)
        self._table: CompiledGame | PythonGame = (
            self._twin if self._twin is not None else PythonGame(self._agent_seat, self._opponent_seat))

        self.action_space = spaces.Discrete(NUM_ACTIONS)
        channels = self._agent_seat.observer.channels()
        if dict_obs:
            self.observation_space = spaces.Dict(
                {name: spaces.Box(0.0, high, (size,), np.float32) for name, size, high in channels})
        else:
            high = np.concatenate([high for _, _, high in channels])
            high = high.astype(np.float32)
            self.observation_space = spaces.Box(0.0, high, (high.size,), np.float32)

        self._obs: Any = None  # None until the first reset
        self._history: list[Any] = []
        self._window: Any = None  # the render_mode="human" window, opened by the first render()

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = options or {}
        unknown = set(options) - {"scenario"}
        if unknown:
            raise ValueError(f"unknown reset option(s): {', '.join(sorted(map(str, unknown)))}; known: scenario")
        # Validate a scenario before seeding, so a malformed one leaves the env (its generator included) as it was.
        scenario_game = None
        if "scenario" in options:
            scenario_game = Game.from_scenario(options["scenario"], np.random.default_rng(0))
        if type(seed) is int and seed >= 0:
            # What Gymnasium's reset does (np_random = default_rng(SeedSequence(seed))), at a fifth of its cost.
            self._np_random, self._np_random_seed = seeded_generator(seed), seed
        else:
            super().reset(seed=seed)  # None keeps the generator; a bad seed gets Gymnasium's error
        first = {"agent": AGENT, "opponent": OPPONENT}.get(self.first_player)
        # One game seed from the env's generator; the seat module derives the deal, the reshuffles and each
        # seat's policy and belief-tracker seeds from it, so every belief setting plays the same game.
        seats = (self._agent_seat, self._opponent_seat)
        game = start_game(seats, int(self.np_random.integers(2**62)), first, scenario_game)
        self._history = []
        self._table.start(game)  # the opponent's moves if it starts
        return self._observe(), self._table.info()

    def step(self, action):
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        table = self._table
        action = as_action(action)  # a TypeError for anything but an integer, whatever illegal_action says
        if table.outcome is not None:  # stepping a finished game changes nothing
            return self._obs_copy(), 0.0, True, False, table.info()
        if not table.is_legal(action):
            if self.illegal_action == "raise":
                raise IllegalActionError(table.to_game().illegal_reason(action))
            table.forfeit()
            info = table.info()
            info["illegal_action"] = True
            return self._observe(), _REWARD[table.outcome - RUNNING], True, False, info
        table.play(action)  # checked just above
        outcome = table.outcome
        reward = _REWARD[(RUNNING if outcome is None else outcome) - RUNNING]
        return self._observe(), reward, outcome is not None, False, table.info()

    def action_masks(self) -> np.ndarray:
        """Bool mask of the agent's legal actions (sb3-contrib's ``MaskablePPO`` calls this)."""
        if self._obs is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._table.action_mask().astype(bool)

    def render(self) -> str | np.ndarray | None:
        """The table from the agent's side as ``render_mode`` asks (None before the first reset, and for "human")."""
        view = self._agent_view()
        if self.render_mode is None or view is None:
            return None
        if self.render_mode == "ansi":
            return render_table(view, self._recent_events())
        # uno_env.render is imported here, not at the top: it loads matplotlib (~0.4 s), which only pictures need.
        from uno_env.render import TableWindow, table_rgb

        frame = table_rgb(view, self._recent_events())
        if self.render_mode == "human":
            self._window = self._window or TableWindow()
            self._window.show(frame, 1 / self.metadata["render_fps"])
            return None
        return frame

    def save_picture(self, path: str) -> str:
        """Write the table picture of ``render_mode="rgb_array"`` to ``path`` (.svg, .png or .pdf); any mode."""
        view = self._agent_view()
        if view is None:
            raise RuntimeError("call reset() before save_picture()")
        from uno_env.render import save_table  # not at the top: see render()

        return str(save_table(view, self._recent_events(), path))

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
        super().close()

    # ------------------------------------------------------------------ internals
    def _observe(self) -> Any:
        # The engine holds the agent's base observation (the compiled kernel rewrites its buffer only when the game
        # moves), so the env keeps it, arranged as the observation space says (views into it, made again at every
        # step since a pickled copy of a view is no view), and hands out copies.
        observer = self._agent_seat.observer
        self._obs = observer.arrange(self._table.obs, self._table.belief_features())
        # Raw event tuples are kept whatever the render_mode (save_picture works in any mode), trimmed to what is
        # drawn; they become dictionaries only when drawn, so training steps pay next to nothing.
        self._history = self._history[-16:] + self._table.events
        if self.render_mode == "human":
            self.render()
        return self._obs_copy()

    def _agent_view(self) -> PublicView | None:
        """The agent's current view (None before the first reset); on the compiled path, rebuilt for pictures."""
        return None if self._obs is None else self._table.view()

    def _obs_copy(self) -> Any:
        if isinstance(self._obs, dict):
            return {name: value.copy() for name, value in self._obs.items()}
        return self._obs.copy()

    def _recent_events(self) -> list[dict[str, Any]]:
        return [event_to_dict(event) for event in self._history[-8:]]

