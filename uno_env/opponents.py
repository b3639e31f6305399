"""The built-in policies: ``"random"`` and ``"rule"`` (the Policy protocol is in :mod:`uno_env.policy`).

Each carries its ``likelihood_model`` (:mod:`uno_env.belief.models`), so a policy-aware particle filter
facing it knows how it chooses.
"""

from __future__ import annotations

import numpy as np

from uno_env.belief.models import RandomModel, RuleModel
from uno_env.core import RULE_POLICY, player_options
from uno_env.seeding import seeded_generator
from uno_env.view import PublicView


class SeededPolicy:
    """What a policy that draws random numbers shares: a generator seeded in ``reset``, and its draws for the single
    env's compiled path (:meth:`words`)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Seed the choices: ``default_rng(seed)``'s stream (an int seed, what start_game passes, through the faster
        seeding)."""
        self.rng = seeded_generator(seed) if type(seed) is int else np.random.default_rng(seed)

    def words(self, count: int) -> np.ndarray:
        """The next ``count`` 64-bit words of this policy's generator (uint64), what its choices are made of: numpy
        computes ``rng.integers(n)`` and ``rng.random()`` from them, and so does the single env's compiled path from
        these (:func:`uno_env.core.choose_from`), which thereby plays this policy's games exactly."""
        return self.rng.bit_generator.random_raw(count)


class RandomPolicy(SeededPolicy):
    """Uniform over the legal action ids (so a wild counts four times, once per declared colour)."""

    likelihood_model = RandomModel()
    #: The compiled player making exactly this class's decisions (a name of uno_env.core.COMPILED_PLAYERS).
    compiled_player = "random"

    def act(self, view: PublicView) -> int:
        """A uniform draw among ``view.legal_actions`` (no draw when there is one)."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions alone (the seat's fast path, :mod:`uno_env.policy`)."""
        return legal[int(self.rng.integers(len(legal)))] if len(legal) > 1 else legal[0]

    def action_probabilities(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> list[float]:
        """The probability of each of ``legal`` under :meth:`act_legal`: uniform. An evaluator that knows them
        takes this player's luck out of its scores (:mod:`uno_env.policy`, ``action_probabilities``)."""
        return [1.0 / len(legal)] * len(legal)


class RulePolicy:
    """A deterministic rule-based player, about as strong as a careful casual player.

    Every legal action gets a score and the best one is played (ties: the lowest action id):

    * **Keep wilds for later**: a wild scores -5 and a wild draw four -4, so any coloured card
      is played first (a +4 beats a plain wild: it also costs the opponent 4 cards and a turn).
    * **Stay in your strong colour**: +1 for every other card held of the colour the play leaves in
      force; this also picks the declared colour of a wild (the colour held most).
    * **Tempo**: skip, reverse and +2 score +2, since each gives this player another turn.
    * **Stop the opponent going out**: when the opponent holds 2 cards or fewer, skip/reverse/+2
      score +20 and +4 scores +20 more, so attacks come before anything else.

    Under random play from the other seat it wins about two thirds of the games (docs/results.md).
    """

    likelihood_model = RuleModel()
    #: The compiled player making exactly this class's decisions (a name of uno_env.core.COMPILED_PLAYERS).
    compiled_player = "rule"

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: PublicView) -> int:
        """The best-scoring legal action of ``view`` (the scoring above)."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions, the hand and the opponent's hand size (:mod:`uno_env.policy`)."""
        if len(legal) == 1:
            return legal[0]
        # The scoring is compiled (uno_env.style_kernels.rule_action, through core's one table of the compiled
        # players), so the search player's compiled rollouts play exactly this policy; it is also faster than the
        # same loop in Python.
        choice, _ = player_options(RULE_POLICY, np.asarray(hand, dtype=np.int64), opponent_hand_size,
                                   np.asarray(legal, dtype=np.int64), len(legal))
        return int(choice)

