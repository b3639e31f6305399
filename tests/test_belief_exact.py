"""Exact enumeration (uno_env/belief/exact.py) and the particle filter against it on random small end games,
with and without the policy-aware models (uno_env/belief/models.py), which must mirror the built-in policies.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from belief_testlib import TracedParticles, Z, feature_sets, se_tolerance
from uno_testlib import deck_names, scenario

from uno_env.belief import (
    ExactBelief,
    ParticleBelief,
    RandomModel,
    RuleModel,
)
from uno_env.cards import NUM_CARD_TYPES
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import PublicView


# ---------------------------------------------------------------------------------------------- 4. vs exact
def endgame_views(seed: int, opponent: Any) -> Iterator[tuple[PublicView, np.ndarray]]:
    """Seat 0's views (with the opponent's true hand) along a game from a random small end-game position:
    4 cards each, 10 in the deck, the rest in the discard pile. Seat 0 plays uniformly random legal moves,
    seat 1 the given policy. Stops when the game ends or the deck holds fewer than 4 cards (no reshuffle:
    that would add the whole discard pile to the pool and blow up the exact support)."""
    rng = np.random.default_rng(seed)
    names = deck_names()
    while True:
        order = [names[i] for i in rng.permutation(len(names))]
        if not order[18].startswith("wild"):
            break
    scn = scenario(order[:4], order[4:8], [order[18]], order[8:18], rest="discard",
                   to_move=("agent", "opponent")[seed % 2])
    game = Game.from_scenario(scn, np.random.default_rng(seed))
    opponent.reset(seed)
    yield game.observe(0), np.array(game.hands[1])
    while not game.done and len(game.deck) >= 4:
        if game.current == 0:
            game.step(int(rng.choice(game.legal_actions())))
        else:
            game.step(opponent.act(game.observe(1, consume_events=False)))
        yield game.observe(0), np.array(game.hands[1])


def exact_summary(exact: ExactBelief, view: PublicView) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts, marginals (54 x 5) and the 6 feature probabilities of the exact posterior, flattened,
    with their posterior variances (of the count, of each indicator)."""
    mean_counts = exact.expected_counts()
    var_counts = exact.marginals() @ np.arange(5.0) ** 2 - mean_counts**2
    marg = exact.marginals().ravel()
    probs = np.array([1 - exact.prob_none(np.flatnonzero(s)) for s in feature_sets(view.top, view.active_colour).T])
    values = np.concatenate((mean_counts, marg, probs))
    variances = np.concatenate((var_counts, marg * (1 - marg), probs * (1 - probs)))
    return values, variances


def particle_summary(pf: ParticleBelief) -> np.ndarray:
    """The particle filter's counterparts of :func:`exact_summary`'s values."""
    return np.concatenate((pf.expected_counts(), pf.marginals().ravel(), pf.features()[NUM_CARD_TYPES:]))


@pytest.mark.parametrize(("model", "seeds"), [(None, range(0, 8)), (RandomModel, range(8, 14))],
                         ids=["no_model", "random_model"])
def test_particle_filter_agrees_with_exact_enumeration(model, seeds):
    """On random small end games (the opponent plays RandomPolicy; both trackers use the same model, or none),
    the particle filter's expected counts, marginals and feature probabilities stay within Z standard errors
    of the exact posterior at every view (N = 4000; the probability features are float32, hence 1e-6). The
    exact posterior never rules out the opponent's true hand: the model explains what the policy did."""
    for seed in seeds:
        views = endgame_views(seed, RandomPolicy())
        first, _ = next(views)
        pf = TracedParticles(4000, np.random.default_rng(seed), model=model() if model else None)
        exact = ExactBelief(model=model() if model else None)
        pf.reset(first)
        exact.reset(first)
        for view, true_hand in views:
            pf.update(view)
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            values, variances = exact_summary(exact, view)
            assert np.all(np.abs(particle_summary(pf) - values) <= se_tolerance(pf, variances) + 1e-6), seed
        assert pf.fallbacks == 0


def test_particle_filter_with_the_deterministic_rule_model_is_unbiased():
    """With RuleModel (RulePolicy is deterministic, so pi is 0 or 1) most particles die at each opponent play
    and the survivors share ancestors, so the ESS understates the error. The standard error is therefore
    measured: the mean of R = 24 independent filters (N = 1000) must be within Z standard errors of that
    mean (t with 23 degrees of freedom, P(|t| > 5) ~ 5e-5) of the exact posterior at every view, and equal
    to it where the exact posterior is certain. The exact posterior never rules out the true hand (RuleModel mirrors
    RulePolicy)."""
    replicas = 24
    for seed in range(20, 23):
        views = list(endgame_views(seed, RulePolicy()))
        exact = ExactBelief(model=RuleModel())
        exact.reset(views[0][0])
        truth = []
        for view, true_hand in views[1:]:
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            truth.append(exact_summary(exact, view)[0])
        estimates = np.zeros((replicas, len(truth), len(truth[0])))
        for r in range(replicas):
            pf = ParticleBelief(1000, np.random.default_rng(1000 * seed + r), model=RuleModel())
            pf.reset(views[0][0])
            for step, (view, _) in enumerate(views[1:]):
                pf.update(view)
                estimates[r, step] = particle_summary(pf)
            assert pf.fallbacks == 0
        error = np.abs(estimates.mean(axis=0) - np.array(truth))
        assert np.all(error <= Z * estimates.std(axis=0, ddof=1) / math.sqrt(replicas) + 1e-6), seed
