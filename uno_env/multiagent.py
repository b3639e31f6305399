"""
# UNO (two players, PettingZoo AEC)

| Import             | `from uno_env.multiagent import env` (or `raw_env` without wrappers) |
|--------------------|----------------------------------------------------------------------|
| Name               | `uno_v0`                                                             |
| Actions            | Discrete                                                             |
| Parallel API       | No (turn-based, and a player may move several times in a row)        |
| Agents             | `agents = ["player_0", "player_1"]`                                  |
| Action Shape       | (1)                                                                  |
| Action Values      | [0, 60]                                                              |
| Observation Shape  | `{"observation": (294 + B,), "action_mask": (61,)}`                  |
| Observation Values | [0, 4] (card counts), [0, 1] otherwise                               |

Two-player UNO under the rules of RULES.md, with both seats open to learners: the same engine
(:class:`uno_env.game.Game`) and the same observation encoder (:class:`uno_env.observation.SeatObserver`)
as the single-agent ``Uno-v0``, so a policy trained in one plays in the other. Use it for self-play
or any multi-agent method::

    from uno_env.multiagent import env as uno_env

    env = uno_env(render_mode="ansi")  # or "rgb_array", "human"
    env.reset(seed=42)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        if termination or truncation:
            action = None
        else:
            action = env.action_space(agent).sample(observation["action_mask"])  # your policy here
        env.step(action)
    env.close()

Seat ``player_0`` is the ``"agent"`` seat of RULES.md scenarios, ``player_1`` the ``"opponent"``.

### Turn order

``agent_selection`` is always the seat to move. Skip, Reverse, +2 and +4 give the player who played
them another turn, so the same agent may be selected several times in a row; a pending +2/+4 is a
decision of the drawing player with one legal action (draw, 60).

### Observation Space

A dictionary with

* ``"observation"``: the flat ``float32`` encoding of that player's public view, channel by channel
  as documented in :mod:`uno_env.observation` (own hand, legal actions, top card, colour in force,
  pending draw, opponent hand size, pile sizes, discard multiset, unseen cards), plus ``B`` belief
  features about the other player's hand when ``belief`` is ``"counting"`` or ``"particles"``;
* ``"action_mask"``: ``int8[61]``, 1 for the legal actions.

The player to move sees its view at this decision. The waiting player sees the table as it is now;
its mask holds only the draw action (60), as in ``Uno-v0`` a mask is never all zero, and its belief
features are those of its last decision (its tracker learns the events in between at its next
decision, so every event reaches it exactly once).

### Action Space

``Discrete(61)``, RLCard's layout: ``colour * 15 + rank`` plays a card (colours red, green, blue,
yellow; ranks 0-9, skip, reverse, draw2; rank 13/14 plays a wild / wild draw four and declares
``colour``); ``60`` draws.

#### Illegal actions

With ``illegal_action="lose"`` (the default, as in ``Uno-v0``) an illegal action ends the game as a
loss for the player who made it: it gets -1, the other player +1, and the mover's info has
``"illegal_action": True``. With ``illegal_action="raise"`` it raises
:class:`~uno_env.game.IllegalActionError` and the game is unchanged. An action that is not an integer
(a float, string, bytes, bool, ``None`` for a live agent, an array that is not 0-d) raises ``TypeError``
naming it, whatever ``illegal_action`` says.

### Rewards

| Winner | Loser |
| :----: | :---: |
| +1     | -1    |

A drawn game (the deck cannot supply a draw and the hands are equal) gives both players 0, and so
does every non-terminal step.

### Episode End

Both players are terminated when one empties its hand, when a draw cannot be supplied even after
reshuffling (fewer cards wins), or on an illegal action. With ``max_steps`` set, both are
truncated after that many actions without a result. Each terminated player is then stepped once
with ``None``, as the AEC API requires.

### Infos

``infos[agent]`` is the RULES.md public-view dictionary of that player (``"agent"`` meaning itself,
``"opponent"`` the other player) without the mask, which is in the observation: hand, top card,
colour, sizes, pending draw and the public events since its previous decision; once the game is
over also ``"winner"`` and ``"is_success"``.

### Arguments

* ``first_player``: ``"player_0"``, ``"player_1"`` or ``"random"`` (50/50, the default).
* ``belief``: ``"none"``, ``"counting"`` or ``"particles"`` (:mod:`uno_env.belief`); ``n_particles``.
* ``illegal_action``: ``"lose"`` or ``"raise"``.
* ``max_steps``: truncate after this many actions (``None``: no limit).
* ``render_mode``: ``None``; ``"ansi"`` (``render()`` returns a text picture of the table from the seat to
  move, ``player_0``'s once the game is over); ``"rgb_array"`` (the same table as ``Uno-v0``'s picture, a
  ``uint8`` array of shape ``(480, 720, 3)`` drawn by :mod:`uno_env.render`); ``"human"`` (that picture in a
  window, updated on every reset and step; ``render()`` returns ``None``), as PettingZoo's classic envs do.

``reset(seed=..., options={"scenario": S})`` starts from a RULES.md scenario (a malformed one raises
``ValueError`` and leaves the env as it was); other option keys are ignored with a warning.

### Version History

* v0: first release (1.0.0), rendering as ``ansi``, ``rgb_array`` and ``human``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from uno_env.ansi import render_table
from uno_env.belief import BeliefKind
from uno_env.cards import CARD_NAMES, COLOURS, NUM_ACTIONS, as_action
from uno_env.game import Game, IllegalActionError
from uno_env.seat import Seat, start_game
from uno_env.view import DRAW, PLAY, PublicView

AGENTS = ("player_0", "player_1")
_SEAT = {agent: seat for seat, agent in enumerate(AGENTS)}


def env(**kwargs: Any) -> AECEnv:
    """The ``uno_v0`` environment wrapped in PettingZoo's order-enforcing checks (the usual entry point)."""
    return wrappers.OrderEnforcingWrapper(UnoAECEnv(**kwargs))


class UnoAECEnv(AECEnv):
    """Two-player UNO as a PettingZoo AEC environment; the module docstring is its documentation."""

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "name": "uno_v0", "is_parallelizable": False,
                "render_fps": 2}

    def __init__(
        self,
        first_player: str = "random",
        belief: BeliefKind = "none",
        n_particles: int = 1000,
        illegal_action: str = "lose",
        max_steps: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if first_player not in ("player_0", "player_1", "random"):
            raise ValueError(f"first_player must be 'player_0', 'player_1' or 'random', got {first_player!r}")
        if illegal_action not in ("lose", "raise"):
            raise ValueError(f"illegal_action must be 'lose' or 'raise', got {illegal_action!r}")
        if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None, 'ansi', 'rgb_array' or 'human', got {render_mode!r}")
        self.first_player = first_player
        self.illegal_action = illegal_action
        self.max_steps = max_steps
        self.render_mode = render_mode
        self._seats = [Seat(seat, belief=belief, n_particles=n_particles) for seat in range(len(AGENTS))]

        self.possible_agents = list(AGENTS)
        high = np.concatenate([high for _, _, high in self._seats[0].observer.channels()]).astype(np.float32)
        # One space object per agent, so that seeding one agent's space leaves the other's alone.
        self.observation_spaces = {
            agent: spaces.Dict({
                "observation": spaces.Box(0.0, high, (high.size,), np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            })
            for agent in AGENTS
        }
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in AGENTS}

        self._np_random: np.random.Generator | None = None
        self._game: Game | None = None
        self._views: list[PublicView | None] = [None, None]
        self._steps = 0
        self._window: Any = None  # the render_mode="human" window, opened by the first render()

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> spaces.Space:
        """The (cached) observation space of ``agent``."""
        return self.observation_spaces[AGENTS[_seat_of(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        """The (cached) action space of ``agent``: ``Discrete(61)``."""
        return self.action_spaces[AGENTS[_seat_of(agent)]]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Deal a new game (or set up ``options["scenario"]``); all randomness derives from ``seed``."""
        options = options or {}
        ignored = sorted(map(str, set(options) - {"scenario"}))
        if ignored:
            gymnasium.logger.warn(f"uno_v0 ignores unknown reset option(s): {', '.join(ignored)}")
        # A scenario is validated before seeding, so a malformed one leaves the env (generator included) as it was.
        scenario_game = Game.from_scenario(options["scenario"], self._np_random) if "scenario" in options else None
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        # One game seed from the env's generator; the seat module derives the deal, the reshuffles and both belief
        # trackers' generators from it, so every belief setting plays the same game.
        self._game = start_game(self._seats, int(self._np_random.integers(2**62)), _SEAT.get(self.first_player),
                                scenario_game)
        self._steps = 0

        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        self._update_views()
        if self.render_mode == "human":
            self.render()

    def step(self, action: Any) -> None:
        """Apply the selected agent's action (``None`` for an agent that is already done)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = _SEAT[agent]
        game = self._game
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        action = as_action(action)  # a TypeError for anything but an integer, whatever illegal_action says
        illegal = not game.is_legal(action)
        if illegal:
            if self.illegal_action == "raise":
                raise IllegalActionError(game.illegal_reason(action))
            game.forfeit(seat)
        else:
            game.step(action)
        self._steps += 1
        self._update_views()
        if game.done:
            if game.outcome in (0, 1):
                self.rewards[AGENTS[game.outcome]] = 1.0
                self.rewards[AGENTS[1 - game.outcome]] = -1.0
            self.terminations = dict.fromkeys(self.agents, True)
            if illegal:
                self.infos[agent]["illegal_action"] = True
        elif self.max_steps is not None and self._steps >= self.max_steps:
            self.truncations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32 encoding, "action_mask": int8[61]}`` of ``agent``'s current view."""
        view = self._views[_seat_of(agent)]
        return {"observation": view.observation.copy(), "action_mask": view.action_mask}

    def render(self) -> str | np.ndarray | None:
        """The table seen by the seat to move (``player_0`` once the game is over), as ``render_mode`` asks.

        ``"ansi"``: text; ``"rgb_array"``: a ``uint8`` picture ``(480, 720, 3)``; ``"human"``: that picture in a
        window, and ``None``. ``None`` before the first reset.
        """
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without a render_mode; pass render_mode='ansi', "
                                  "'rgb_array' or 'human'")
            return None
        game = self._game
        if game is None:
            return None
        seat = 0 if game.done else game.current
        view = game.observe(seat, consume_events=False)
        if self.render_mode == "ansi":
            recent = [_event_for_render(event, seat, AGENTS) for event in game.events[-8:]]
            status = "game over" if game.done else "to move"
            return f"[{AGENTS[seat]}'s view, {status}]\n" + render_table(view, recent)
        # uno_env.render is imported here, not at the top: it loads matplotlib (~0.4 s), which only pictures need.
        from uno_env.render import TableWindow, table_rgb

        # The picture names the viewing seat "agent" ("you") and the other "opponent", as in Uno-v0's.
        names = ("agent", "opponent") if seat == 0 else ("opponent", "agent")
        frame = table_rgb(view, [_event_for_render(event, seat, names) for event in game.events[-8:]])
        if self.render_mode == "human":
            self._window = self._window or TableWindow()
            self._window.show(frame, 1 / self.metadata["render_fps"])
            return None
        return frame

    def close(self) -> None:
        """Close the ``render_mode="human"`` window if one is open."""
        if self._window is not None:
            self._window.close()
            self._window = None

    # ------------------------------------------------------------------ internals
    def _update_views(self) -> None:
        """Refresh both seats' views after a change; each seat's observer sees each decision exactly once."""
        game = self._game
        if game.done:
            for seat in self._seats:
                self._views[seat.index] = seat.observe(game)
        else:
            mover = game.current
            self._views[mover] = self._seats[mover].observe(game)
            waiting = 1 - mover
            peek = game.observe(waiting, consume_events=False)  # its events stay queued for its next decision
            peek.encoder = self._seats[waiting].observer.encode
            self._views[waiting] = peek
            self.agent_selection = AGENTS[mover]
        for seat, agent in enumerate(AGENTS):
            if agent in self.infos:
                info = self._views[seat].to_info()
                del info["action_mask"]  # it is in the observation dict
                self.infos[agent] = info


def _seat_of(agent: str) -> int:
    """The seat of ``agent``; a ``KeyError`` (as a dict's) that names it and the agents there are."""
    try:
        return _SEAT[agent]
    except (KeyError, TypeError):  # TypeError: an unhashable "name"
        raise KeyError(f"unknown agent {agent!r}; the agents are {', '.join(map(repr, AGENTS))}") from None


def _event_for_render(event: tuple, viewer: int, names: tuple[str, str]) -> dict[str, Any]:
    """An engine event (absolute seats, named by ``names``) as the dict the renderers draw; others' draws stay
    hidden from ``viewer``."""
    kind, player, value, extra = event
    if kind == PLAY:
        return {"player": names[player], "kind": "play", "card": CARD_NAMES[value], "colour": COLOURS[extra]}
    if kind == DRAW:
        out: dict[str, Any] = {"player": names[player], "kind": "draw", "count": value}
        if player == viewer:
            out["cards"] = [CARD_NAMES[card] for card in extra]
        return out
    return {"kind": "reshuffle"}


#: PettingZoo's conventional name for the unwrapped environment class.
raw_env = UnoAECEnv
