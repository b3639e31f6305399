"""The single env's compiled path: the agent's action, the opponent's moves and the encoding in one numba call.

:class:`~uno_env.env.UnoEnv` uses a :class:`CompiledGame` when its opponent is a built-in policy with a compiled twin
(``random``, ``rule`` or an opponent style: :meth:`uno_env.seat.Seat.compiled_twin`); otherwise it steps
:class:`~uno_env.game.Game` in Python. Both play the same games:

* the deal, the policies' seeds and the first player still come from :func:`uno_env.seat.start_game` (a
  :class:`~uno_env.game.Game`, which is then packed into :mod:`uno_env.core`'s state vector);
* the agent's action and the opponent's moves are the compiled step sequence's one driver,
  :func:`uno_env.core.play_turn` (the native vector env's and the playouts' too), on the Python generators' draws;
  the encoding is :func:`uno_env.observation.encode_seat_into`;
* a reshuffle shuffles with the game's own ``numpy.random.Generator``: the driver gathers the discard pile under the
  deck and returns, Python shuffles the deck's slice (``Generator.shuffle`` draws the same for an array as for the
  list :class:`~uno_env.game.Game` shuffles), and the driver resumes the draw;
* a random opponent's choices (``random``, ``noisy-rule``, ``hold-wilds``, ``hold-actions``) are
  ``Generator.random()`` and ``Generator.integers(n)`` of its own generator: numpy computes them from the generator's
  64-bit words (Lemire's method for ``integers``), so the driver takes that generator's words
  (:meth:`uno_env.opponents.SeededPolicy.words`) and computes the same (:func:`uno_env.core.choose_from`); it returns
  for more when they run low. Every compiled opponent's move distribution is :func:`uno_env.core.player_options`,
  which its Python policy calls too;
* belief features: counting's are read off the kernel state (the native vector env's way, the same function); the
  particle filter is fed the agent's view after every call, as the Python path's observer feeds it:
  :meth:`CompiledGame.view` reads the view off the kernel state and log, the same view :meth:`Game.observe
  <uno_env.game.Game.observe>` gives, so the tracker learns the same and draws the same.

tests/test_single.py plays both paths side by side and checks every observation, mask, reward and ``info``.
Why: through :class:`~uno_env.game.Game` an env step built public views for both seats, converted Python lists to
arrays for the encoder and checked each action's legality twice; here one call does the rules and the encoding and
Python only builds the ``info`` dict, about half the cost per step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, types

from uno_env import core
from uno_env.belief import BELIEF_FEATURES
from uno_env.cards import CARD_NAMES, DECK_SIZE, NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.game import Game
from uno_env.observation import (
    BASE_SIZE,
    LEGAL_CHANNEL,
    SeatObserver,
    counting_state_features_into,
    encode_seat_into,
)
from uno_env.view import AGENT, DRAW, OPPONENT, PLAY, RESHUFFLE, Event, PublicView, public_info

# The single env's ctl: the driver's control vector (uno_env.core.play_turn), then what the kernel reports for the
# info dict, read by Python in one tolist(): how many legal actions the agent has (0 outside its turn), the top card,
# the colour in force, the opponent's hand size, deck and discard sizes, the pending draw, the outcome, the agent's
# hand size.
_N_LEGAL, _TOP, _COLOUR, _OPPONENT_SIZE, _DECK, _DISCARD, _PENDING, _OUTCOME, _HAND_SIZE = \
    range(core.CTL_SIZE, core.CTL_SIZE + 9)
_REPORT_SIZE = _HAND_SIZE + 1
_REFILL_WORDS = 128
# A step logs the agent's action, a reshuffle and the opponent's turn: its plays (each from its hand, so fewer
# than 108 in a row), a reshuffle and a draw. 256 rows hold any step.
_LOG_ROWS = 256
_NO_LIMIT = 2**62
# The agent's row of core's outcome table, by outcome code - RUNNING, as Python floats (read at every step).
_AGENT_REWARD = tuple(core.OUTCOME_REWARD[AGENT].tolist())
# core's names that CompiledGame.play and _event read at every step and event, bound here: a module attribute is one
# more lookup each time (_event: about a tenth of a microsecond an event).
_EVENTS, _ACTION, _DONE, _RUNNING = core.EVENTS, core.ACTION, core.DONE, core.RUNNING
_KIND, _SEAT, _VALUE, _LOG_COLOUR, _DRAWN_CARDS = core.KIND, core.SEAT, core.VALUE, core.LOG_COLOUR, core.DRAWN_CARDS
_LOGGED_PLAY, _LOGGED_DRAW = core.LOGGED_PLAY, core.LOGGED_DRAW
_HAND, _COUNTS = core.HANDS + NUM_CARD_TYPES * AGENT, core.COUNTS  # the agent's hand and the discard pile's counts


@njit(cache=True)
def run(state: np.ndarray, ctl: np.ndarray, opponent: int, words: np.ndarray, legal: np.ndarray, log: np.ndarray,
        obs: np.ndarray, hand: np.ndarray) -> int:
    """The driver (:func:`uno_env.core.play_turn`) on the Python generators' draws, then, once it is done, the
    agent's observation encoded into ``obs``, its legal actions into ``legal``, its cards into ``hand`` (card types
    ascending, a type once per copy: the order of ``info["hand"]``) and the report fields of ``ctl``. Returns the
    driver's status: ``DONE``, or what Python must do before calling again."""
    # A random opponent draws its generator's words (its Python twin's draws), the others no random number: this
    # stream is never read.
    no_stream = np.zeros(1, dtype=np.uint64)
    status = core.play_turn_inline(state, ctl, no_stream, words, None, (), legal, log)
    if status != core.DONE:
        return status
    n_legal = core.legal_actions_inline(state, legal) if state[core.OUTCOME] == core.RUNNING else 0
    encode_seat_into(state, AGENT, legal, n_legal, obs)
    ctl[_N_LEGAL] = n_legal
    ctl[_TOP] = state[core.DISCARD + state[core.DISCARD_LEN] - 1]
    ctl[_COLOUR] = state[core.COLOUR]
    ctl[_OPPONENT_SIZE] = state[core.HAND_SIZES + OPPONENT]
    ctl[_DECK] = state[core.DECK_LEN]
    ctl[_DISCARD] = state[core.DISCARD_LEN]
    ctl[_PENDING] = state[core.PENDING]
    ctl[_OUTCOME] = state[core.OUTCOME]
    n = 0
    for card in range(NUM_CARD_TYPES):
        for _ in range(state[core.HANDS + card]):
            hand[n] = card
            n += 1
    ctl[_HAND_SIZE] = n
    return core.DONE


#: :func:`run`'s argument types: :class:`CompiledGame`'s buffers (C-contiguous, made by numpy), its opponent code.
_RUN_TYPES = (types.int64[::1], types.int64[::1], types.int64, types.uint64[::1], types.int64[::1],
              types.int64[:, ::1], types.float32[::1], types.int64[::1])


@functools.cache
def _run_entry() -> Callable[..., int]:
    """:func:`run`'s machine code for :data:`_RUN_TYPES` (compiled, or loaded from numba's cache, on the first call).
    Called directly, it skips the dispatcher, which types all 8 arguments at every call: 0.25 to 0.9 µs of each env
    step (measured). A wrong dtype still raises ``TypeError``; a wrong
    layout would not (tests/test_single.py checks the buffers' types)."""
    return run.compile(_RUN_TYPES)


class CompiledGame:
    """The single env's games on the compiled path: the packed state, the kernel's buffers (kept from game to game),
    the game's ``Generator`` (reshuffles) and a random opponent's words.

    Args:
        opponent: the opponent's built-in policy code (:meth:`uno_env.seat.Seat.compiled_twin`).
        words: a random opponent's word source (:meth:`uno_env.opponents.SeededPolicy.words`), else ``None``.
        observer: the agent's observer: with ``belief="counting"`` its features are read off the kernel state after
            every call (:func:`~uno_env.observation.counting_state_features_into`, as the native vector env does),
            with ``"particles"`` its tracker is fed the agent's view.
    """

    def __init__(self, opponent: int, words: Callable[[int], np.ndarray] | None = None,
                 observer: SeatObserver | None = None) -> None:
        self.opponent = opponent
        kind = "none" if observer is None else observer.belief_kind
        # Counting's features depend on the position alone: the kernel state has them, and no view need be built.
        self._counting = np.zeros(BELIEF_FEATURES, np.float32) if kind == "counting" else None
        if self._counting is not None:
            observer.reads_state = True  # so it keeps no counting tracker of its own, stale from the first view on
        self._observer = observer if kind == "particles" else None  # its tracker learns from the views
        self._words_source = words
        self.state = np.zeros(core.STATE_SIZE, dtype=np.int64)
        self.ctl = np.zeros(_REPORT_SIZE, dtype=np.int64)
        self.legal = np.zeros(NUM_ACTIONS, dtype=np.int64)
        self.log = np.full((_LOG_ROWS, core.LOG_WIDTH), -1, dtype=np.int64)
        # A new game's ctl: the driver stops at every decision of the agent, forced ones too (they are env steps).
        self._fresh_ctl = np.zeros(_REPORT_SIZE, dtype=np.int64)
        self._fresh_ctl[:core.CTL_SIZE] = core.control(AGENT, True, opponent, opponent, _NO_LIMIT)
        self.obs = np.zeros(BASE_SIZE, dtype=np.float32)  # the agent's observation, rewritten by every call
        self.hand = np.zeros(DECK_SIZE, dtype=np.int64)  # the agent's cards, one entry per card
        self.words = np.zeros(0, dtype=np.uint64)
        self.rng: np.random.Generator | None = None
        self.events: list[Event] = []
        self.legal_actions: list[int] = []  # the agent's, ascending; empty outside its turn
        self.outcome: int | None = None
        self.reward = 0.0  # the agent's reward for the outcome (core.OUTCOME_REWARD), 0 while the game runs
        self._report: list[int] = []  # ctl after the last call, as Python ints

    def start(self, game: Game) -> None:
        """Take a new game as :func:`uno_env.seat.start_game` dealt it (or a scenario), before anyone moved (the
        policies already reset), and play the opponent's moves if it starts."""
        core.pack_into(self.state, game.hands, game.deck, game.discard, game.active_colour, game.current,
                       game.pending_draw)
        self.rng = game.rng
        self.ctl[:] = self._fresh_ctl
        self.words = self._words_source(_REFILL_WORDS) if self._words_source is not None else self.words
        self.play(core.NO_ACTION)

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is one of the agent's legal actions now (false once the game is over)."""
        return action in self.legal_actions

    def play(self, action: int) -> None:
        """The agent's legal ``action`` (or -1 for none, at the start), then the opponent's moves, then the encoding;
        :attr:`events` holds the public events since the agent's previous decision."""
        ctl = self.ctl
        ctl[_EVENTS] = 0
        ctl[_ACTION] = action
        while True:
            need = _run_entry()(self.state, ctl, self.opponent, self.words, self.legal, self.log, self.obs, self.hand)
            if need == _DONE:
                break
            if need == core.NEED_SHUFFLE:  # the game's Generator, as Game._reshuffle (the same draws for an array)
                self.rng.shuffle(self.state[core.DECK:core.DECK + self.state[core.DECK_LEN]])
            else:
                self.words = np.concatenate((self.words[ctl[core.WORD]:], self._words_source(_REFILL_WORDS)))
                ctl[core.WORD] = 0
        report = self._report = ctl.tolist()
        self.events = [_event(row) for row in self.log[:report[_EVENTS]].tolist()]
        self.legal_actions = self.legal[:report[_N_LEGAL]].tolist()
        # Game.outcome's codes: None while running, else the winning seat or -1 (drawn); from the agent's seat 0
        # they are also uno_env.view's WIN, LOSS and DRAWN.
        self.outcome = None if report[_OUTCOME] == _RUNNING else report[_OUTCOME]
        self.reward = _AGENT_REWARD[report[_OUTCOME] - _RUNNING]
        if self._counting is not None:
            counting_state_features_into(self.state, AGENT, self._counting)
        elif self._observer is not None:  # every view of the agent, as the Python path's observer sees it
            self._observer.update(self.view())

    def forfeit(self) -> None:
        """The agent loses at once (an illegal action under ``illegal_action="lose"``), as :meth:`Game.forfeit`."""
        self.play(core.FORFEIT)  # the driver's forfeit: the encoding after the game, no events (as Game's forfeit)

    def belief_features(self) -> np.ndarray | None:
        """The agent's belief features now (float32, a new array), ``None`` without them."""
        if self._counting is not None:
            return self._counting.copy()
        return None if self._observer is None else self._observer.belief_features()

    def action_mask(self) -> np.ndarray:
        """The agent's int8 action mask: the observation's ``legal`` channel, which is the mask by definition."""
        return self.obs[LEGAL_CHANNEL].astype(np.int8)

    def info(self) -> dict[str, Any]:
        """The RULES.md ``info`` dictionary of the agent's seat (:func:`uno_env.view.public_info`)."""
        report = self._report
        hand_names = list(map(CARD_NAMES.__getitem__, self.hand[:report[_HAND_SIZE]].tolist()))
        return public_info(self.action_mask(), hand_names, report[_TOP], report[_COLOUR], report[_OPPONENT_SIZE],
                           report[_DECK], report[_DISCARD], report[_PENDING], self.events, self.outcome)

    def to_game(self) -> Game:
        """The position as a :class:`~uno_env.game.Game` (no event history): for pictures and error messages."""
        state = self.state
        hands = [state[core.HANDS + NUM_CARD_TYPES * seat:core.HANDS + NUM_CARD_TYPES * (seat + 1)].tolist()
                 for seat in (AGENT, OPPONENT)]
        deck = state[core.DECK:core.DECK + state[core.DECK_LEN]].tolist()
        discard = state[core.DISCARD:core.DISCARD + state[core.DISCARD_LEN]].tolist()
        game = Game(hands, deck, discard, int(state[core.COLOUR]), int(state[core.CURRENT]), int(state[core.PENDING]),
                    self.rng)
        game.outcome = self.outcome
        return game

    def view(self) -> PublicView:
        """The agent's :class:`~uno_env.view.PublicView` now, with this step's events (its belief tracker's input, and
        pictures'): the view :meth:`Game.observe <uno_env.game.Game.observe>` gives on the Python path, read off
        the kernel state."""
        state, report = self.state, self._report
        return PublicView(hand=state[_HAND:_HAND + NUM_CARD_TYPES].tolist(), hand_size=report[_HAND_SIZE],
                          opponent_hand_size=report[_OPPONENT_SIZE], deck_size=report[_DECK],
                          discard=state[_COUNTS:_COUNTS + NUM_CARD_TYPES].tolist(), discard_size=report[_DISCARD],
                          top=report[_TOP], active_colour=report[_COLOUR], pending_draw=report[_PENDING],
                          to_move=bool(self.legal_actions), legal_actions=list(self.legal_actions),
                          events=list(self.events), outcome=self.outcome)


def _event(row: list[int]) -> Event:
    """A kernel log row as the agent's :data:`~uno_env.view.Event` (seats relative to the agent, seat 0)."""
    kind, seat, value = row[_KIND], row[_SEAT], row[_VALUE]
    if kind == _LOGGED_PLAY:
        return PLAY, seat, value, row[_LOG_COLOUR]
    if kind == _LOGGED_DRAW:
        return DRAW, seat, value, tuple(row[_DRAWN_CARDS:_DRAWN_CARDS + value]) if seat == AGENT else None
    return RESHUFFLE, -1, 0, None
