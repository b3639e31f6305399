"""One game at a table: each seat is a Policy or a person, and the game records itself.

:class:`TableGame` is what the terminal game, watch mode and the browser table share. Policies are seated
as :func:`uno_env.match.play_game` seats them (``reset`` with a seed of their own, a
:class:`~uno_env.observation.SeatObserver` for their belief features, the optional ``observe_start``
hook); a person's seat has no observer, so the person's views are taken straight from the game.

Every draw of randomness comes from the game's seed: the deal, the reshuffles and the policies' seeds are
independent streams of one ``numpy.random.SeedSequence``, so the same seed and the same moves of the
people replay the same game.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from train.table.records import GameRecord, start_scenario
from uno_env.belief import CountingBelief
from uno_env.game import Game, IllegalActionError
from uno_env.observation import SeatObserver
from uno_env.opponents import Policy
from uno_env.view import PublicView

#: A game between two policies still running after this many decisions counts as drawn (as in play_game).
MAX_DECISIONS = 5000


class TableGame:
    """A game between ``players[0]`` (seat 0, ``"agent"`` in events) and ``players[1]`` (seat 1).

    A player is a Policy, or ``None`` for a person who moves through :meth:`play`. Policies move only when
    asked (:meth:`step_policy`, :meth:`advance`), so a watcher can pace them.
    """

    def __init__(self, players: Sequence[Policy | None], names: Sequence[str], seed: int,
                 first_player: int = 0) -> None:
        if len(players) != 2 or len(names) != 2:
            raise ValueError("a table has exactly two players and two names")
        if first_player not in (0, 1):
            raise ValueError(f"first_player must be 0 or 1, got {first_player!r}")
        deal, reshuffle, seats = np.random.SeedSequence(seed).spawn(3)
        self.seed = seed
        self.names = (str(names[0]), str(names[1]))
        self.players = tuple(players)
        self.game = Game.deal(np.random.default_rng(deal), first_player)
        self.game.rng = np.random.default_rng(reshuffle)
        self.start = start_scenario(self.game)
        self.decisions = 0
        self._observers: list[SeatObserver | None] = [None, None]
        policy_seeds = np.random.default_rng(seats).integers(0, 2**62, size=2)
        for seat, policy in enumerate(self.players):
            if policy is None:
                continue
            policy.reset(int(policy_seeds[seat]))
            observer = SeatObserver(getattr(policy, "belief", "none"))
            observer.start(self.game, seat, np.random.default_rng(policy_seeds[seat] + 1))
            self._observers[seat] = observer
            if hasattr(policy, "observe_start"):  # the optional Policy hook (uno_env.opponents)
                policy.observe_start(self.game.observe(seat, consume_events=False))

    @property
    def done(self) -> bool:
        """True once the game is over (or ran into :data:`MAX_DECISIONS`)."""
        return self.game.done or self.decisions >= MAX_DECISIONS

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
        return not self.done and self.players[self.current] is None

    def step_policy(self) -> int:
        """Let the policy on the seat to move choose and play; returns its action."""
        seat = self.current
        policy, observer = self.players[seat], self._observers[seat]
        if self.done or policy is None or observer is None:
            raise RuntimeError("step_policy needs a running game with a policy to move")
        action = int(policy.act(observer.observe(self.game, seat)))
        if not self.game.is_legal(action):
            raise IllegalActionError(f"{self.names[seat]} on seat {seat}: " + self.game.illegal_reason(action))
        self.game.step(action)
        self.decisions += 1
        return action

    def advance(self) -> list[tuple[int, int]]:
        """Let policies move until a person must move or the game ends; the (seat, action) pairs played."""
        moves = []
        while not self.done and self.players[self.current] is not None:
            seat = self.current
            moves.append((seat, self.step_policy()))
        return moves

    def play(self, action: int) -> None:
        """A person's move. Raises :class:`IllegalActionError` saying why when it is not legal now."""
        if self.done:
            raise IllegalActionError("the game is over")
        if self.players[self.current] is not None:
            raise IllegalActionError(f"it is {self.names[self.current]}'s turn, not a person's")
        self.game.step(action)
        self.decisions += 1

    def view(self, seat: int, consume_events: bool = False) -> PublicView:
        """``seat``'s public view now. Consume events only on a person's seat (policies' observers need theirs)."""
        if consume_events and self.players[seat] is not None:
            raise ValueError("only a person's seat may consume its events here")
        return self.game.observe(seat, consume_events=consume_events)

    def record(self) -> GameRecord:
        """The game record so far (finished or not)."""
        return GameRecord.from_game(self.start, self.game, self.seed, self.names, self.winner)


def expected_opponent_hand(view: PublicView) -> np.ndarray:
    """Card counting from ``view``'s seat: the expected copies of each of the 54 card types the other seat holds.

    Counting depends only on the seat's public view at this moment (the unseen cards and the other hand's
    size), so it can be recomputed at any move, also in a replay, without the history of views.
    """
    tracker = CountingBelief()
    tracker.reset(view)
    return tracker.expected_counts()
