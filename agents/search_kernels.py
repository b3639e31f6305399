"""The search player's compiled hot path (:mod:`agents.search`): root selection and the batch of simulations.

* :func:`select_root`: UCB1 over the root's legal actions, each tried once first in a given order; or, given a
  network's priors, PUCT. The one definition of the root's choice: the compiled loop below calls it, and so does
  the Python simulation path of :class:`~agents.search.SearchPolicy` (deeper trees, Policy rollouts), once per
  simulation.
* :func:`run_root`: many simulations in one call, each a root choice, a compiled :func:`uno_env.core.simulate` in
  its world (or :func:`agents.actor_kernels.actor_simulate`, when a network plays the searching seat's rollouts,
  or :func:`leaf_reward`, when its critic scores the position a few moves on) and the backup into the root's
  statistics. Python between simulations (a UCB pass, a kernel call per
  world and the bookkeeping) cost more than the simulation itself once the rollouts were compiled.
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

from agents.actor_kernels import actor_play, actor_simulate, value_of
from uno_env.cards import NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.core import (
    CURRENT,
    DECK,
    DECK_LEN,
    HAND_SIZES,
    HANDS,
    OUTCOME,
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


@njit(cache=True)
def value_reward(state: np.ndarray, value: tuple) -> float:
    """The searching seat's reward, on the scale of :func:`reward_of`, of a running game scored by the critic in
    ``value`` (:func:`agents.actor_kernels.value_of`, from the side of the seat to move: +1 a win, -1 a loss)."""
    reward = (value_of(state, value) + 1.0) / 2.0
    return reward if state[CURRENT] == _ME else 1.0 - reward


@njit(cache=True)
def leaf_reward(state: np.ndarray, action: int, opponent_policy: int, actor: tuple, value: tuple, leaf_moves: int,
                seed: np.uint64, max_actions: int) -> float:
    """One simulation scored at a leaf: ``action`` on a copy of ``state``, then ``leaf_moves`` of the searching seat's
    decisions by the ``actor`` (the opponent by ``opponent_policy``) up to its next decision, scored there by the
    critic ``value`` (:func:`value_reward`); a game over before it scores its outcome (:func:`reward_of`).

    ``leaf_moves`` 0 scores the searching seat's first decision after the opponent's reply. The random stream starts
    from ``seed``, as in :func:`uno_env.core.simulate`.
    """
    game = state.copy()
    stream = np.empty(1, dtype=np.uint64)
    stream[0] = seed
    apply_action(game, action, stream)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    if actor_play(game, _ME, opponent_policy, actor, stream, legal, leaf_moves, max_actions) == 0:
        return reward_of(game[OUTCOME])
    return value_reward(game, value)


class Worlds(NamedTuple):
    """The determinizations as :func:`run_root` reads them: world ``k`` is ``states[k]`` (a packed state) with its
    simulation's random stream seeded ``seeds[k]``."""

    states: np.ndarray  # (K, STATE_SIZE) int64
    seeds: np.ndarray  # (K,) uint64


class RootStats(NamedTuple):
    """The root's statistics (module docstring), by the index ``i`` of each action among the legal ones."""

    actions: np.ndarray  # (A,) int64: the action of root index i
    order: np.ndarray  # the root indices the first simulations try, each once
    visits: np.ndarray  # (A,) int64
    totals: np.ndarray  # (A,) float64: summed rewards
    rewards: np.ndarray  # (A, K) float64: rewards[i, k], action i's reward in world k


class Playouts(NamedTuple):
    """How :func:`run_root` selects and plays its simulations (the scalars; the network's weights, when one guides
    them, are :func:`run_root`'s own arguments, so numba drops their branches when they are ``None``)."""

    exploration: float  # UCB1's constant
    policy: int  # the searching seat's built-in rollout policy (a code of uno_env.core.COMPILED_PLAYERS)
    opponent_policy: int  # the opponent's
    max_actions: int  # a simulation's bound on actions
    leaf_moves: int  # with a critic: the searching seat's decisions played before it scores (leaf_reward)
    prior: float  # PUCT's constant, with priors


@njit(cache=True)
def run_root(worlds_fields: tuple, root_fields: tuple, done: int, stop: int, playouts_fields: tuple,
             actor: tuple | None = None, value: tuple | None = None, priors: np.ndarray | None = None) -> int:
    """Run simulations number ``done`` to ``stop - 1``, each in one call of :func:`uno_env.core.simulate`.

    World ``k`` is ``worlds.states[k]`` with its random stream seeded ``worlds.seeds[k]``; the action of root index
    ``i`` is ``root.actions[i]``; the searching seat rolls out with the built-in ``playouts.policy``, or with the
    network ``actor`` (:func:`agents.compiled_actor.actor_params`) unless it is ``None``, the opponent with
    ``playouts.opponent_policy``. With the critic ``value`` too
    (:func:`agents.compiled_actor.value_params`), each simulation stops after ``playouts.leaf_moves`` of the searching
    seat's decisions and the critic scores it (:func:`leaf_reward`). ``priors`` and ``playouts.prior`` select the
    root actions by PUCT (:func:`select_root`).
    Updates ``root``'s ``visits``, ``totals`` and ``rewards`` in place and returns the count of simulations done,
    which is less than ``stop`` when the next one needs a world beyond ``worlds``: the caller draws more worlds and
    calls again, so the simulations are the same as in one call.

    ``worlds_fields``, ``root_fields`` and ``playouts_fields`` are a :class:`Worlds`, :class:`RootStats` and
    :class:`Playouts` or plain tuples of their fields in order: numba's dispatcher types a NamedTuple argument on a slow
    path (about 10 us a call, measured), which a search with a time budget, one call per simulation, would pay.
    """
    worlds, root, playouts = Worlds(*worlds_fields), RootStats(*root_fields), Playouts(*playouts_fields)
    states, seeds, actions = worlds.states, worlds.seeds, root.actions
    visits, totals = root.visits, root.totals
    opponent_policy, max_actions = playouts.opponent_policy, playouts.max_actions
    n_worlds = len(states)
    while done < stop:
        i = select_root(visits, totals, root.order, done, playouts.exploration, priors, playouts.prior)
        k = visits[i]
        if k == n_worlds:
            break
        # numba compiles the branches of the actor's and the critic's types only: None keeps the built-in playouts
        if actor is None:
            reward = reward_of(simulate(states[k], actions[i], playouts.policy, opponent_policy, seeds[k],
                                        max_actions))
        elif value is None:
            reward = reward_of(actor_simulate(states[k], actions[i], _ME, opponent_policy, actor, seeds[k],
                                              max_actions))
        else:
            reward = leaf_reward(states[k], actions[i], opponent_policy, actor, value, playouts.leaf_moves, seeds[k],
                                 max_actions)
        root.rewards[i, k] = reward
        visits[i] += 1
        totals[i] += reward
        done += 1
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
