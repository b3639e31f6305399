"""The rules' hot path, compiled with numba: one definition of each rule, shared by :class:`~uno_env.game.Game`.

Two layers:

* **Rule functions** (:func:`after_play`, :func:`draw_plan`, :func:`draw_impossible_outcome`): what a play or a
  draw does to the turn, the pending draw and the outcome (RULES.md, "A turn" and "Running out of cards").
  They are plain Python, and :class:`~uno_env.game.Game` calls them as they are; the kernels below call
  their compiled twins (``numba.njit`` of the same function object), so there is one source for each rule.
  Playability is :data:`uno_env.cards.PLAYABLE` and the cards of an action :func:`uno_env.cards.action_card`;
  the kernels read tables built from those.
* **Kernels** over one game's state packed in an int64 vector (:func:`pack_state`, layout below): legal
  actions, a play, a draw with its reshuffle and the draw-impossible end, the compiled players' move distributions
  (:func:`player_options`, over the rule player's and the opponent styles' functions of :mod:`uno_env.style_kernels`;
  :class:`~uno_env.opponents.RulePolicy` and the styles of :mod:`uno_env.styles` call it), their choices
  (:func:`choose`), and a playout to the end of the game with a built-in policy for each seat (:func:`playout`;
  :func:`simulate`, the search player's rollouts; :func:`advance`, which stops where another player, compiled
  elsewhere, chooses).
* **The driver**, :func:`play_turn`: the one loop that moves seats through turns. The single env's
  compiled path (:mod:`uno_env.single`), the native vector env (:mod:`uno_env.vector`) and :func:`advance` (so every
  playout) call it; what differs between them is data in its control vector (where to stop, each seat's player, a
  budget) and arguments that may be ``None`` (the Python generators' draws, a compiled chooser, the event log).
* **The outcome table**, :data:`OUTCOME_REWARD` (:func:`reward`): a game's outcome as each seat's reward, which the
  envs pay and the search player maps onto 0..1.

Why policies are codes, not compiled functions passed in: numba compiles a kernel for each function argument
anew in every process (the cache does not recognise the function type again), which cost 8 s per process.

Why :class:`~uno_env.game.Game` keeps Python lists instead of this packed state: a numba call costs about half a
microsecond of dispatch and every read of a numpy scalar from Python about 0.2 µs, which would make a game stepped
from Python slower, while the kernels pay off where many steps run without Python in between (docs/design.md,
"Compiled kernels and their Python twin"). The single Gymnasium env is such a place when its opponent is built in: its
compiled path (:mod:`uno_env.single`) plays the agent's action and all the opponent's moves in one call.

Randomness: :class:`~uno_env.game.Game` shuffles with its ``numpy.random.Generator``. Compiled playouts cannot
call it, so they shuffle with a splitmix64 stream held in a ``uint64`` array of one element, seeded by the
caller from its own seeded generator: the same seed gives the same playout.

Compilation is cached on disk (``cache=True``) next to this module; numba falls back to a user cache directory
when the package directory is read-only, and :mod:`uno_env.compile_cache` to a private temporary one (compiled once
per process) when neither is writable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from uno_env.cards import (
    DECK_SIZE,
    DRAW2,
    DRAW_ACTION,
    HAND_SIZE,
    NUM_ACTIONS,
    NUM_CARD_TYPES,
    PLAYABLE,
    REVERSE,
    SKIP,
    WILD,
    WILD_DRAW4,
    action_card,
    card_colour,
    card_rank,
    full_deck,
)
from uno_env.style_kernels import (
    RULE_NOISE,
    dump_actions_action,
    fixed_colour_action,
    highest_number_action,
    hold_actions_options,
    hold_wilds_options,
    rule_action,
    wilds_first_action,
)

#: The compiled players (the kernels' built-in policies), by name; a name's index is its policy code, the code
#: :func:`choose` plays. The one table of them: the native vector env's opponents (``uno_env.vector.OPPONENTS``),
#: the training config's ``vec_env: native`` check and the single env's compiled twins
#: (a Python policy's ``compiled_twin``, :meth:`uno_env.seat.Seat.compiled_twin`) all read it. Besides ``random`` and
#: ``rule``, every opponent style of :mod:`uno_env.styles` is one. Adding a player is a name here, its code below and
#: its branch in :func:`player_options`, which raises on a code it does not know rather than play another player
#: (tests/test_compiled_players.py checks every name has its branch).
COMPILED_PLAYERS: tuple[str, ...] = ("random", "rule", "noisy-rule", "hold-wilds", "wilds-first", "dump-actions",
                                     "hold-actions", "highest-number", "rule-fixed-colour")
#: The policy codes of the compiled players, in the table's order (the unpacking fails if the table grows alone).
(RANDOM_POLICY, RULE_POLICY, NOISY_RULE_POLICY, HOLD_WILDS_POLICY, WILDS_FIRST_POLICY, DUMP_ACTIONS_POLICY,
 HOLD_ACTIONS_POLICY, HIGHEST_NUMBER_POLICY, FIXED_COLOUR_POLICY) = range(len(COMPILED_PLAYERS))
#: The compiled players that draw no random number: a Python policy whose own class names one of them has nothing
#: to seed, so its seat derives no seed for it (:class:`uno_env.seat.Seat`).
DETERMINISTIC_PLAYERS: tuple[str, ...] = ("rule", "wilds-first", "dump-actions", "highest-number",
                                          "rule-fixed-colour")
#: Each compiled player's share of uniformly random choices over all its legal actions (:func:`player_options`), by
#: policy code: :data:`~uno_env.style_kernels.RULE_NOISE` for ``noisy-rule``, 0 for the others.
PLAYER_NOISE = np.array([RULE_NOISE if name == "noisy-rule" else 0.0 for name in COMPILED_PLAYERS])
# Whether each compiled player draws random numbers, by policy code (the driver asks Python for words only for them).
_DRAWS = np.array([name not in DETERMINISTIC_PLAYERS for name in COMPILED_PLAYERS])
#: Outcome codes: a running game (the kernels' stand-in for ``Game.outcome is None``), a drawn game; else the
#: winning seat.
RUNNING, DRAWN = -2, -1
#: The one outcome table: ``OUTCOME_REWARD[seat, outcome - RUNNING]`` is ``seat``'s reward for a game's outcome
#: code, +1 a win, -1 a loss, 0 a drawn game or one still running. The envs pay it as it is (:func:`reward`) and
#: the search player maps it onto 0..1 (``agents.search_kernels.reward_of``); no other place restates it.
OUTCOME_REWARD = np.array([[0.0, 0.0, 1.0, -1.0],    # seat 0: RUNNING, DRAWN, seat 0 won, seat 1 won
                           [0.0, 0.0, -1.0, 1.0]])   # seat 1

# ---------------------------------------------------------------------- packed state layout
_N = NUM_CARD_TYPES
HANDS = 0  # seat p's hand: 54 counts at HANDS + 54 * p
DECK = HANDS + 2 * _N  # deck cards, deck[DECK_LEN - 1] drawn first (Game.deck's order)
DISCARD = DECK + DECK_SIZE  # discard pile bottom ... top (Game.discard's order)
COUNTS = DISCARD + DECK_SIZE  # discard pile as 54 counts (Game.discard_counts)
HAND_SIZES = COUNTS + _N  # two hand sizes
DECK_LEN = HAND_SIZES + 2
DISCARD_LEN = DECK_LEN + 1
COLOUR = DISCARD_LEN + 1  # colour in force
TOP_RANK = COLOUR + 1
PENDING = TOP_RANK + 1
CURRENT = PENDING + 1  # seat to move
OUTCOME = CURRENT + 1  # RUNNING, DRAWN or the winning seat
STATE_SIZE = OUTCOME + 1

_RANK_OF = tuple(card_rank(card) for card in range(_N))
#: The card type each action plays (-1 for the draw): :func:`uno_env.cards.action_card` as a table for the kernels.
ACTION_CARD = np.array([action_card(a) for a in range(NUM_ACTIONS)], dtype=np.int64)
# With (colour, top_rank) in force, the actions playing a card type of cards.PLAYABLE[colour][top_rank], ascending:
# _PLAYABLE_ACTIONS[colour, top_rank, :_PLAYABLE_COUNT[colour, top_rank]], and the card type each plays in
# _PLAYABLE_CARDS. At most 24 (13 of the colour, 3 of the rank, 4 colours of each wild): legal_actions_into checks
# those, not all 60, a third faster (measured).
_PLAYABLE_COUNT = np.zeros((4, 15), dtype=np.int64)
_PLAYABLE_ACTIONS = np.zeros((4, 15, 24), dtype=np.int64)
for _colour in range(4):
    for _rank in range(15):
        for _action in range(DRAW_ACTION):
            if ACTION_CARD[_action] in PLAYABLE[_colour][_rank]:
                _PLAYABLE_ACTIONS[_colour, _rank, _PLAYABLE_COUNT[_colour, _rank]] = _action
                _PLAYABLE_COUNT[_colour, _rank] += 1
_PLAYABLE_CARDS = ACTION_CARD[_PLAYABLE_ACTIONS]


# ---------------------------------------------------------------------- rule functions (Python and compiled)
def after_play(card: int, seat: int, hand_size_after: int) -> tuple[int, int, int]:
    """``(seat to move, pending draw, outcome)`` after ``seat`` played ``card`` and holds ``hand_size_after``.

    An empty hand wins at once; skip and reverse give the player another turn; +2/+4 make the other seat draw
    2/4 (a decision with the single action "draw"), after which the player moves again.
    """
    if hand_size_after == 0:
        return seat, 0, seat
    rank = _RANK_OF[card]
    if rank in (SKIP, REVERSE):
        return seat, 0, RUNNING
    if rank == DRAW2:
        return 1 - seat, 2, RUNNING
    if card == WILD_DRAW4:
        return 1 - seat, 4, RUNNING
    return 1 - seat, 0, RUNNING


def draw_plan(pending: int, deck_size: int, discard_size: int) -> tuple[int, bool, bool]:
    """``(cards to draw, reshuffle first, draw possible)`` for the draw action with ``pending`` in force.

    The draw is the pending 2/4, else 1. A deck with fewer cards first takes the discard pile except its top
    card; if it still has too few, the draw is impossible and the game ends (:func:`draw_impossible_outcome`).
    """
    count = pending if pending > 0 else 1
    reshuffle = deck_size < count
    available = deck_size + discard_size - 1 if reshuffle else deck_size
    return count, reshuffle, available >= count


def draw_impossible_outcome(seat: int, mine: int, theirs: int) -> int:
    """The outcome when ``seat`` (holding ``mine`` cards) cannot draw: fewer cards wins, equal hands draw."""
    if mine == theirs:
        return DRAWN
    return seat if mine < theirs else 1 - seat


@njit(cache=True)
def reward(outcome: int, seat: int) -> float:
    """``seat``'s reward for the outcome code ``outcome``: a read of :data:`OUTCOME_REWARD` (compiled and Python)."""
    return OUTCOME_REWARD[seat, outcome - RUNNING]


_after_play = njit(cache=True)(after_play)
#: :func:`draw_plan` compiled, for kernels here and in :mod:`uno_env.single`.
compiled_draw_plan = njit(cache=True)(draw_plan)
_draw_impossible_outcome = njit(cache=True)(draw_impossible_outcome)


# ---------------------------------------------------------------------- packing
def pack_state(hands: Sequence[Sequence[int]], deck: Sequence[int], discard: Sequence[int], active_colour: int,
               current: int, pending_draw: int, outcome: int | None = None) -> np.ndarray:
    """A game's state as the kernels' int64 vector; arguments as :class:`~uno_env.game.Game`'s fields.

    ``deck`` is drawn from its end and ``discard`` ends with the top card; ``outcome`` ``None`` means running.
    """
    return pack_into(np.empty(STATE_SIZE, dtype=np.int64), hands, deck, discard, active_colour, current,
                     pending_draw, outcome)


def pack_into(state: np.ndarray, hands: Sequence[Sequence[int]], deck: Sequence[int], discard: Sequence[int],
              active_colour: int, current: int, pending_draw: int, outcome: int | None = None) -> np.ndarray:
    """:func:`pack_state` written into ``state`` (int64, :data:`STATE_SIZE`), which it returns: the single env packs
    every new game into the same vector (:mod:`uno_env.single`)."""
    state[:] = 0
    state[HANDS:HANDS + 2 * _N] = [*hands[0], *hands[1]]
    state[HAND_SIZES] = sum(hands[0])
    state[HAND_SIZES + 1] = sum(hands[1])
    state[DECK:DECK + len(deck)] = deck
    state[DECK_LEN] = len(deck)
    state[DISCARD:DISCARD + len(discard)] = discard
    state[DISCARD_LEN] = len(discard)
    for card in discard:  # one card after a deal: a loop beats numpy's call overhead
        state[COUNTS + card] += 1
    state[COLOUR] = active_colour
    state[TOP_RANK] = _RANK_OF[discard[-1]]
    state[PENDING] = pending_draw
    state[CURRENT] = current
    state[OUTCOME] = RUNNING if outcome is None else outcome
    return state


def pack_states(hand0: Sequence[int], hands1: np.ndarray, decks: np.ndarray, discard: Sequence[int],
                active_colour: int, current: int, pending_draw: int, outcome: int | None = None) -> np.ndarray:
    """Games that differ only in seat 1's hand and the deck, packed at once: a ``(B, STATE_SIZE)`` array.

    ``hands1`` is ``(B, 54)`` counts and ``decks`` ``(B, L)`` cards (each row drawn from its end); the other
    arguments are those of :func:`pack_state`, shared by all B games. The search player packs its worlds so.
    """
    hands1 = np.asarray(hands1, dtype=np.int64)
    states = np.zeros((len(hands1), STATE_SIZE), dtype=np.int64)
    states[:, HANDS:HANDS + _N] = hand0
    states[:, HANDS + _N:HANDS + 2 * _N] = hands1
    states[:, HAND_SIZES] = sum(hand0)
    states[:, HAND_SIZES + 1] = hands1.sum(axis=1)
    states[:, DECK:DECK + decks.shape[1]] = decks
    states[:, DECK_LEN] = decks.shape[1]
    states[:, DISCARD:DISCARD + len(discard)] = discard
    states[:, DISCARD_LEN] = len(discard)
    states[:, COUNTS:COUNTS + _N] = np.bincount(np.asarray(discard, dtype=np.int64), minlength=_N)
    states[:, COLOUR] = active_colour
    states[:, TOP_RANK] = _RANK_OF[discard[-1]]
    states[:, PENDING] = pending_draw
    states[:, CURRENT] = current
    states[:, OUTCOME] = RUNNING if outcome is None else outcome
    return states


def seed_stream(seed: int) -> np.ndarray:
    """A kernel random stream (splitmix64 state) started from ``seed`` (an int in 0..2**64-1)."""
    return np.array([seed], dtype=np.uint64)


# ---------------------------------------------------------------------- kernels
@njit(inline="always")
def splitmix_mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function: 64 random bits from an advanced state ``z`` (inlined where it is called)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def next_u64(stream: np.ndarray) -> np.uint64:
    """splitmix64: advance the stream and return 64 random bits."""
    z = stream[0] + np.uint64(0x9E3779B97F4A7C15)
    stream[0] = z
    return splitmix_mix(z)


@njit(cache=True)
def below(stream: np.ndarray, n: int) -> int:
    """A uniform int in ``0..n-1`` from the stream (53 random bits scaled, as ``int(random() * n)``)."""
    return int((next_u64(stream) >> np.uint64(11)) * (1.0 / 9007199254740992.0) * n)


@njit(cache=True)
def uniform(stream: np.ndarray) -> float:
    """A uniform float in [0, 1) from the stream (53 bits: :func:`below` ``2**53``, scaled)."""
    return below(stream, 9007199254740992) / 9007199254740992.0


@njit(cache=True)
def legal_actions_into(state: np.ndarray, out: np.ndarray) -> int:
    """Write the legal actions of the seat to move into ``out`` (ascending); return how many (0 once over)."""
    if state[OUTCOME] != RUNNING:
        return 0
    n = 0
    if state[PENDING] == 0:
        hand = HANDS + _N * state[CURRENT]
        colour, rank = state[COLOUR], state[TOP_RANK]
        for k in range(_PLAYABLE_COUNT[colour, rank]):
            if state[hand + _PLAYABLE_CARDS[colour, rank, k]] > 0:
                out[n] = _PLAYABLE_ACTIONS[colour, rank, k]
                n += 1
    if n == 0:  # a pending draw, or nothing playable: draw is the one legal action
        out[0] = DRAW_ACTION
        n = 1
    return n


# The step kernels' hot functions come compiled twice: under their own name, compiled and cached for Python and the
# other kernels, and as a twin of the same Python function inlined into the kernel that calls it (numba's
# inline="always": the driver, the compiled envs' step kernels). Inlined, a call costs neither the call nor the atomic
# reference counting numba does for each array argument, about a tenth of a vector env step
# (measured).
#: :func:`legal_actions_into` inlined where it is called.
legal_actions_inline = njit(inline="always")(legal_actions_into.py_func)


@njit(inline="always")  # only kernels call it, in the driver's loop
def play_card(state: np.ndarray, action: int) -> None:
    """Play the card of a legal non-draw ``action`` for the seat to move."""
    seat = state[CURRENT]
    card = ACTION_CARD[action]
    state[HANDS + _N * seat + card] -= 1
    state[HAND_SIZES + seat] -= 1
    state[DISCARD + state[DISCARD_LEN]] = card
    state[DISCARD_LEN] += 1
    state[COUNTS + card] += 1
    state[COLOUR] = action // 15
    state[TOP_RANK] = _RANK_OF[card]
    state[CURRENT], state[PENDING], state[OUTCOME] = _after_play(card, seat, state[HAND_SIZES + seat])


@njit(cache=True)
def gather_discard(state: np.ndarray) -> int:
    """A reshuffle's first half: the discard pile except its top card goes under the deck's cards, as Game does.

    Returns the deck's new length; the caller shuffles ``state[DECK:DECK + length]`` (:func:`_reshuffle` with a
    kernel stream, the single env with the game's ``Generator``: :mod:`uno_env.single`).
    """
    moved = state[DISCARD_LEN] - 1
    deck_len = state[DECK_LEN]
    for i in range(moved):
        card = state[DISCARD + i]
        state[DECK + deck_len + i] = card
        state[COUNTS + card] -= 1
    state[DISCARD] = state[DISCARD + moved]
    state[DISCARD_LEN] = 1
    deck_len += moved
    state[DECK_LEN] = deck_len
    return deck_len


@njit(cache=True)
def _reshuffle(state: np.ndarray, stream: np.ndarray) -> None:
    """The discard pile except its top card goes under the deck's cards, as Game does, and the deck is shuffled."""
    shuffle(state[DECK:DECK + gather_discard(state)], stream)


@njit(inline="always")  # only kernels call it, in the driver's loop
def draw_planned(state: np.ndarray, count: int, possible: bool) -> None:
    """A draw's second half, after :func:`draw_plan` and its reshuffle if any: the seat to move takes ``count``
    cards from the deck's end, or the game ends if the draw is not ``possible``."""
    seat = state[CURRENT]
    state[PENDING] = 0
    if not possible:
        state[OUTCOME] = _draw_impossible_outcome(seat, state[HAND_SIZES + seat], state[HAND_SIZES + 1 - seat])
        return
    hand = HANDS + _N * seat
    for _ in range(count):
        state[DECK_LEN] -= 1
        state[hand + state[DECK + state[DECK_LEN]]] += 1
    state[HAND_SIZES + seat] += count
    state[CURRENT] = 1 - seat  # after any draw the other seat moves (RULES.md, "A turn")


@njit(cache=True)
def _draw(state: np.ndarray, stream: np.ndarray) -> None:
    """The draw action for the seat to move: 1 card or the pending 2/4, reshuffling or ending the game if needed."""
    count, reshuffle, possible = compiled_draw_plan(state[PENDING], state[DECK_LEN], state[DISCARD_LEN])
    if reshuffle:
        _reshuffle(state, stream)
    draw_planned(state, count, possible)


@njit(cache=True)
def apply_action(state: np.ndarray, action: int, stream: np.ndarray) -> None:
    """Apply a legal ``action`` of the seat to move; reshuffles draw from ``stream``."""
    if action == DRAW_ACTION:
        _draw(state, stream)
    else:
        play_card(state, action)


# ---------------------------------------------------------------------- the compiled players' choices
@njit(cache=True)
def player_options(policy: int, hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray,
                   n: int) -> tuple[int, int]:
    """How the compiled player ``policy`` (a code of :data:`COMPILED_PLAYERS`) chooses among ``legal[:n]``
    (ascending), holding ``hand`` (54 counts) against ``opponent_hand_size`` cards: ``(choice, options)``.

    ``options`` is a mask over action ids (bit ``a``: action ``a``), the actions the player chooses uniformly among;
    ``choice`` is its one option when it has one by its rule (a deterministic player's choice), else -1. Besides, a
    share :data:`PLAYER_NOISE` ``[policy]`` of its choices is uniform over all of ``legal[:n]``. This is the one
    definition of each player's move distribution (the players' functions are in :mod:`uno_env.style_kernels`): the
    Python policies, :func:`choose` and the belief's likelihood (``uno_env.belief.models``) all read it. One branch
    per name of :data:`COMPILED_PLAYERS`; ``ValueError`` for any other code, never another player's choice.
    """
    if n == 1 and 0 <= policy < len(COMPILED_PLAYERS):  # a forced move: a draw has no colour for a style to weigh
        return legal[0], 1 << legal[0]
    if policy == RANDOM_POLICY:
        options = 0
        for i in range(n):
            options |= 1 << legal[i]
        return -1, options
    if policy == HOLD_WILDS_POLICY:
        return -1, hold_wilds_options(legal, n)
    if policy == HOLD_ACTIONS_POLICY:
        return -1, hold_actions_options(legal, n)
    if policy in (RULE_POLICY, NOISY_RULE_POLICY):  # noisy-rule: rule, but for its uniform share
        choice = rule_action(hand, opponent_hand_size, legal, n)
    elif policy == WILDS_FIRST_POLICY:
        choice = wilds_first_action(hand, opponent_hand_size, legal, n)
    elif policy == DUMP_ACTIONS_POLICY:
        choice = dump_actions_action(hand, opponent_hand_size, legal, n)
    elif policy == HIGHEST_NUMBER_POLICY:
        choice = highest_number_action(hand, opponent_hand_size, legal, n)
    elif policy == FIXED_COLOUR_POLICY:
        choice = fixed_colour_action(hand, opponent_hand_size, legal, n)
    else:
        raise ValueError("choose: a policy code outside uno_env.core.COMPILED_PLAYERS")
    return choice, 1 << choice


@njit(inline="always")
def _draw_below(n: int, stream: np.ndarray, words: np.ndarray | None, ctl: np.ndarray | None) -> int:
    """A uniform int in ``0..n-1``: from the kernel ``stream``, or (``words`` given) as the Python generator's
    ``integers(n)`` computes it from its draws ``words[ctl[WORD]:]`` (:func:`generator_below`)."""
    if words is None:
        return below(stream, n)
    value, ctl[WORD], ctl[HALF_WORD] = generator_below(words, ctl[WORD], ctl[HALF_WORD], n)
    return value


@njit(inline="always")
def _draw_unit(stream: np.ndarray, words: np.ndarray | None, ctl: np.ndarray | None) -> float:
    """A uniform float in [0, 1): from the kernel ``stream``, or the Python generator's ``random()``."""
    if words is None:
        return uniform(stream)
    value = generator_random(words[ctl[WORD]])
    ctl[WORD] += 1
    return value


@njit(inline="always")
def choose_from(state: np.ndarray, legal: np.ndarray, n: int, policy: int, stream: np.ndarray,
                words: np.ndarray | None, ctl: np.ndarray | None) -> int:
    """The compiled player ``policy``'s choice among ``legal[:n]`` for the seat to move, its random draws from
    ``stream`` or (``words`` given) the Python generator's draws, as its Python policy makes them: first, for a
    player with noise, ``random() < noise`` (then a uniform legal action, ``integers(n)``), else ``integers(k)`` among
    its ``k`` options, drawn only when ``k > 1`` (numpy's ``integers(1)`` draws nothing)."""
    seat = state[CURRENT]
    hand = state[HANDS + _N * seat:HANDS + _N * (seat + 1)]
    choice, options = player_options(policy, hand, state[HAND_SIZES + 1 - seat], legal, n)
    noise = PLAYER_NOISE[policy]
    if noise > 0.0 and _draw_unit(stream, words, ctl) < noise:
        return legal[_draw_below(n, stream, words, ctl)]
    if choice >= 0:
        return choice
    k = 0
    for i in range(n):
        k += (options >> legal[i]) & 1
    j = _draw_below(k, stream, words, ctl) if k > 1 else 0
    for i in range(n):
        if (options >> legal[i]) & 1:
            if j == 0:
                return legal[i]
            j -= 1
    return legal[0]  # not reached: the options are legal actions


@njit(cache=True)
def choose(state: np.ndarray, legal: np.ndarray, n: int, policy: int, stream: np.ndarray) -> int:
    """The compiled player ``policy``'s choice among ``legal[:n]`` for the seat to move, drawing from ``stream``
    (:func:`player_options`: one branch per name of :data:`COMPILED_PLAYERS`). ``ValueError`` for any other code: it
    never falls through to another player."""
    return choose_from(state, legal, n, policy, stream, None, None)


# ---------------------------------------------------------------------- the driver: play on until a seat's decision
# The compiled step sequence exists once, here: the native vector env, the single env's compiled path and
# the playouts of the search player and its network all play their games on with play_turn.
#: The opponent code of a chooser compiled elsewhere (a checkpoint's actor): the one after :data:`COMPILED_PLAYERS`.
EXTERNAL = len(COMPILED_PLAYERS)
#: ``ctl[ACTION]`` besides a legal action: none (the driver chooses, or stops), and the stop seat's forfeit.
NO_ACTION, FORFEIT = -1, -2
#: What :func:`play_turn` returns: done, or what Python must do before the next call (only with ``words``: shuffle the
#: deck's cards with the game's ``Generator``, or append random words).
DONE, NEED_SHUFFLE, NEED_WORDS = 0, 1, 2
#: The driver's control vector ``ctl`` (int64), by field: the action under way; whether the draw under way had its
#: reshuffle; the next unused random word; the events logged; the seat whose decisions stop the driver (-1: none, play
#: to the end); whether that seat's forced moves stop it too (the envs: a forced draw is the agent's decision); the
#: actions the driver may still choose; each seat's player (a code of COMPILED_PLAYERS, or EXTERNAL); and, when it
#: stopped at the stop seat's choice, how many legal actions that seat has (written to ``legal``), else 0; and the
#: Python generator's buffered 32-bit draw, -1 for none (:func:`generator_uint32`). Callers may append fields of their
#: own after CTL_SIZE (the single env's report).
ACTION, SHUFFLED, WORD, EVENTS, STOP_SEAT, STOP_FORCED, BUDGET, POLICY0, POLICY1, CHOICES, HALF_WORD = range(11)
CTL_SIZE = 11
#: The event log, a row per public event: its kind, the seat (absolute), the card played or the count drawn, the
#: colour in force after a play (-1 otherwise), then up to 4 drawn cards in draw order. The kinds are core's own
#: codes: uno_env.single turns the rows into uno_env.view's events.
LOGGED_PLAY, LOGGED_DRAW, LOGGED_RESHUFFLE = range(3)
KIND, SEAT, VALUE, LOG_COLOUR, DRAWN_CARDS = range(5)
LOG_WIDTH = DRAWN_CARDS + 4
#: A compiled player's choice on a Python generator's draws takes at most two 64-bit words (a ``random()`` and an
#: ``integers(n)``; Lemire's method rejects a draw with odds below 2**-26 here); the driver asks for more below this
#: many, so a choice never runs out halfway.
MIN_WORDS = 8


@njit(cache=True)
def control(stop_seat: int, stop_forced: bool, policy0: int, policy1: int, budget: int) -> np.ndarray:
    """A fresh control vector for :func:`play_turn` (fields above): no action under way, nothing logged."""
    ctl = np.zeros(CTL_SIZE, dtype=np.int64)
    ctl[ACTION] = NO_ACTION
    ctl[STOP_SEAT] = stop_seat
    ctl[STOP_FORCED] = stop_forced
    ctl[BUDGET] = budget
    ctl[POLICY0] = policy0
    ctl[POLICY1] = policy1
    ctl[HALF_WORD] = -1
    return ctl


# The Python generators' draws: numpy's PCG64 makes 64-bit words (``bit_generator.random_raw``); ``random()`` takes
# one word's upper 53 bits, and a 32-bit draw is the lower half of a fresh word whose upper half is kept for the next
# 32-bit draw (numpy's pcg64_next32). The functions below do the same from the words, the kept half in the caller's
# hands, so a compiled player makes exactly its Python policy's choices (the single env's compiled path).
@njit(inline="always")
def generator_uint32(words: np.ndarray, position: int, half: int) -> tuple[np.uint64, int, int]:
    """The generator's next 32-bit draw from its 64-bit words ``words[position:]`` and the kept upper half ``half``
    (-1: none): ``(draw, next position, half kept now)``."""
    if half >= 0:
        return np.uint64(half), position, -1
    word = words[position]
    return word & np.uint64(0xFFFFFFFF), position + 1, np.int64(word >> np.uint64(32))


@njit(cache=True)
def generator_below(words: np.ndarray, position: int, half: int, n: int) -> tuple[int, int, int]:
    """``numpy.random.Generator.integers(n)`` (``1 < n < 2**32``) computed from that generator's next draws (64-bit
    words ``words[position:]`` and the kept half ``half``, :func:`generator_uint32`), as numpy's C code does
    (Lemire's method with rejection); ``(value, next position, half kept now)``."""
    bound = np.uint64(n)
    word, position, half = generator_uint32(words, position, half)
    product = word * bound
    if (product & np.uint64(0xFFFFFFFF)) < bound:
        threshold = (np.uint64(0x100000000) - bound) % bound  # numpy's (UINT32_MAX - rng) % rng_excl
        while (product & np.uint64(0xFFFFFFFF)) < threshold:
            word, position, half = generator_uint32(words, position, half)
            product = word * bound
    return np.int64(product >> np.uint64(32)), position, half


@njit(inline="always")
def generator_random(word: np.uint64) -> float:
    """``numpy.random.Generator.random()`` made from the generator's 64-bit ``word`` (its upper 53 bits)."""
    return float(word >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _log(log: np.ndarray, ctl: np.ndarray, kind: int, seat: int, value: int, colour: int) -> int:
    row = ctl[EVENTS]
    ctl[EVENTS] = row + 1
    log[row, KIND], log[row, SEAT], log[row, VALUE], log[row, LOG_COLOUR] = kind, seat, value, colour
    return row


@njit(cache=True)
def play_turn(state: np.ndarray, ctl: np.ndarray, stream: np.ndarray, words: np.ndarray | None, chooser,
              params: tuple, legal: np.ndarray, log: np.ndarray | None) -> int:
    """Play ``ctl[ACTION]`` (a legal action of the seat to move, :data:`FORFEIT` or :data:`NO_ACTION`), then every
    move up to the stop seat's next decision (``ctl[STOP_SEAT]``), the game's end, or ``ctl[BUDGET]`` moves.

    The moves are the players' of ``ctl[POLICY0]`` / ``ctl[POLICY1]``: :func:`choose` for a code of
    :data:`COMPILED_PLAYERS`; ``chooser(state, legal, n, params)`` for :data:`EXTERNAL`. Every forced move (a single
    legal action) is played without asking, the stop seat's too unless ``ctl[STOP_FORCED]``. Numba compiles a version
    for each kind of argument, and an argument that is ``None`` drops its branches:

    * ``words`` ``None``: every random draw (the random players' choices, the reshuffles) comes from the kernel
      ``stream``. ``words`` an array: the draws are the Python generators' (the single env, whose games must be
      :class:`~uno_env.game.Game`'s seed for seed): a random player's choices come from its generator's 64-bit
      words (:func:`choose_from`, :func:`generator_below`), and a reshuffle returns :data:`NEED_SHUFFLE` for Python
      to shuffle ``state[DECK:DECK + DECK_LEN]`` with the game's ``Generator``; :data:`NEED_WORDS` asks for more
      words. The next call resumes where this one stopped (``ctl`` holds where).
    * ``log``: the public events, a row each (:data:`LOG_WIDTH` columns), counted in ``ctl[EVENTS]``; ``None`` logs
      nothing.

    :data:`FORFEIT` (an illegal action under ``illegal_action="lose"``) makes the stop seat lose at once. Returns
    :data:`DONE` (``ctl[CHOICES]`` then says how many legal actions the stop seat has, 0 unless it stopped at a
    choice), or what Python must do first.
    """
    # The fields the loop reads at every move are held in locals and written back at every exit.
    stop_seat, stop_forced, budget = ctl[STOP_SEAT], ctl[STOP_FORCED], ctl[BUDGET]
    action = ctl[ACTION]
    ctl[CHOICES] = 0
    if action == FORFEIT:  # nothing is logged, as Game's forfeit
        state[OUTCOME] = 1 - stop_seat
        action = NO_ACTION
    while state[OUTCOME] == RUNNING:
        seat = state[CURRENT]
        if action == NO_ACTION:
            if budget <= 0 or (seat == stop_seat and stop_forced):
                break
            n = legal_actions_inline(state, legal)
            if n == 1:  # a forced move: the players draw no random number for it
                action = legal[0]
            elif seat == stop_seat:
                ctl[CHOICES] = n
                break
            else:
                policy = ctl[POLICY0] if seat == 0 else ctl[POLICY1]
                if chooser is not None and policy == EXTERNAL:
                    action = chooser(state, legal, n, params)
                else:  # choose raises on a code it does not know: never another player
                    if (words is not None and ctl[WORD] + MIN_WORDS > len(words)
                            and 0 <= policy < EXTERNAL and _DRAWS[policy]):
                        ctl[ACTION], ctl[BUDGET] = NO_ACTION, budget
                        return NEED_WORDS
                    action = choose_from(state, legal, n, policy, stream, words, ctl)
            budget -= 1
        if action == DRAW_ACTION:
            count, reshuffle, possible = compiled_draw_plan(state[PENDING], state[DECK_LEN], state[DISCARD_LEN])
            if reshuffle and not ctl[SHUFFLED]:  # as Game: gather, shuffle, log, then draw
                deck_len = gather_discard(state)
                if log is not None:
                    _log(log, ctl, LOGGED_RESHUFFLE, -1, 0, -1)
                if words is not None:
                    ctl[SHUFFLED], ctl[ACTION], ctl[BUDGET] = 1, action, budget
                    return NEED_SHUFFLE
                shuffle(state[DECK:DECK + deck_len], stream)
            ctl[SHUFFLED] = 0
            deck_end = state[DECK_LEN]
            draw_planned(state, count, possible)
            if log is not None and state[OUTCOME] == RUNNING:
                row = _log(log, ctl, LOGGED_DRAW, seat, count, -1)
                for i in range(count):  # draw order: the card that was at the deck's end first
                    log[row, DRAWN_CARDS + i] = state[DECK + deck_end - 1 - i]
        else:
            play_card(state, action)
            if log is not None:
                _log(log, ctl, LOGGED_PLAY, seat, state[DISCARD + state[DISCARD_LEN] - 1], state[COLOUR])
        action = NO_ACTION
    ctl[ACTION], ctl[BUDGET] = NO_ACTION, budget
    return DONE


#: :func:`play_turn` inlined where it is called (see :data:`legal_actions_inline`): the compiled envs' step kernels.
play_turn_inline = njit(inline="always")(play_turn.py_func)


@njit(cache=True)
def advance(state: np.ndarray, stop_seat: int, policy0: int, policy1: int, stream: np.ndarray, legal: np.ndarray,
            max_actions: int) -> int:
    """Play on, seat 0 with built-in ``policy0`` and seat 1 with ``policy1``, until ``stop_seat`` has a choice.

    Forced moves (a single legal action) are played for ``stop_seat`` too. Returns how many legal actions
    ``stop_seat`` has then (written to ``legal``), or 0 once the game is over or ``max_actions`` actions were
    played. With ``stop_seat`` -1 it plays to the end (:func:`playout`); with a seat, a caller plays that seat's
    choices with a policy compiled elsewhere (:mod:`agents.compiled_actor`). The driver, :func:`play_turn`, plays.
    """
    ctl = control(stop_seat, False, policy0, policy1, max_actions)
    play_turn(state, ctl, stream, None, None, (), legal, None)
    return ctl[CHOICES]


@njit(cache=True)
def playout(state: np.ndarray, policy0: int, policy1: int, stream: np.ndarray, max_actions: int) -> int:
    """Play until the game ends, seat 0 with ``policy0`` and seat 1 with ``policy1`` (codes of
    :data:`COMPILED_PLAYERS`). Returns the outcome; :data:`RUNNING` if ``max_actions`` actions did not finish it."""
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    advance(state, -1, policy0, policy1, stream, legal, max_actions)
    return state[OUTCOME]


@njit(cache=True)
def simulate(state: np.ndarray, action: int, policy0: int, policy1: int, seed: np.uint64, max_actions: int) -> int:
    """One search simulation: apply ``action`` to a copy of ``state``, then :func:`playout`; the outcome.

    The random stream starts from ``seed``, so the same world and seed replay the same simulation.
    """
    game = state.copy()
    stream = np.empty(1, dtype=np.uint64)
    stream[0] = seed
    apply_action(game, action, stream)
    return playout(game, policy0, policy1, stream, max_actions)


# ---------------------------------------------------------------------- the deal (the native vector env)
_FULL_DECK = np.array(full_deck(), dtype=np.int64)
_COLOUR_OF = tuple(card_colour(card) for card in range(_N))


@njit(cache=True)
def shuffle(cards: np.ndarray, stream: np.ndarray) -> None:
    """Fisher-Yates shuffle of ``cards`` in place from the stream (the reshuffle's and the deal's)."""
    for i in range(len(cards) - 1, 0, -1):
        j = below(stream, i + 1)
        card = cards[i]
        cards[i] = cards[j]
        cards[j] = card


@njit(cache=True)
def deal_into(state: np.ndarray, stream: np.ndarray, first_player: int) -> None:
    """Deal a fresh game into ``state`` as :meth:`~uno_env.game.Game.deal` does (RULES.md, "Set-up").

    The same steps in the same order: shuffle the 108 cards, deal 7 to each seat in turn (seat 0 first) from
    the deck's end, reshuffle the rest while a wild would start the pile, turn up the top card. The shuffles draw
    from the kernel ``stream``, not a ``Generator``, so the same seed gives another game than ``Game.deal``'s.
    ``first_player`` is the seat to move; -1 draws it from the stream (a coin flip).
    """
    if first_player < 0:
        first_player = below(stream, 2)
    state[:] = 0
    deck = state[DECK:DECK + DECK_SIZE]
    deck[:] = _FULL_DECK
    shuffle(deck, stream)
    n = DECK_SIZE
    for _ in range(HAND_SIZE):
        for seat in range(2):
            n -= 1
            state[HANDS + _N * seat + deck[n]] += 1
    while deck[n - 1] >= WILD:  # a wild may not start the pile: put it back, reshuffle, turn again
        shuffle(deck[:n], stream)
    n -= 1
    top = deck[n]
    deck[n:] = 0  # the dealt cards' old slots: unused, as after pack_state
    state[DECK_LEN] = n
    state[DISCARD] = top
    state[DISCARD_LEN] = 1
    state[COUNTS + top] = 1
    state[HAND_SIZES] = HAND_SIZE
    state[HAND_SIZES + 1] = HAND_SIZE
    state[COLOUR] = _COLOUR_OF[top]
    state[TOP_RANK] = _RANK_OF[top]
    state[PENDING] = 0
    state[CURRENT] = first_player
    state[OUTCOME] = RUNNING
