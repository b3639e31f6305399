"""The single env's compiled path: the agent's action, the opponent's moves and the encoding in one numba call.

:class:`~uno_env.env.UnoEnv` uses a :class:`CompiledGame` when its opponent is a built-in policy with a compiled twin
(``random`` or ``rule``: :meth:`uno_env.seat.Seat.compiled_twin`), the agent has no belief features and the
observation is not privileged; otherwise it steps :class:`~uno_env.game.Game` in Python. Both play the same games:

* the deal, the policies' seeds and the first player still come from :func:`uno_env.seat.start_game` (a
  :class:`~uno_env.game.Game`, which is then packed into :mod:`uno_env.core`'s state vector);
* the rules are core's kernels (``legal_actions_into``, ``apply_action``, :func:`uno_env.core.gather_discard`,
  :func:`uno_env.core.draw_planned`), the encoding :func:`uno_env.observation.encode_seat_into`;
* a reshuffle shuffles with the game's own ``numpy.random.Generator``: the kernel gathers the discard pile under the
  deck and returns, Python shuffles the deck's slice (``Generator.shuffle`` draws the same for an array as for the
  list :class:`~uno_env.game.Game` shuffles), and the kernel resumes the draw;
* the ``random`` opponent's choices are ``Generator.integers(n)`` of its own generator: numpy computes them from
  32-bit draws by Lemire's method, so the kernel takes 32-bit draws of that generator
  (:meth:`uno_env.opponents.RandomPolicy.words`) and applies the same method (:func:`generator_below`); the kernel
  returns for more when they run low. The other compiled players are :func:`uno_env.core.choose` (``rule``: its
  :func:`uno_env.core.rule_action`, which ``RulePolicy`` calls too).

tests/test_single.py plays both paths side by side and checks every observation, mask, reward and ``info``.
Why: through :class:`~uno_env.game.Game` an env step built public views for both seats, converted Python lists to
arrays for the encoder and checked each action's legality twice; here one call does the rules and the encoding and
Python only builds the ``info`` dict, about half the cost per step (docs/BENCHMARKS.md, issue 12).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from uno_env import core
from uno_env.cards import CARD_NAMES, DECK_SIZE, DRAW_ACTION, NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.game import Game
from uno_env.observation import BASE_SIZE, LEGAL_CHANNEL, encode_seat_into
from uno_env.view import DRAW, PLAY, RESHUFFLE, Event, PublicView, public_info

AGENT, OPPONENT = 0, 1
# ctl, the kernel's control vector (int64): the next unused random word; events logged; the action under way
# (-1: none, the agent chooses next); whether the draw under way has had its reshuffle; then what the kernel reports
# for the info dict, read by Python in one tolist(): how many legal actions the agent has (0 outside its turn), the
# top card, the colour in force, the opponent's hand size, deck and discard sizes, the pending draw, the outcome, the
# agent's hand size.
_WORD, _EVENTS, _ACTION, _SHUFFLED, _N_LEGAL, _TOP, _COLOUR, _OPPONENT_SIZE, _DECK, _DISCARD, _PENDING, _OUTCOME, \
    _HAND_SIZE = range(13)
CTL_SIZE = 13
#: What the kernel returns: done (the agent to move, or the game over), or what Python must do before calling again.
DONE, NEED_SHUFFLE, NEED_WORDS = 0, 1, 2
# One event per row: kind, seat (absolute), card or count, colour or -1, then up to 4 drawn cards in draw order.
_LOG_WIDTH = 8
# A step logs the agent's action, a reshuffle and the opponent's turn: its plays (each from its hand, so fewer
# than 108 in a row), a reshuffle and a draw. 256 rows hold any step.
_LOG_ROWS = 256
# The random opponent's choices take one 32-bit word each (Lemire's method rejects a word with odds below 2**-26
# here); the kernel asks for more below this many, so a choice never runs out halfway.
_MIN_WORDS = 8
_REFILL_WORDS = 128


@njit(cache=True)
def generator_below(words: np.ndarray, position: int, n: int) -> tuple[int, int]:
    """``numpy.random.Generator.integers(n)`` (``1 < n < 2**32``) computed from that generator's next 32-bit draws
    ``words[position:]``, as numpy's C code does (Lemire's method with rejection); ``(value, next position)``."""
    bound = np.uint64(n)
    product = np.uint64(words[position]) * bound
    position += 1
    if (product & np.uint64(0xFFFFFFFF)) < bound:
        threshold = (np.uint64(0x100000000) - bound) % bound  # numpy's (UINT32_MAX - rng) % rng_excl
        while (product & np.uint64(0xFFFFFFFF)) < threshold:
            product = np.uint64(words[position]) * bound
            position += 1
    return int(product >> np.uint64(32)), position


@njit(cache=True)
def _log(log: np.ndarray, ctl: np.ndarray, kind: int, seat: int, value: int, extra: int) -> int:
    row = ctl[_EVENTS]
    ctl[_EVENTS] = row + 1
    log[row, 0], log[row, 1], log[row, 2], log[row, 3] = kind, seat, value, extra
    return row


@njit(cache=True)
def run(state: np.ndarray, ctl: np.ndarray, opponent: int, words: np.ndarray, legal: np.ndarray, log: np.ndarray,
        obs: np.ndarray, hand: np.ndarray) -> int:
    """Play ``ctl[_ACTION]`` (the agent's legal action, or -1) and the opponent's moves until the agent is to move or
    the game is over, logging the public events; then encode the agent's observation into ``obs``, its legal
    actions into ``legal`` and its cards into ``hand`` (card types ascending, a type once per copy: the order of
    ``info["hand"]``). Returns :data:`DONE`, or :data:`NEED_SHUFFLE` / :data:`NEED_WORDS` when Python must
    shuffle the deck or add random words first; calling again resumes where it stopped."""
    # The random opponent draws its generator's words (its Python twin's draws); the others draw from no stream, so
    # this one is never read. A stochastic player added to core.COMPILED_PLAYERS needs its twin's draws here too.
    no_stream = np.zeros(1, dtype=np.uint64)
    while state[core.OUTCOME] == core.RUNNING:
        if ctl[_ACTION] < 0:
            if state[core.CURRENT] == AGENT:
                break
            n = core.legal_actions_into(state, legal)
            if n == 1:  # a forced move: the policies draw no random number for it
                ctl[_ACTION] = legal[0]
            elif opponent == core.RANDOM_POLICY:
                if ctl[_WORD] + _MIN_WORDS > len(words):
                    return NEED_WORDS
                choice, ctl[_WORD] = generator_below(words, ctl[_WORD], n)
                ctl[_ACTION] = legal[choice]
            else:  # the other compiled players (rule) draw no random number; choose raises on an unknown code
                ctl[_ACTION] = core.choose(state, legal, n, opponent, no_stream)
        action = ctl[_ACTION]
        seat = state[core.CURRENT]
        if action == DRAW_ACTION:
            count, reshuffle, possible = core.compiled_draw_plan(state[core.PENDING], state[core.DECK_LEN],
                                                                 state[core.DISCARD_LEN])
            if reshuffle and not ctl[_SHUFFLED]:  # as Game: gather, shuffle (in Python), log, then draw
                core.gather_discard(state)
                _log(log, ctl, RESHUFFLE, -1, 0, -1)
                ctl[_SHUFFLED] = 1
                return NEED_SHUFFLE
            ctl[_SHUFFLED] = 0
            deck_end = state[core.DECK_LEN]
            core.draw_planned(state, count, possible)
            if state[core.OUTCOME] == core.RUNNING:
                row = _log(log, ctl, DRAW, seat, count, -1)
                for i in range(count):  # draw order: the card that was at the deck's end first
                    log[row, 4 + i] = state[core.DECK + deck_end - 1 - i]
        else:
            core.play_card(state, action)
            _log(log, ctl, PLAY, seat, state[core.DISCARD + state[core.DISCARD_LEN] - 1], state[core.COLOUR])
        ctl[_ACTION] = -1
    n_legal = core.legal_actions_into(state, legal) if state[core.OUTCOME] == core.RUNNING else 0
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
    return DONE


class CompiledGame:
    """The single env's games on the compiled path: the packed state, the kernel's buffers (kept from game to game),
    the game's ``Generator`` (reshuffles) and the random opponent's words.

    Args:
        opponent: the opponent's built-in policy code (:meth:`uno_env.seat.Seat.compiled_twin`).
        words: the random opponent's word source (:meth:`uno_env.opponents.RandomPolicy.words`), else ``None``.
    """

    def __init__(self, opponent: int, words: Callable[[int], np.ndarray] | None = None) -> None:
        self.opponent = opponent
        self._words_source = words
        self.state = np.zeros(core.STATE_SIZE, dtype=np.int64)
        self.ctl = np.zeros(CTL_SIZE, dtype=np.int64)
        self.legal = np.zeros(NUM_ACTIONS, dtype=np.int64)
        self.log = np.full((_LOG_ROWS, _LOG_WIDTH), -1, dtype=np.int64)
        self.obs = np.zeros(BASE_SIZE, dtype=np.float32)  # the agent's observation, rewritten by every call
        self.hand = np.zeros(DECK_SIZE, dtype=np.int64)  # the agent's cards, one entry per card
        self.words = np.zeros(0, dtype=np.uint32)
        self.rng: np.random.Generator | None = None
        self.events: list[Event] = []
        self.legal_actions: list[int] = []  # the agent's, ascending; empty outside its turn
        self.outcome: int | None = None
        self._report: list[int] = []  # ctl after the last call, as Python ints

    def start(self, game: Game) -> None:
        """Take a new game as :func:`uno_env.seat.start_game` dealt it (or a scenario), before anyone moved (the
        policies already reset), and play the opponent's moves if it starts."""
        core.pack_into(self.state, game.hands, game.deck, game.discard, game.active_colour, game.current,
                       game.pending_draw)
        self.rng = game.rng
        self.ctl[:] = 0
        self.words = self._words_source(_REFILL_WORDS) if self._words_source is not None else self.words
        self.play(-1)

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
            need = run(self.state, ctl, self.opponent, self.words, self.legal, self.log, self.obs, self.hand)
            if need == DONE:
                break
            if need == NEED_SHUFFLE:  # the game's Generator, as Game._reshuffle (the same draws for an array)
                self.rng.shuffle(self.state[core.DECK:core.DECK + self.state[core.DECK_LEN]])
            else:
                self.words = np.concatenate((self.words[ctl[_WORD]:], self._words_source(_REFILL_WORDS)))
                ctl[_WORD] = 0
        report = self._report = ctl.tolist()
        self.events = [_event(row) for row in self.log[:report[_EVENTS]].tolist()]
        self.legal_actions = self.legal[:report[_N_LEGAL]].tolist()
        # Game.outcome's codes: None while running, else the winning seat or -1 (drawn); from the agent's seat 0
        # they are also uno_env.view's WIN, LOSS and DRAWN.
        self.outcome = None if report[_OUTCOME] == core.RUNNING else report[_OUTCOME]

    def forfeit(self) -> None:
        """The agent loses at once (an illegal action under ``illegal_action="lose"``), as :meth:`Game.forfeit`."""
        self.state[core.OUTCOME] = OPPONENT
        self.play(-1)  # no move: the encoding after the game, and no events (Game's forfeit logs none)

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
        """The agent's :class:`~uno_env.view.PublicView` now, with this step's events (for pictures)."""
        view = self.to_game().observe(AGENT, consume_events=False)
        view.events = list(self.events)
        return view


def _event(row: list[int]) -> Event:
    """A kernel log row as the agent's :data:`~uno_env.view.Event` (seats relative to the agent, seat 0)."""
    kind, seat, value, extra = row[:4]
    if kind == PLAY:
        return PLAY, seat, value, extra
    if kind == DRAW:
        return DRAW, seat, value, tuple(row[4:4 + value]) if seat == AGENT else None
    return RESHUFFLE, -1, 0, None
