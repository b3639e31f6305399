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
    NoisyRuleModel,
    ParticleBelief,
    RandomModel,
    RuleModel,
    TrajectoryBelief,
)
from uno_env.belief.trajectory_kernels import Buffers, History, Particles, move_all
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


def particle_summary(pf: ParticleBelief | TrajectoryBelief) -> np.ndarray:
    """The particle filter's counterparts of :func:`exact_summary`'s values."""
    return np.concatenate((pf.expected_counts(), pf.marginals().ravel(), pf.features()[NUM_CARD_TYPES:]))


def test_particle_filter_agrees_with_exact_enumeration():
    """On random small end games (the opponent plays RandomPolicy), the lazy particle filter's expected counts,
    marginals and feature probabilities stay within Z standard errors of the exact posterior without a model
    at every view (N = 4000; the probability features are float32, hence 1e-6). The exact posterior never rules
    out the opponent's true hand."""
    for seed in range(8):
        views = endgame_views(seed, RandomPolicy())
        first, _ = next(views)
        pf = TracedParticles(4000, np.random.default_rng(seed))
        exact = ExactBelief()
        pf.reset(first)
        exact.reset(first)
        for view, true_hand in views:
            pf.update(view)
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            values, variances = exact_summary(exact, view)
            assert np.all(np.abs(particle_summary(pf) - values) <= se_tolerance(pf, variances) + 1e-6), seed
        assert pf.fallbacks == 0


def replicated_within_error(estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Where the mean of R independent filters' estimates (R x ...) is within Z standard errors of that mean
    of the truth (t with R - 1 degrees of freedom; R = 24 gives P(|t| > 5) ~ 5e-5), and equal to it where the
    estimates do not vary."""
    replicas = len(estimates)
    error = np.abs(estimates.mean(axis=0) - truth)
    return error <= Z * estimates.std(axis=0, ddof=1) / math.sqrt(replicas) + 1e-6


@pytest.mark.parametrize(("model", "policy", "seeds"), [(RuleModel, RulePolicy, range(20, 24)),
                                                        (RandomModel, RandomPolicy, range(8, 12)),
                                                        (None, RandomPolicy, range(0, 3))],
                         ids=["rule_model", "random_model", "no_model"])
def test_trajectory_filter_agrees_with_exact_enumeration(model, policy, seeds):
    """The policy-aware filter (TrajectoryBelief, N = 300, 24 independent replicas) against the exact posterior
    with the same model (or none) on random small end games. Resample-move correlates the particles, so the
    ESS does not measure the error; the spread of the replicas does: their mean must be within Z standard
    errors of the exact posterior at every view, and equal to it where the exact posterior is certain.
    The exact posterior never rules out the true hand (the models mirror the policies). Most particles die
    at each play of the deterministic rule player: this is the case the earlier filter failed."""
    replicas = 24
    for seed in seeds:
        views = list(endgame_views(seed, policy()))
        exact = ExactBelief(model=model() if model else None)
        exact.reset(views[0][0])
        truth = []
        for view, true_hand in views[1:]:
            exact.update(view)
            assert exact.log_prob(true_hand) > -math.inf
            truth.append(exact_summary(exact, view)[0])
        estimates = np.zeros((replicas, len(truth), len(truth[0])))
        for r in range(replicas):
            pf = TrajectoryBelief(300, np.random.default_rng(1000 * seed + r), model=model() if model else None)
            pf.reset(views[0][0])
            for step, (view, _) in enumerate(views[1:]):
                pf.update(view)
                estimates[r, step] = particle_summary(pf)
            assert pf.fallbacks == 0 and pf.recoveries == 0
        assert np.all(replicated_within_error(estimates, np.array(truth))), seed


@pytest.mark.parametrize(("model", "policy", "seed"), [(m, p, seed) for m, p in ((RuleModel, RulePolicy),
                                                                                 (RandomModel, RandomPolicy),
                                                                                 (NoisyRuleModel, RulePolicy))
                                                       for seed in (7, 16, 29)])
def test_moves_alone_reach_the_exact_posterior(model, policy, seed):
    """The rejuvenation moves leave the exact posterior invariant (and mix): all N particles are set to one
    hypothesis consistent with the history (a degenerate start, far from the posterior), then only moves are
    made, no resampling. After 200 moves each, the N particles are N nearly independent draws of a chain whose
    only stationary law is the posterior, so their marginals must be within Z standard errors (posterior
    variance / N) of the exact posterior. Moves with a wrong acceptance ratio converge elsewhere: these seeds
    are positions where dropping one factor of the ratio (the later draws of a card type with two unseen
    copies) fails this test."""
    views = list(endgame_views(seed, policy()))
    exact = ExactBelief(model=model())
    exact.reset(views[0][0])
    support = [exact.update(view) or len(exact.hands) for view, _ in views[1:]]
    stop = 4 + int(np.argmax(support[3:]))  # the most uncertain view after a few events
    exact.reset(views[0][0])
    pf = TrajectoryBelief(2000, np.random.default_rng(seed), model=model())
    pf.reset(views[0][0])
    for view, _ in views[1:stop + 1]:
        exact.update(view)
        pf.update(view)
    values, variances = exact_summary(exact, views[stop][0])
    assert pf._slots_used >= 6 and len(exact.hands) >= 5, "a position with a history and an uncertain hand"
    pf._slots[:] = pf._slots[0]
    pf._hands[:] = pf._hands[0]
    pf._w[:] = 1.0
    pf._features = None
    assert np.abs(particle_summary(pf) - values).max() > 0.3, "the degenerate start is far from the posterior"
    move_all(History(pf._log, pf._slot_events), pf._events, pf._slots_used, Particles(*pf._particles_fields()),
             pf.likelihood, 200, pf._stream, Buffers(*pf._buffers_fields()), pf._stats)
    pf._features = None
    tolerance = Z * np.sqrt(np.maximum(variances, 0.0) / pf.n_particles) + 1e-6
    assert np.all(np.abs(particle_summary(pf) - values) <= tolerance)
