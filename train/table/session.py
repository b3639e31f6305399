"""One game at a table: each seat is a Policy or a person, and the game records itself.

:class:`TableGame` is what the terminal game, watch mode and the browser table share. Every seat, a
person's too, is a :class:`uno_env.seat.Seat` started by :func:`uno_env.seat.start_game`, as in
:func:`uno_env.match.play_game` and the envs: a policy gets the observer its ``needs`` declare, its seed and
its start view; a person's seat is a Seat without a policy (as an env's learner is), whose views carry no
belief features.

Every draw of randomness comes from the game's seed (:func:`uno_env.seat.game_seeds`): the deal, the
reshuffles and the policies' seeds, so the same seed and the same moves of the people replay the same game,
and the record's seed re-deals its start (:func:`uno_env.seat.deal_game`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from train.table.records import DECISION_LIMIT, GameRecord, start_scenario
from uno_env.belief import CountingBelief
from uno_env.game import IllegalActionError
from uno_env.policy import Policy
from uno_env.seat import Seat, start_game
from uno_env.view import PublicView


class TableGame:
    """A game between ``players[0]`` (seat 0, ``"agent"`` in events) and ``players[1]`` (seat 1).

    A player is a Policy, or ``None`` for a person who moves through :meth:`play`. Policies move only when
    asked (:meth:`step_policy`, :meth:`advance`), so a watcher can pace them. ``first_player``: the seat that
    moves first, or ``None`` to draw it from the seed (:func:`uno_env.seat.start_game`).
    """

    def __init__(self, players: Sequence[Policy | None], names: Sequence[str], seed: int,
                 first_player: int | None = 0) -> None:
        if len(players) != 2 or len(names) != 2:
            raise ValueError("a table has exactly two players and two names")
        if first_player not in (0, 1, None):
            raise ValueError(f"first_player must be 0, 1 or None (drawn from the seed), got {first_player!r}")
        self.seed = seed
        self.first_from_seed = first_player is None
        self.names = (str(names[0]), str(names[1]))
        self.seats = tuple(Seat(index, policy) for index, policy in enumerate(players))
        self.game = start_game(self.seats, seed, first_player)
        self.start = start_scenario(self.game)
        self.decisions = 0

    @property
    def done(self) -> bool:
        """True once the game is over, or ran into :data:`~train.table.records.DECISION_LIMIT` (then drawn)."""
        return self.game.done or self.decisions >= DECISION_LIMIT

    @property
    def current(self) -> int:
        """The seat to move."""
        return self.game.current

    @property
    def winner(self) -> str | None:
        """``"agent"`` (seat 0), ``"opponent"`` (seat 1), ``"draw"``, or ``None`` while the game runs."""
        if self.game.outcome is None:
            return "draw" if self.done else None
        return {0: "agent", 1: "opponent"}.get(self.game.outcome, "draw")

    def person_to_move(self) -> bool:
        """Whether the game waits for a person's move."""
        return not self.done and self.seats[self.current].policy is None

    def step_policy(self) -> int:
        """Let the policy on the seat to move choose and play; returns its action."""
        seat = self.seats[self.current]
        if self.done or seat.policy is None:
            raise RuntimeError("step_policy needs a running game with a policy to move")
        action = int(seat.act(self.game, seat.observe(self.game)))
        self.game.step(action)
        self.decisions += 1
        return action

    def advance(self) -> list[tuple[int, int]]:
        """Let policies move until a person must move or the game ends; the (seat, action) pairs played."""
        moves = []
        while not self.done and self.seats[self.current].policy is not None:
            seat = self.current
            moves.append((seat, self.step_policy()))
        return moves

    def play(self, action: int) -> None:
        """A person's move. Raises :class:`IllegalActionError` saying why when it is not legal now."""
        if self.done:
            raise IllegalActionError("the game is over")
        if self.seats[self.current].policy is not None:
            raise IllegalActionError(f"it is {self.names[self.current]}'s turn, not a person's")
        self.game.step(action)
        self.decisions += 1

    def view(self, seat: int, consume_events: bool = False) -> PublicView:
        """``seat``'s public view now. Consume events only on a person's seat (policies' observers need theirs)."""
        if not consume_events:
            return self.game.observe(seat, consume_events=False)
        if self.seats[seat].policy is not None:
            raise ValueError("only a person's seat may consume its events here")
        return self.seats[seat].observe(self.game)

    def record(self) -> GameRecord:
        """The game record so far (finished or not)."""
        return GameRecord.from_game(self.start, self.game, self.seed, self.names, self.winner,
                                    first_from_seed=self.first_from_seed)


def expected_opponent_hand(view: PublicView) -> np.ndarray:
    """Card counting from ``view``'s seat: the expected copies of each of the 54 card types the other seat holds.

    Counting depends only on the seat's public view at this moment (the unseen cards and the other hand's
    size), so it can be recomputed at any move, also in a replay, without the history of views.
    """
    tracker = CountingBelief()
    tracker.reset(view)
    return tracker.expected_counts()
