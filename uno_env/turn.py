"""The compiled envs' one driver (issue 28): :func:`play_turn`, "the agent acts, the opponent moves until the agent's
turn or the game's end", over one game's packed state (:mod:`uno_env.core`).

Both compiled envs step their games with it: the single env's compiled path (:mod:`uno_env.single`, one game) and
the native vector env (:mod:`uno_env.vector`, each of its N games in turn: a batch of one is a batch). The outcome
then becomes a reward by core's one table (:func:`uno_env.core.reward`). What differs between the two envs is passed
in, and numba compiles a version of the driver for each (an argument that is ``None`` drops its branches):

* **randomness**: with ``words`` ``None``, every random draw (the ``random`` opponent's choices, the reshuffles) comes
  from the kernel ``stream`` (the vector env). With ``words`` an array, the draws are the Python generators' (the
  single env, whose games must be :class:`~uno_env.game.Game`'s seed for seed): the ``random`` opponent's choices come
  from its generator's 32-bit draws (:func:`generator_below`), and a reshuffle pauses (:data:`NEED_SHUFFLE`) for
  Python to shuffle the deck with the game's ``numpy.random.Generator``. The next call resumes where the last one
  stopped: the control vector ``ctl`` (named fields below) holds the action under way.
* **the opponent**: a code of :data:`uno_env.core.COMPILED_PLAYERS` (:func:`uno_env.core.choose`), or
  :data:`EXTERNAL` with a ``chooser`` compiled elsewhere (a checkpoint's actor) and its ``params``.
* **the event log**: the public events, one row each (columns below), for the single env's ``info``; ``None``
  logs nothing.

The agent's illegal action under ``illegal_action="lose"`` is the action :data:`FORFEIT`: the agent loses at once,
in both envs by the same line. The agent sits at seat 0 (:data:`AGENT`) in both.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from uno_env import core
from uno_env.cards import DRAW_ACTION
from uno_env.view import DRAW, PLAY, RESHUFFLE

AGENT, OPPONENT = 0, 1
#: The opponent code of a chooser compiled elsewhere: the one after core's compiled players.
EXTERNAL = len(core.COMPILED_PLAYERS)
#: ``ctl[ACTION]`` besides a legal action: none (the agent chooses next, or a game's opening), and a forfeit.
NO_ACTION, FORFEIT = -1, -2
#: What :func:`play_turn` returns: done (the agent to move, or the game over), or what Python must do before the next
#: call (only with ``words``: shuffle the deck's cards with the game's ``Generator``, or append random words).
DONE, NEED_SHUFFLE, NEED_WORDS = 0, 1, 2

# ctl, the driver's control vector (int64): the action under way (NO_ACTION: the agent chooses next); whether the
# draw under way has had its reshuffle; the next unused random word; the events logged. Callers may append fields
# of their own after CTL_SIZE (the single env's report).
ACTION, SHUFFLED, WORD, EVENTS = range(4)
CTL_SIZE = 4

# The event log: a row per event, the kind (view.PLAY, DRAW, RESHUFFLE), the seat (absolute), the card played or the
# count drawn, the colour in force after a play (-1 otherwise), then up to 4 drawn cards in draw order.
KIND, SEAT, VALUE, COLOUR, DRAWN_CARDS = range(5)
LOG_WIDTH = DRAWN_CARDS + 4
# A step logs the agent's action, a reshuffle and the opponent's turn: its plays (each from its hand, so fewer
# than 108 in a row), a reshuffle and a draw. 256 rows hold any step.
LOG_ROWS = 256
#: The ``random`` opponent's choices take one 32-bit word each (Lemire's method rejects a word with odds below 2**-26
#: here); the driver asks for more below this many, so a choice never runs out halfway.
MIN_WORDS = 8


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
def _log(log: np.ndarray, ctl: np.ndarray, kind: int, seat: int, value: int, colour: int) -> int:
    row = ctl[EVENTS]
    ctl[EVENTS] = row + 1
    log[row, KIND], log[row, SEAT], log[row, VALUE], log[row, COLOUR] = kind, seat, value, colour
    return row


@njit(cache=True)
def play_turn(state: np.ndarray, ctl: np.ndarray, stream: np.ndarray, words: np.ndarray | None, opponent: int,
              chooser, params: tuple, legal: np.ndarray, log: np.ndarray | None) -> int:
    """Play ``ctl[ACTION]`` (the agent's legal action, :data:`FORFEIT` or :data:`NO_ACTION`), then the opponent's
    moves until the agent is to move or the game is over; see the module docstring for the arguments.

    Returns :data:`DONE`, or :data:`NEED_SHUFFLE` / :data:`NEED_WORDS` (only with ``words``) when Python must first
    shuffle ``state[DECK:DECK + DECK_LEN]`` or give more words; calling again resumes where it stopped.
    """
    if ctl[ACTION] == FORFEIT:  # an illegal action under illegal_action="lose": the agent loses, nothing is logged
        state[core.OUTCOME] = OPPONENT
        ctl[ACTION] = NO_ACTION
    while state[core.OUTCOME] == core.RUNNING:
        if ctl[ACTION] == NO_ACTION:
            if state[core.CURRENT] == AGENT:
                break
            n = core.legal_actions_into(state, legal)
            if n == 1:  # a forced move: the players draw no random number for it
                ctl[ACTION] = legal[0]
            elif words is not None and opponent == core.RANDOM_POLICY:
                if ctl[WORD] + MIN_WORDS > len(words):
                    return NEED_WORDS
                choice, ctl[WORD] = generator_below(words, ctl[WORD], n)
                ctl[ACTION] = legal[choice]
            elif chooser is not None and opponent == EXTERNAL:
                ctl[ACTION] = chooser(state, legal, n, params)
            else:  # core.choose raises on a code it does not know: never another player
                ctl[ACTION] = core.choose(state, legal, n, opponent, stream)
        action = ctl[ACTION]
        seat = state[core.CURRENT]
        if action == DRAW_ACTION:
            count, reshuffle, possible = core.compiled_draw_plan(state[core.PENDING], state[core.DECK_LEN],
                                                                 state[core.DISCARD_LEN])
            if reshuffle and not ctl[SHUFFLED]:  # as Game: gather, shuffle, log, then draw
                deck_len = core.gather_discard(state)
                if log is not None:
                    _log(log, ctl, RESHUFFLE, -1, 0, -1)
                ctl[SHUFFLED] = 1
                if words is not None:
                    return NEED_SHUFFLE
                core.shuffle(state[core.DECK:core.DECK + deck_len], stream)
            ctl[SHUFFLED] = 0
            deck_end = state[core.DECK_LEN]
            core.draw_planned(state, count, possible)
            if log is not None and state[core.OUTCOME] == core.RUNNING:
                row = _log(log, ctl, DRAW, seat, count, -1)
                for i in range(count):  # draw order: the card that was at the deck's end first
                    log[row, DRAWN_CARDS + i] = state[core.DECK + deck_end - 1 - i]
        else:
            core.play_card(state, action)
            if log is not None:
                _log(log, ctl, PLAY, seat, state[core.DISCARD + state[core.DISCARD_LEN] - 1], state[core.COLOUR])
        ctl[ACTION] = NO_ACTION
    return DONE
