"""The search player's compiled hot path (:mod:`agents.search`): root selection and the batch of simulations.

* :func:`select_root`: UCB1 over the root's legal actions, each tried once first in a given order; or, given a
  network's priors, PUCT. The one definition of the root's choice, which the loop below calls.
* :func:`run_root`: many simulations in one call, each a root choice, a compiled :func:`uno_env.core.simulate` in
  its world and the backup into the root's statistics. Python between simulations (a UCB pass, a kernel call per
  world and the bookkeeping) cost more than the simulation itself once the rollouts were compiled. When a network
  plays the searching seat (its critic perhaps scoring the position a few moves on), the simulations run in
  batches (:func:`pick_batch`, :func:`network_rewards`): a forward pass over many positions reads the weights once
  for all of them, which made the 512x512x256 guide's simulations several times cheaper.
* :func:`deal_worlds`: a batch of determinizations as packed states with their seeds: the opponent hands given
  (from a belief's sampler) or drawn here as uniformly random subsets of the unseen cards (card counting's
  belief), and each deck a uniform shuffle of the rest. Shuffling each deck with numpy from Python and sampling
  counting's hands through the general belief machinery cost three times the simulations themselves.

The root's statistics are arrays indexed by the position of the action in the view's legal actions:
``visits`` and ``totals`` (summed rewards: win 1, draw 1/2, loss 0, or a leaf's value on that scale) per action,
and ``rewards[i, k]``, the reward of action ``i`` in world ``k``, which the default-move guard compares on shared
worlds. By common random numbers
the ``k``-th simulation of every action runs in world ``k``, so ``rewards[i, :visits[i]]`` is filled in order.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from agents.actor_kernels import play_rows, values_into
from uno_env.cards import NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.core import (
    CHOICES,
    CTL_SIZE,
    CURRENT,
    DECK,
    DECK_LEN,
    HAND_SIZES,
    HANDS,
    OUTCOME,
    STATE_SIZE,
    apply_action,
    next_u64,
    reward,
    shuffle,
    simulate,
)

_ME, _OPPONENT = 0, 1  # seats inside a determinization (agents.search's)


@njit(cache=True)
def select_root(visits: np.ndarray, totals: np.ndarray, order: np.ndarray, done: int, exploration: float,
                priors: np.ndarray | None = None, prior: float = 0.0) -> int:
    """The index of the root action simulation number ``done`` (from 0) tries.

    The first ``len(order)`` simulations try the actions in ``order`` (each action once, in a seeded random
    order); after that UCB1 ``mean + exploration * sqrt(ln(1 + done) / visits)`` picks, ties going to the first
    action. ``1 + done`` is the root's visit count: it starts at 1 so the first comparison is defined.

    With ``priors`` (each action's probability under a network's policy), PUCT picks instead:
    ``mean + prior * priors[i] * sqrt(done) / (1 + visits)``, ``done`` being the visits of all the actions. Every
    action is still tried once first, so an action's mean is always that of its own simulations (no first-play
    value to choose) and the default-move guard has every action's results on world 0; with a handful of legal
    actions and thousands of simulations, the first tries cost little.
    """
    if done < len(order):
        return order[done]
    best, best_score = 0, -math.inf
    # numba compiles the branch of the priors' type only
    if priors is None:
        log_n = math.log(1.0 + done)
        for i in range(len(visits)):
            score = totals[i] / visits[i] + exploration * math.sqrt(log_n / visits[i])
            if score > best_score:
                best, best_score = i, score
    else:
        scale = prior * math.sqrt(done)
        for i in range(len(visits)):
            score = totals[i] / visits[i] + scale * priors[i] / (1.0 + visits[i])
            if score > best_score:
                best, best_score = i, score
    return best


@njit(cache=True)
def reward_of(outcome: int) -> float:
    """The searching seat's reward of a simulated game's outcome: core's outcome table (:func:`uno_env.core.reward`)
    mapped onto 0..1, so win 1, loss 0, draw (or unfinished) 1/2."""
    return (reward(outcome, _ME) + 1.0) / 2.0


class Worlds(NamedTuple):
    """The determinizations as :func:`run_root` reads them: world ``k`` is ``states[k]`` (a packed state) with its
    simulation's random stream seeded ``seeds[k]``, the opponent's seat rolled out by the compiled player
    ``opponents[k]``. The opponent's player is part of the world, not of the simulation, so that every root action's
    k-th simulation meets the same opponent (common random numbers), whether it is one player for all the worlds or
    a model drawn for each (:class:`agents.search.SearchPolicy`'s ``opponent_rollout="modelled"``)."""

    states: np.ndarray  # (K, STATE_SIZE) int64
    seeds: np.ndarray  # (K,) uint64
    opponents: np.ndarray  # (K,) int64: a code of uno_env.core.COMPILED_PLAYERS


class RootStats(NamedTuple):
    """The root's statistics (module docstring), by the index ``i`` of each action among the legal ones."""

    actions: np.ndarray  # (A,) int64: the action of root index i
    order: np.ndarray  # the root indices the first simulations try, each once
    visits: np.ndarray  # (A,) int64
    totals: np.ndarray  # (A,) float64: summed rewards
    rewards: np.ndarray  # (A, K) float64: rewards[i, k], action i's reward in world k
    picks: np.ndarray  # (BATCH, 2) int64 scratch: a batch's (root index, world) pairs (pick_batch)
    picked: np.ndarray  # (BATCH,) float64 scratch: their rewards


class Playouts(NamedTuple):
    """How :func:`run_root` selects and plays its simulations (the scalars; the network's weights, when one guides
    them, are :func:`run_root`'s own arguments, so numba drops their branches when they are ``None``)."""

    exploration: float  # UCB1's constant
    policy: int  # the searching seat's built-in rollout policy (a code of uno_env.core.COMPILED_PLAYERS)
    max_actions: int  # a simulation's bound on actions
    leaf_moves: int  # with a critic: the searching seat's decisions played before it scores (network_rewards)
    prior: float  # PUCT's constant, with priors
    batch: int  # with a network: the simulations chosen and played together (pick_batch), 1 to BATCH


@njit(cache=True)
def value_reward(value: float, current: int) -> float:
    """The searching seat's reward, on the scale of :func:`reward_of`, of a running game that the critic scores
    ``value`` (:func:`agents.actor_kernels.value_of`, from the side of the seat to move, ``current``: +1 a win, -1 a
    loss)."""
    reward = (value + 1.0) / 2.0
    return reward if current == _ME else 1.0 - reward


@njit(cache=True)
def _apply_root(game: np.ndarray, stream: np.ndarray, state: np.ndarray, seed: np.uint64, action: int) -> None:
    """Start a simulation: ``game`` becomes a copy of the world ``state`` after the root ``action``, its random
    stream seeded ``seed`` (as :func:`uno_env.core.simulate` seeds it)."""
    game[:] = state
    stream[0] = seed
    apply_action(game, action, stream)


@njit(cache=True)
def network_rewards(worlds_fields: tuple, actions: np.ndarray, picks: np.ndarray, n: int, playouts_fields: tuple,
                    actor: tuple, value: tuple | None, out: np.ndarray) -> None:
    """The rewards of ``n`` simulations (at most :data:`~agents.actor_kernels.BATCH`) played together, the network
    ``actor`` on the searching seat: simulation ``j`` applies ``actions[picks[j, 0]]`` in world ``picks[j, 1]`` (of
    the :class:`Worlds` ``worlds_fields``) and plays on, the opponent by that world's player (``worlds.opponents``);
    ``out[j]`` is its reward (``playouts_fields``: a :class:`Playouts`).

    Without a critic (``value`` None) each game is played to its end and scores its outcome (:func:`reward_of`).
    With one, each stops after ``playouts.leaf_moves`` of the searching seat's decisions, at its next decision, where
    the critic scores it (:func:`value_reward`; 0 scores the searching seat's first decision after the opponent's
    reply); a game over before it scores its outcome. Each round of the actor's choices, and the critic's values, is
    one forward pass over the games still running (:func:`agents.actor_kernels.play_rows`): the simulation's result
    is the one it has played alone, up to the rounding of the batched products.
    """
    worlds, playouts = Worlds(*worlds_fields), Playouts(*playouts_fields)
    games = np.empty((n, STATE_SIZE), dtype=np.int64)
    streams = np.empty((n, 1), dtype=np.uint64)
    opponents = np.empty(n, dtype=np.int64)
    for j in range(n):
        k = picks[j, 1]
        _apply_root(games[j], streams[j], worlds.states[k], worlds.seeds[k], actions[picks[j, 0]])
        opponents[j] = worlds.opponents[k]
    ctls = np.empty((n, CTL_SIZE), dtype=np.int64)
    legal = np.empty((n, NUM_ACTIONS), dtype=np.int64)
    play_rows(games, n, _ME, opponents, actor, streams, ctls, legal,
              playouts.max_actions if value is None else playouts.leaf_moves, playouts.max_actions)
    leaves = np.empty(n, dtype=np.int64)
    m = 0
    for j in range(n):
        if value is None or ctls[j, CHOICES] == 0:
            out[j] = reward_of(games[j, OUTCOME])
        else:
            leaves[m] = j
            m += 1
    if value is not None and m > 0:
        values = np.empty(m, dtype=np.float32)
        values_into(games, leaves, m, value, legal, values)
        for r in range(m):
            j = leaves[r]
            out[j] = value_reward(values[r], games[j, CURRENT])


@njit(cache=True)
def pick_batch(visits: np.ndarray, totals: np.ndarray, order: np.ndarray, done: int, size: int, n_worlds: int,
               exploration: float, priors: np.ndarray | None, prior: float, picks: np.ndarray) -> tuple[int, bool]:
    """Choose simulations number ``done`` onwards, up to ``size`` of them, to run together: ``picks[j]`` is (root
    index, world), the world being the action's next by common random numbers. Returns how many were chosen and
    whether the choice stopped because an action's next world is not drawn yet (``n_worlds`` are).

    Each is :func:`select_root`'s choice with the simulations already chosen in the batch counted as visits that
    scored the action's current mean (a *virtual visit*: the mean stays, the exploration term shrinks), so a batch
    spreads over the actions as its simulations would, one by one, if each scored its action's mean. A batch of one
    is exactly the sequential search. The first tries (one per action, in ``order``) end a batch: an action has no
    mean before its first result.
    """
    if done < len(order):
        size = min(size, len(order) - done)
    if size == 1:  # the sequential search's choice: nothing pending, so no copies (the built-in playouts' path)
        i = select_root(visits, totals, order, done, exploration, priors, prior)
        if visits[i] == n_worlds:
            return 0, True
        picks[0, 0], picks[0, 1] = i, visits[i]
        return 1, False
    pending = np.zeros(len(visits), dtype=np.int64)
    counted, summed = visits.copy(), totals.copy()
    for j in range(size):
        i = select_root(counted, summed, order, done + j, exploration, priors, prior)
        k = visits[i] + pending[i]
        if k == n_worlds:
            return j, True
        picks[j, 0], picks[j, 1] = i, k
        if visits[i] > 0:
            summed[i] += totals[i] / visits[i]
        pending[i] += 1
        counted[i] += 1
    return size, False


@njit(cache=True)
def run_root(worlds_fields: tuple, root_fields: tuple, done: int, stop: int, playouts_fields: tuple,
             actor: tuple | None = None, value: tuple | None = None, priors: np.ndarray | None = None) -> int:
    """Run simulations number ``done`` to ``stop - 1``: one at a time with built-in rollout policies
    (:func:`uno_env.core.simulate`), or, when a network plays the searching seat, in batches of up to
    :data:`~agents.actor_kernels.BATCH` chosen by :func:`pick_batch` and played together (:func:`network_rewards`:
    one forward pass per round of the network's choices instead of one per choice).

    World ``k`` is ``worlds.states[k]`` with its random stream seeded ``worlds.seeds[k]``; the action of root index
    ``i`` is ``root.actions[i]``; the searching seat rolls out with the built-in ``playouts.policy``, or with the
    network ``actor`` (:func:`agents.compiled_actor.actor_params`) unless it is ``None``, the opponent with the
    world's player ``worlds.opponents[k]``. With the critic ``value`` too
    (:func:`agents.compiled_actor.value_params`), each simulation stops after ``playouts.leaf_moves`` of the searching
    seat's decisions and the critic scores it. ``priors`` and ``playouts.prior`` select the root actions by PUCT
    (:func:`select_root`).
    Updates ``root``'s ``visits``, ``totals`` and ``rewards`` in place and returns the count of simulations done,
    which is less than ``stop`` when the next one needs a world beyond ``worlds``: the caller draws more worlds and
    calls again, so the simulations are the same as in one call.

    ``worlds_fields``, ``root_fields`` and ``playouts_fields`` are a :class:`Worlds`, :class:`RootStats` and
    :class:`Playouts` or plain tuples of their fields in order: numba's dispatcher types a NamedTuple argument on a slow
    path (about 10 us a call, measured), which a search with a time budget, one call per batch, would pay.
    """
    worlds, root, playouts = Worlds(*worlds_fields), RootStats(*root_fields), Playouts(*playouts_fields)
    states, seeds, actions = worlds.states, worlds.seeds, root.actions
    visits, totals = root.visits, root.totals
    batch = 1 if actor is None else playouts.batch
    picks, rewards = root.picks, root.picked  # the caller's, so a search with a time budget allocates nothing here
    while done < stop:
        if batch > 1 and visits.max() + batch > len(states):
            break  # a batch could run out of worlds midway: better a full one after the caller draws more
        n, short = pick_batch(visits, totals, root.order, done, min(batch, stop - done), len(states),
                              playouts.exploration, priors, playouts.prior, picks)
        # numba compiles the branch of the actor's type only: None keeps the built-in playouts
        if actor is None:
            for j in range(n):
                k = picks[j, 1]
                rewards[j] = reward_of(simulate(states[k], actions[picks[j, 0]], playouts.policy,
                                                worlds.opponents[k], seeds[k], playouts.max_actions))
        elif n > 0:
            network_rewards(worlds_fields, actions, picks, n, playouts_fields, actor, value, rewards)
        for j in range(n):
            i, k = picks[j, 0], picks[j, 1]
            root.rewards[i, k] = rewards[j]
            visits[i] += 1
            totals[i] += rewards[j]
        done += n
        if short:
            break
    return done


@njit(cache=True)
def deal_worlds(base: np.ndarray, unseen: np.ndarray, hands: np.ndarray, hand_size: int, sample_hands: bool,
                stream: np.ndarray, states: np.ndarray, seeds: np.ndarray) -> None:
    """Fill ``states`` (rows of packed states) and ``seeds`` with one determinization each.

    ``base`` is the packed decision state without seat 1's hand and the deck; ``unseen`` counts the cards in
    neither (54 counts). Seat 1 gets ``hands[w]`` (54 counts of ``hand_size`` cards), or, with ``sample_hands``,
    the first ``hand_size`` cards of a uniform shuffle of the unseen cards, which makes its hand a uniformly random
    subset. The deck is a uniform shuffle of the other unseen cards. Every draw, and each world's seed for its
    simulation's stream, comes from ``stream``.
    """
    cards = np.empty(unseen.sum(), dtype=np.int64)
    for w in range(len(states)):
        # cards: seat 1's hand first, then the deck (hand_size onwards)
        n = 0
        if sample_hands:
            for card in range(NUM_CARD_TYPES):
                for _ in range(unseen[card]):
                    cards[n] = card
                    n += 1
            shuffle(cards, stream)
        else:
            for card in range(NUM_CARD_TYPES):
                for _ in range(hands[w, card]):
                    cards[n] = card
                    n += 1
            for card in range(NUM_CARD_TYPES):
                for _ in range(unseen[card] - hands[w, card]):
                    cards[n] = card
                    n += 1
            shuffle(cards[hand_size:], stream)
        state = states[w]
        state[:] = base
        for i in range(hand_size):
            state[HANDS + NUM_CARD_TYPES + cards[i]] += 1
        state[HAND_SIZES + 1] = hand_size
        deck_len = len(cards) - hand_size
        state[DECK:DECK + deck_len] = cards[hand_size:]
        state[DECK_LEN] = deck_len
        seeds[w] = next_u64(stream)
