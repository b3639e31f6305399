"""Seating policies at a game: the one place where a game's seeds are derived and a policy takes its seat.

Every harness (``UnoEnv``, the PettingZoo env, :func:`uno_env.match.play_game`, ``uno-play``'s table, the
belief measurement) builds a :class:`Seat` per seat and calls :func:`start_game`, which derives everything from one
game seed, the same way everywhere:

* ``SeedSequence(seed)`` spawns three independent streams: the deal (and a random first player), the
  reshuffles, and the seats' seeds (one integer per seat);
* a seat's seed resets its policy, and ``seed + 1`` seeds its belief tracker's generator. The seats' seeds are
  derived only when a seat reads its seed (:attr:`Seat.reads_seed`): a policy that draws no random number (``rule``)
  is reset with ``None``, and a learner's seat without a tracker needs none.

So the deal and every reshuffle depend on the game seed alone, whatever the seats' belief settings or
policies draw: the same seed plays the same game with every belief setting.

A :class:`Seat` builds the observer its policy declares it needs (:func:`~uno_env.policy.needs_of`), resets
the policy, hands it the start view (the optional ``observe_start``), and asks it for legal actions
(:meth:`Seat.play`: through the policy's optional ``act_legal`` when the seat has no belief to feed, else through
a full view and ``act``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from uno_env.belief import BeliefKind
from uno_env.core import COMPILED_PLAYERS, DETERMINISTIC_PLAYERS
from uno_env.game import Game, IllegalActionError
from uno_env.observation import SeatObserver
from uno_env.policy import Policy, checked_policy, compiled_player, needs_of
from uno_env.seeding import seed_words, seeded_generator
from uno_env.view import PublicView


@dataclass(frozen=True, slots=True)
class GameSeeds:
    """The independent streams of one game, all derived from its seed by :func:`game_seeds`."""

    deal: np.random.Generator
    reshuffle: np.random.Generator
    seed: int  # the game seed, from which :attr:`seats` derives the seats' seeds

    @property
    def seats(self) -> tuple[int, int]:
        """The two seats' seeds, derived anew at each access from the third child of ``SeedSequence(seed)``: its
        generator's ``integers(0, 2**62, size=2)``."""
        # Made only when read: a game against the rule player with no belief tracker reads no seat seed (start_game).
        # The draw is taken from the bit generator: numpy's integers below 2**62 are its 64-bit words shifted right
        # by 2 (Lemire's method never rejects for a power of two), the same numbers without integers()'s ~6 µs of
        # argument checks.
        words = np.random.PCG64(seed_words(self.seed, (2,))).random_raw(2).tolist()
        return words[0] >> 2, words[1] >> 2


def game_seeds(seed: int) -> GameSeeds:
    """The deal and reshuffle generators and (derived when read) the two seats' seeds of the game with this seed."""
    # SeedSequence(seed).spawn(3)'s children's generators, built directly (spawn builds exactly these sequences) and
    # seeded by uno_env.seeding's compiled hash: a fifth of numpy's cost, which counts at every env reset. The seats'
    # seeds are derived when read.
    return GameSeeds(seeded_generator(seed, (0,)), seeded_generator(seed, (1,)), seed)


class Seat:
    """One seat of a game: its observer and, unless a learner outside plays it, its policy.

    Args:
        index: the seat, 0 or 1.
        policy: the Policy playing the seat (``None``: the caller acts, as an env's learner does).
        belief: the observer's belief setting when there is no policy (a policy declares its own ``needs``).
        n_particles: the particle count, unless the policy's ``needs`` sets one.
        dict_obs: encode observations as a dict of named channels (:class:`~uno_env.observation.SeatObserver`).
    """

    def __init__(self, index: int, policy: Policy | None = None, *, belief: BeliefKind = "none",
                 n_particles: int = 1000, dict_obs: bool = False) -> None:
        self.index = index
        self.policy = checked_policy(policy) if policy is not None else None
        if policy is not None:
            needs = needs_of(policy)
            belief, n_particles = needs.belief, needs.n_particles or n_particles
        self.observer = SeatObserver(belief, n_particles, dict_obs)
        # A policy deciding from the legal actions and two public values (uno_env.policy, ``act_legal``) skips the
        # full view, unless a belief tracker must see every view; the game and the decisions are the same.
        self._act_legal = (getattr(policy, "act_legal", None) if policy is not None and belief == "none" else None)
        # What draws from the seat's seed: a belief tracker, and a policy, unless its own class names a compiled
        # player that draws no random number (its decisions are that player's, so it has no randomness to seed).
        deterministic = policy is not None and compiled_player(policy) in DETERMINISTIC_PLAYERS
        #: Whether the seat reads its seed in :meth:`start`; :func:`start_game` derives the seats' seeds only then.
        self.reads_seed = belief != "none" or (policy is not None and not deterministic)

    def compiled_twin(self) -> tuple[int, Callable[[int], np.ndarray] | None] | None:
        """The compiled twin making exactly this seat's decisions, for the single env's compiled path
        (:mod:`uno_env.single`): core's policy code and, for a player that draws random numbers, the source of its
        generator's draws (:meth:`~uno_env.opponents.SeededPolicy.words`). The twin is the policy class's own
        ``compiled_player`` (:mod:`uno_env.policy`); ``None`` for a policy without one (a subclass too, which may
        decide otherwise), for an instance that sets its own to ``None`` (a setting the compiled player does not
        have) and for a seat with belief features, whose tracker must see every view."""
        name = None if self._act_legal is None else compiled_player(self.policy)
        if name is None:
            return None
        if name not in COMPILED_PLAYERS:  # never another player's kernel in its place
            raise ValueError(f"{type(self.policy).__name__}.compiled_player is {name!r}, not a compiled player "
                             f"({', '.join(map(repr, COMPILED_PLAYERS))})")
        code = COMPILED_PLAYERS.index(name)
        return code, (None if name in DETERMINISTIC_PLAYERS else self.policy.words)

    def start(self, game: Game, seed: int | None) -> None:
        """Begin a game right after the deal: reset the policy and the tracker from ``seed``, hand the start view.

        ``seed`` is ``None`` for a seat that does not read it (:attr:`reads_seed`)."""
        if self.policy is not None:
            self.policy.reset(seed)
        if self.observer.belief_kind != "none":  # only a tracker draws from it
            self.observer.start(game, self.index, seeded_generator(seed + 1))
        if self.policy is not None and hasattr(self.policy, "observe_start"):  # the optional hook (uno_env.policy)
            self.policy.observe_start(game.observe(self.index, consume_events=False))

    def observe(self, game: Game) -> PublicView:
        """The seat's next view, encoded for it; every view of the seat must come from here (the tracker learns)."""
        return self.observer.observe(game, self.index)

    def play(self, game: Game) -> int:
        """Ask the policy for its action at ``game``'s position (this seat to move) and apply it; the action.

        ``IllegalActionError`` (the game unchanged) if the policy chose an illegal action. Without belief features
        a policy's ``act_legal`` decides, without the full view; otherwise :meth:`observe` and :meth:`act`. The
        seat's event cursor then stays where it was, which nothing reads (a tracker would, and has the full view).
        """
        if self._act_legal is None:
            action = self.act(game, self.observe(game))
        else:
            legal = game.legal_actions()
            action = self._act_legal(legal, game.hands[self.index], game.hand_sizes[1 - self.index])
            if action not in legal:
                raise self._illegal(game, action)
        game.apply(action)  # legal: checked here or in act
        return action

    def act(self, game: Game, view: PublicView) -> int:
        """The policy's action for ``view``, the seat's current view; ``IllegalActionError`` if it is not legal."""
        action = self.policy.act(view)
        if not game.is_legal(action):
            raise self._illegal(game, action)
        return action

    def _illegal(self, game: Game, action: int) -> IllegalActionError:
        return IllegalActionError(f"{type(self.policy).__name__} on seat {self.index} chose an illegal action: "
                                  + game.illegal_reason(action))


def deal_game(seed: int, first_player: int | None = None) -> Game:
    """The game of ``seed`` right after the deal, before any seat starts: what :func:`start_game` deals.

    ``first_player``: the seat that moves first, ``None`` for a coin flip from the deal's stream. For code
    that needs a seed's deal without seating anyone (a saved game's seed, re-dealt to check it).
    """
    return _deal(game_seeds(seed), first_player)


def _deal(seeds: GameSeeds, first_player: int | None) -> Game:
    first = int(seeds.deal.integers(2)) if first_player is None else first_player
    game = Game.deal(seeds.deal, first)
    game.rng = seeds.reshuffle
    return game


def start_game(seats: Sequence[Seat], seed: int, first_player: int | None = None, start: Game | None = None) -> Game:
    """Deal a game from ``seed`` (or take ``start``, a position set up elsewhere) and start both seats.

    ``first_player``: the seat that moves first, ``None`` for a coin flip from the deal's stream (:func:`deal_game`).
    A ``start`` game keeps its position and first player; its reshuffles, like a dealt game's, come from the seed.
    """
    seeds = game_seeds(seed)
    if start is None:
        start = _deal(seeds, first_player)
    else:
        start.rng = seeds.reshuffle
    # The seats' seeds only if a seat reads its own; a seat that does not gets None, whatever the other reads.
    seat_seeds = seeds.seats if any(seat.reads_seed for seat in seats) else (None, None)
    for seat, seat_seed in zip(seats, seat_seeds, strict=True):
        seat.start(start, seat_seed if seat.reads_seed else None)
    return start
