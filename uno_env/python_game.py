"""The single env's games stepped in Python: :class:`PythonGame`, with :class:`~uno_env.single.CompiledGame`'s methods.

:class:`~uno_env.env.UnoEnv` plays each game through one of the two: the compiled one when the opponent has a compiled
twin; this one otherwise (any other policy). Both take a
dealt :class:`~uno_env.game.Game` (``start``), apply the agent's legal action and the opponent's moves until the agent
is to move or the game is over (``play``), end the game on an illegal action (``forfeit``), and then hold the agent's
base observation (``obs``), its public events since its previous decision (``events``) and the outcome from its seat
(``outcome``: ``None`` while the game runs, else :data:`~uno_env.view.WIN`, :data:`~uno_env.view.LOSS` or
:data:`~uno_env.view.DRAWN`), and give its mask, its RULES.md ``info``, its :class:`~uno_env.view.PublicView` and the
position as a ``Game``. So the env's ``step``, observation and mask are written once, over either (docs/design.md,
"Compiled kernels and their Python twin").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from uno_env.game import Game
from uno_env.observation import encode_base
from uno_env.seat import Seat
from uno_env.view import AGENT, OPPONENT, PublicView


class PythonGame:
    """A game of the single env stepped in Python: the :class:`~uno_env.game.Game`, the opponent's seat playing its
    policy, and the agent's seat, whose observer sees every view of the agent (its belief tracker learns from them).

    Args:
        agent: the agent's seat (seat 0; no policy: the env's caller acts).
        opponent: the opponent's seat (seat 1) with its policy.
    """

    def __init__(self, agent: Seat, opponent: Seat) -> None:
        self._agent = agent
        self._opponent = opponent
        self.game: Game | None = None
        self._view: PublicView | None = None
        self.obs: np.ndarray | None = None  # the agent's base observation (uno_env.observation.encode_base)
        self.events: list = []

    @property
    def outcome(self) -> int | None:
        """``None`` while the game runs, else the outcome from the agent's seat (seat 0: ``Game.outcome``'s codes)."""
        return self.game.outcome

    def start(self, game: Game) -> None:
        """Take a new game as :func:`uno_env.seat.start_game` dealt it (the seats started), and play the opponent's
        moves if it starts."""
        self.game = game
        self.play(-1)

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is one of the agent's legal actions now (false once the game is over)."""
        return self.game.is_legal(action)

    def play(self, action: int) -> None:
        """The agent's legal ``action`` (or -1 for none, at the start), then the opponent's moves, then the agent's
        next view; :attr:`events` holds the public events since the agent's previous decision."""
        game = self.game
        if action >= 0:
            game.apply(action)  # the caller checked it (is_legal)
        while game.outcome is None and game.current == OPPONENT:
            self._opponent.play(game)
        self._observe()

    def forfeit(self) -> None:
        """The agent loses at once (an illegal action under ``illegal_action="lose"``)."""
        self.game.forfeit(AGENT)
        self._observe()

    def action_mask(self) -> np.ndarray:
        """The agent's int8 action mask (only draw once the game is over)."""
        return self._view.action_mask

    def belief_features(self) -> np.ndarray | None:
        """The agent's belief features after its last view (float32, a new array), ``None`` without them."""
        return self._agent.observer.belief_features()

    def info(self) -> dict[str, Any]:
        """The RULES.md ``info`` dictionary of the agent's seat."""
        return self._view.to_info()

    def view(self) -> PublicView:
        """The agent's :class:`~uno_env.view.PublicView` now, with this step's events."""
        return self._view

    def to_game(self) -> Game:
        """The game itself (for pictures and error messages)."""
        return self.game

    def _observe(self) -> None:
        # Every view of the agent passes through its seat once per decision: its belief tracker learns from it.
        view = self._view = self._agent.observe(self.game)
        self.events = view.events
        self.obs = encode_base(view)
