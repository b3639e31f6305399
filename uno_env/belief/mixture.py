"""A belief for an opponent whose policy is not known: a mixture over the known models, weighted by evidence.

One policy-aware filter (:class:`~uno_env.belief.trajectory.TrajectoryBelief`) runs per candidate model, each
estimating the likelihood of the public history under its model (``log_evidence``). The belief is the
Bayesian model average: model ``k`` has posterior weight ``prior_k * Z_k / sum_j prior_j * Z_j``, and every
answer (expected counts, marginals, feature probabilities, sampled hands) mixes the filters' answers with
these weights. A model that cannot explain what the opponent did (the rule player's model after a play
the rule player would not make) loses its weight; the ``random`` model explains every legal play.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from uno_env.belief.models import OpponentModel
from uno_env.belief.trajectory import TrajectoryBelief
from uno_env.view import PublicView


class MixtureBelief:
    """Bayesian model averaging over policy-aware filters (module docstring).

    Args:
        n_particles: N of each filter.
        rng: the generator each filter's generator is spawned from.
        models: the candidate opponent models (equal prior weights).
    """

    def __init__(self, n_particles: int, rng: np.random.Generator, models: Sequence[OpponentModel]) -> None:
        self.filters = [TrajectoryBelief(n_particles, child, model=model) for model, child in
                        zip(models, rng.spawn(len(models)), strict=True)]

    def reset(self, view: PublicView) -> None:
        """Start every filter from the seat's view right after the deal."""
        for tracker in self.filters:
            tracker.reset(view)

    def update(self, view: PublicView) -> None:
        """Apply the view's events to every filter."""
        for tracker in self.filters:
            tracker.update(view)

    def weights(self) -> np.ndarray:
        """Posterior probability of each model given the public history."""
        log_z = np.array([tracker.log_evidence for tracker in self.filters])
        z = np.exp(log_z - log_z.max())
        return z / z.sum()

    @property
    def recoveries(self) -> int:
        """Replays of the history, all filters together."""
        return sum(tracker.recoveries for tracker in self.filters)

    @property
    def fallbacks(self) -> int:
        """Restarts from card counting, all filters together."""
        return sum(tracker.fallbacks for tracker in self.filters)

    def _mix(self, answers: list[np.ndarray]) -> np.ndarray:
        return np.tensordot(self.weights(), np.stack(answers), axes=1)

    def features(self) -> np.ndarray:
        """The belief features (all of them are expectations, so they mix linearly), float32."""
        return self._mix([tracker.features().astype(np.float64) for tracker in self.filters]).astype(np.float32)

    def expected_counts(self) -> np.ndarray:
        """``E[count of each card type in the opponent's hand]``, float64 (54,)."""
        return self._mix([tracker.expected_counts() for tracker in self.filters])

    def marginals(self) -> np.ndarray:
        """``P(count of type t = x)``, (54, 5) for x = 0..4."""
        return self._mix([tracker.marginals() for tracker in self.filters])

    def log_prob(self, hand: np.ndarray) -> float:
        """``log P(opponent hand = hand)`` (54 counts)."""
        mass = self._mix([np.exp(tracker.log_prob(hand)) for tracker in self.filters])
        return float(np.log(mass)) if mass > 0 else -np.inf

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` opponent hands: each from a model drawn by its weight, then from that model's filter."""
        picks = rng.multinomial(n, self.weights())
        hands = np.concatenate([tracker.sample_hands(int(k), rng) for tracker, k in zip(self.filters, picks,
                                                                                       strict=True)])
        return hands[rng.permutation(n)]
