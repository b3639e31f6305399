"""Playing two policies against each other on the engine, without an environment in between.

This is what evaluation, tournaments and the search player's measurements run on: each seat is
followed by its own :class:`~uno_env.observation.SeatObserver` (so a policy that declares
``belief = "counting"`` gets belief features), and every draw of randomness derives from one seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from uno_env.game import Game, IllegalActionError
from uno_env.observation import SeatObserver
from uno_env.opponents import Policy


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
    A policy with an ``observe_start(view)`` method gets its seat's view right after the deal.
    ``on_deal(game)``, if given, receives the dealt game before anyone moves: it is for measurement
    code that needs the hidden state (the search player's oracle) and for a privileged critic's training
    inputs (``train.pretrain``), never for a policy's decisions.
    """
    deal_rng, reshuffle_rng, policy_seeds = _streams(seed)
    game = Game.deal(deal_rng, first_player)
    game.rng = reshuffle_rng
    observers = [SeatObserver(getattr(p, "belief", "none"), n_particles) for p in policies]
    for seat, (policy, observer) in enumerate(zip(policies, observers, strict=True)):
        policy.reset(int(policy_seeds[seat]))
        observer.start(game, seat, np.random.default_rng(policy_seeds[seat] + 1))
        if hasattr(policy, "observe_start"):
            policy.observe_start(game.observe(seat, consume_events=False))
    if on_deal is not None:
        on_deal(game)
    decisions = 0
    while not game.done and decisions < max_decisions:
        seat = game.current
        view = observers[seat].observe(game, seat)
        action = policies[seat].act(view)
        if not game.is_legal(action):
            raise IllegalActionError(f"{type(policies[seat]).__name__} on seat {seat}: "
                                     + game.illegal_reason(action))
        game.step(action)
        decisions += 1
    winner = game.outcome if game.outcome is not None else -1
    return GameResult(winner=winner, decisions=decisions, first_player=first_player)


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.ndarray]:
    """Independent generators for the deal, the reshuffles and the two policies' seeds."""
    deal, reshuffle, seeds = np.random.SeedSequence(seed).spawn(3)
    return (np.random.default_rng(deal), np.random.default_rng(reshuffle),
            np.random.default_rng(seeds).integers(0, 2**62, size=2))
