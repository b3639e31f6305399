"""Playing two policies against each other on the engine, without an environment in between.

This is what evaluation, tournaments and the search player's measurements run on: each policy takes
its :class:`~uno_env.seat.Seat` (so a policy that declares ``needs = Needs(belief="counting")`` gets belief
features), and every draw of randomness derives from one seed (:func:`~uno_env.seat.start_game`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from uno_env.game import Game
from uno_env.policy import Policy
from uno_env.seat import Seat, start_game


@dataclass(frozen=True, slots=True)
class GameResult:
    """How one game ended: ``winner`` is the seat that won (0 or 1) or -1 for a draw."""

    winner: int
    decisions: int
    first_player: int


def play_game(policies: tuple[Policy, Policy], seed: int, first_player: int = 0,
              n_particles: int = 1000, max_decisions: int = 5000,
              on_deal: Callable[[Game], None] | None = None) -> GameResult:
    """Play one game between ``policies[0]`` (seat 0) and ``policies[1]`` (seat 1).

    The deal depends only on ``seed``, so calling this twice with the same seed and the seats'
    policies swapped replays the same deal with the seats exchanged (a paired comparison).
    A game still running after ``max_decisions`` counts as a draw.
    Each policy is seated by :class:`~uno_env.seat.Seat` (its needs, its seed, its start view); an illegal
    action raises :class:`~uno_env.game.IllegalActionError`.
    ``on_deal(game)``, if given, receives the dealt game before anyone moves: it is for code that needs the game
    itself (the search player's oracle, the labelling's compiled players, the table's game records), never for a
    policy's decisions from hidden state.
    """
    seats = [Seat(index, policy, n_particles=n_particles) for index, policy in enumerate(policies)]
    game = start_game(seats, seed, first_player)
    if on_deal is not None:
        on_deal(game)
    decisions = 0
    while not game.done and decisions < max_decisions:
        seats[game.current].play(game)
        decisions += 1
    winner = game.outcome if game.outcome is not None else -1
    return GameResult(winner=winner, decisions=decisions, first_player=first_player)
