"""Control variates for the luck of the draw: each game's score minus what its chance events added by a value function.

Paired, seat-swapped deals take the luck of the deal out of an evaluation; the luck of the draw (which card comes
off the deck, what a random player picks) stays in. After a game, the evaluator replays it with every hidden card in
view and, at each *chance event*, takes the value function's value ``V`` (seat 0's expected score,
:mod:`train.evaluation.value`) of the state the event led to, minus the expectation of ``V`` over the event's possible
outcomes:

* a card drawn off the deck: uniform over the deck's cards (given everything but the deck's order, which nobody
  sees, also right after a reshuffle), so the expectation is over the deck's card types weighted by their counts. A
  draw of 2 or 4 is that many single-card events, through states where the seat still has cards to draw;
* a choice of a player whose move probabilities are known (a policy with an ``action_probabilities(legal, hand,
  opponent_hand_size)`` method, such as ``random``): the expectation is over its legal actions with those
  probabilities. Any other player's choice adds no term.

The game's *adjusted score* is its score minus the sum of these terms. Every term has expectation zero given the
game so far, whatever ``V`` is, so the adjusted score has the plain score's expectation (AIVAT, Burch et al. 2018,
with the chance events only); a ``V`` close to the truth takes most of the draw's luck out of its variance.

``V`` values a state as if both players played ``rule`` (or ``random``). Where the evaluator can replay a seat's
moves (a deterministic compiled player, a network's compiled actor: :mod:`train.evaluation.lookahead`), each outcome
is first played on with the real players' moves up to the next chance event and valued there, so the terms see what
these players make of a draw; the value stays a function of the outcome's state alone, and the terms' expectation
zero.

A player that read the deck's order could break the uniformity of the draws; no player here does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from train.evaluation.lookahead import SeatPlayers, next_chance_rows
from train.evaluation.value import (
    COLOUR,
    CURRENT,
    DECK,
    HANDS,
    NO_RANDOM,
    PENDING,
    STATE_SIZE,
    TOP,
    ValueFunction,
)
from uno_env.cards import DRAW_ACTION, NUM_CARD_TYPES, action_card, action_colour, play_action
from uno_env.core import RUNNING, after_play
from uno_env.game import Game
from uno_env.policy import compiled_player
from uno_env.seat import deal_game
from uno_env.view import DRAW, PLAY, RESHUFFLE

#: A player's move probabilities over ``legal`` (in its order) from its hand and the other hand's size.
Probabilities = Callable[[list[int], list[int], int], Sequence[float]]
_N = NUM_CARD_TYPES


def known_probabilities(policy: object) -> Probabilities | None:
    """The policy's ``action_probabilities`` if it declares its move probabilities, else ``None``."""
    method = getattr(policy, "action_probabilities", None)
    return method if callable(method) else None


@dataclass(frozen=True)
class ChanceEvents:
    """A replayed game's chance events, as rows of states to value.

    ``states`` holds, for each event, the state after each of its possible outcomes (``weights`` their
    probabilities); ``actual`` indexes the outcome that happened, one per event. ``fixed`` is seat 0's score in a
    state where the game is over (``nan`` while it runs). Every move of the game is an event: a move whose
    probabilities are not known is one outcome of weight 1 (a zero term), so ``states[actual]`` is the whole
    trajectory after the deal (what :mod:`train.evaluation.fit_value` learns from).
    """

    states: np.ndarray  # (rows, STATE_SIZE) int64
    weights: np.ndarray  # (rows,)
    fixed: np.ndarray  # (rows,)
    actual: np.ndarray  # (events,) row indices

    def values(self, value: ValueFunction, random_seats: np.ndarray = NO_RANDOM, players: SeatPlayers | None = None,
               rows: np.ndarray | None = None) -> np.ndarray:
        """Seat 0's value of every row (or of the rows ``rows`` selects): the score where the game is over, else
        ``value``'s (one batched pass), told which seats play ``random`` (:func:`random_seats`). With ``players``, a
        running row is first played on to the next chance event by the seats they replay
        (:mod:`train.evaluation.lookahead`), and valued there."""
        states, out = self.states, self.fixed.copy()
        if rows is not None:
            states, out = states[rows], out[rows]
        running = np.flatnonzero(np.isnan(out))
        if len(running):
            ahead = states[running]
            if players is not None and players.replays:
                ahead, ended = next_chance_rows(ahead, players)
                out[running] = ended
                running, ahead = running[np.isnan(ended)], ahead[np.isnan(ended)]
            if len(running):
                out[running] = value.seat0(ahead, random_seats)
        return out

    def correction(self, value: ValueFunction, random_seats: np.ndarray = NO_RANDOM,
                   players: SeatPlayers | None = None) -> float:
        """The sum over the events of ``V(outcome) - E[V]``, for seat 0: what the draws and known choices added
        (``V`` at the next chance event with ``players``, :meth:`values`)."""
        chance = self.weights < 1.0  # an event of one outcome adds nothing, whatever its value: not valued
        v = np.zeros(len(self.weights))
        v[chance] = self.values(value, random_seats, players, chance)
        return float(v[self.actual].sum() - (self.weights * v).sum())


def game_correction(seed: int, first_player: int, events: Sequence[tuple], policies: Sequence[object],
                    value: ValueFunction, players: SeatPlayers | None = None) -> float:
    """Seat 0's correction (:meth:`ChanceEvents.correction`) of the game :func:`uno_env.match.play_game` played
    between ``policies`` from ``seed`` and ``first_player``, whose engine events are ``events``: seat 0's adjusted
    score is its score minus this, seat 1's its score plus this. ``players``
    (:func:`~train.evaluation.lookahead.seat_players` of ``policies``, made once for many games) values each
    outcome at the next chance event; ``None`` values it where it is."""
    known = (known_probabilities(policies[0]), known_probabilities(policies[1]))
    return replay(deal_game(seed, first_player), events, known).correction(value, random_seats(policies), players)


def random_seats(policies: Sequence[object]) -> np.ndarray:
    """Which of the seats' players is the uniformly random one (its compiled twin is ``random``,
    :func:`uno_env.policy.compiled_player`): what :class:`~train.evaluation.value.ValueFunction` is told."""
    return np.array([compiled_player(policy) == "random" for policy in policies])


def replay(start: Game, events: Sequence[tuple], known: tuple[Probabilities | None, Probabilities | None]
           = (None, None)) -> ChanceEvents:
    """The chance events of a game: ``start`` is its dealt position (with its reshuffle generator, as
    :func:`uno_env.seat.deal_game` gives it; it is played on), ``events`` the engine's events of the game played
    (``Game.events``, absolute seats) and ``known`` the move probabilities of each seat's player, if known.

    Raises:
        ValueError: the events are not a game from ``start`` (a play that is not legal, a draw that takes other
            cards).
    """
    blocks: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    fixed: list[np.ndarray] = []
    actual: list[int] = []
    rows = 0

    def add(block: np.ndarray, probabilities: np.ndarray, scores: np.ndarray, happened: int) -> np.ndarray:
        nonlocal rows
        blocks.append(block)
        weights.append(probabilities)
        fixed.append(scores)
        actual.append(rows + happened)
        rows += len(block)
        return block[happened]

    for number, (kind, seat, value, extra) in enumerate(events, start=1):
        if kind == RESHUFFLE:
            continue  # part of the draw that follows it (or of the last draw, which the cards could not supply)
        state = state_of(start)
        if kind == PLAY:
            action = play_action(value, extra)
            legal = start.legal_actions()
            probabilities = known[seat]
            if action not in legal:
                raise ValueError(f"event {number}: action {action} is not legal here (legal: {legal})")
            options = legal if probabilities is not None and len(legal) > 1 else [action]
            p = (np.asarray(probabilities(legal, start.hands[seat], start.hand_sizes[1 - seat]), dtype=np.float64)
                 if len(options) > 1 else np.ones(1))
            if len(p) != len(options) or abs(p.sum() - 1.0) > 1e-9:
                raise ValueError(f"move probabilities {p.tolist()} for the legal actions {legal}")
            block, scores = _after_plays(state, seat, options)
            add(block, p, scores, options.index(action))
            start.apply(action)
        elif kind == DRAW:
            seen = len(start.events)
            start.step(DRAW_ACTION)
            drawn = [e for e in start.events[seen:] if e[0] == DRAW]
            if not drawn or drawn[0][3] != tuple(extra):
                raise ValueError(f"event {number}: the replay draws other cards than the game did")
            # The deck before the draw (after its reshuffle, if any): what is left plus what was drawn.
            state[DECK:DECK + _N] = np.bincount(start.deck, minlength=_N) + np.bincount(extra, minlength=_N)
            state[PENDING] = value
            for card in extra:
                state = add(*_after_draw(state, seat, card))
        else:
            raise ValueError(f"event {number}: unknown kind {kind!r}")
    if not blocks:
        empty = np.zeros(0)
        return ChanceEvents(np.zeros((0, STATE_SIZE), dtype=np.int64), empty, empty, np.zeros(0, dtype=np.int64))
    return ChanceEvents(np.concatenate(blocks), np.concatenate(weights), np.concatenate(fixed),
                        np.asarray(actual, dtype=np.int64))


def state_of(game: Game) -> np.ndarray:
    """The state row of ``game`` (:mod:`train.evaluation.value`)."""
    state = np.empty(STATE_SIZE, dtype=np.int64)
    state[HANDS:HANDS + _N] = game.hands[0]
    state[HANDS + _N:DECK] = game.hands[1]
    state[DECK:DECK + _N] = np.bincount(game.deck, minlength=_N) if game.deck else 0
    state[TOP], state[COLOUR], state[CURRENT], state[PENDING] = game.top, game.active_colour, game.current, \
        game.pending_draw
    return state


def _after_plays(state: np.ndarray, seat: int, actions: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The states after each of ``seat``'s plays ``actions`` from ``state``, and seat 0's score where one ends the
    game (``nan`` elsewhere)."""
    block = np.tile(state, (len(actions), 1))
    scores = np.full(len(actions), np.nan)
    size = int(state[HANDS + seat * _N:HANDS + (seat + 1) * _N].sum())
    for i, action in enumerate(actions):
        card = action_card(action)
        block[i, HANDS + seat * _N + card] -= 1
        block[i, TOP], block[i, COLOUR] = card, action_colour(action)
        block[i, CURRENT], block[i, PENDING], outcome = after_play(card, seat, size - 1)
        if outcome != RUNNING:
            scores[i] = 1.0 - outcome  # only a win ends the game at a play: seat 0's win is outcome 0
    return block, scores


def _after_draw(state: np.ndarray, seat: int, card: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The states after ``seat`` draws each card type the deck of ``state`` holds (``state[PENDING]`` cards still to
    draw, this one included), their probabilities, seat 0's scores (none: a draw never ends the game) and the index
    of ``card``, the one drawn."""
    deck = state[DECK:DECK + _N]
    types = np.flatnonzero(deck)
    block = np.tile(state, (len(types), 1))
    rows = np.arange(len(types))
    block[rows, HANDS + seat * _N + types] += 1
    block[rows, DECK + types] -= 1
    left = int(state[PENDING]) - 1
    # Cards still to draw: the same seat goes on drawing; after the last one the other seat moves.
    block[:, CURRENT] = seat if left else 1 - seat
    block[:, PENDING] = left
    return block, deck[types] / deck.sum(), np.full(len(types), np.nan), int(np.searchsorted(types, card))
