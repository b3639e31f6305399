"""The lazy particle states (uno_env/belief/lazy.py): the ESS, systematic resampling, depletion, and the compiled
kernels' answers against enumeration of the rows' hands, merging, long play and seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from belief_testlib import PLAY_SCN, Replay, unseen
from scipy import stats

from uno_env.belief import (
    ParticleBelief,
)
from uno_env.belief.combinatorics import FALLING
from uno_env.belief.lazy import ROW_WIDTH, Depleted, HandStates, seeded_stream
from uno_env.belief.lazy_rows import split
from uno_env.belief.sampling import PER_PARTICLE_BELOW, next_binomial
from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES
from uno_env.game import Game
from uno_env.opponents import RandomPolicy


# ---------------------------------------------------------------------------------------------- 6. resampling
def distinct_rows(cnt: list[int], w: list[float]) -> HandStates:
    """Rows that differ (row i holds one card of type i), with particle counts and weights."""
    rows = len(cnt)
    return HandStates(np.eye(NUM_CARD_TYPES)[:rows].copy(), np.zeros((rows, 1)), np.zeros(NUM_CARD_TYPES, np.intp),
                      np.array(cnt, np.int64), np.array(w, float))


def test_counts_out_of_range_are_refused():
    """The rows store narrow counts: a count no hand can hold is refused, not wrapped around."""
    dom = np.zeros(NUM_CARD_TYPES, np.intp)
    none, five = np.zeros((1, NUM_CARD_TYPES)), np.full((1, NUM_CARD_TYPES), 5)
    for R, K in ((five, np.zeros((1, 1))), (none, np.array([[109]])), (none, np.array([[-1]]))):
        with pytest.raises(ValueError, match="counts out of range"):
            HandStates(R, K, dom, np.array([1]), np.ones(1))
    assert HandStates(np.zeros((1, NUM_CARD_TYPES)), np.array([[108]]), dom, np.array([1]), np.ones(1)).K[0, 0] == 108


def test_falling_factorials_are_the_permutation_counts():
    """FALLING[m, k] = m! / (m - k)!, exact while it fits float64's integers, 0 when k > m (no such subset)."""
    for m in range(DECK_SIZE + 1):
        for k in range(DECK_SIZE + 1):
            exact = math.perm(m, k)
            assert FALLING[m, k] == (exact if exact < 2**53 else pytest.approx(exact, rel=1e-12)), (m, k)


def test_ess_formula():
    """ESS = (sum of particle weights)^2 / sum of squared particle weights: rows of (2 particles at 0.1,
    1 at 0.4) give 0.6^2 / (2 * 0.01 + 0.16) = 2; equal weights give the particle count."""
    assert distinct_rows([2, 1], [0.1, 0.4]).ess() == pytest.approx(2.0)
    assert distinct_rows([3, 5], [0.2, 0.2]).ess() == pytest.approx(8.0)
    pf = ParticleBelief(300, np.random.default_rng(0))
    pf.reset(Replay(PLAY_SCN).view)
    assert pf.ess == pytest.approx(300)


def test_systematic_resampling_counts_weights_and_unbiasedness():
    """Resampling to P particles keeps P particles of weight 1/P each (ESS = P); systematic resampling gives
    row i floor(P p_i) or ceil(P p_i) copies, and on average over u exactly P p_i (p_i its probability)."""
    cnt, w = [3, 1, 2, 4], [0.1, 0.5, 0.05, 0.2]
    mass = np.array(cnt) * np.array(w)
    target = 7 * mass / mass.sum()  # 7 * [0.3, 0.5, 0.1, 0.8] / 1.7
    grid = (np.arange(400) + 0.5) / 400  # midpoints: their mean is the integral over u to 1/400 per row
    totals = np.zeros(4)
    for u in grid:
        states = distinct_rows(cnt, w)
        states.resample(7, u)  # systematic resampling draws one u: given here
        copies = np.zeros(4)
        copies[states.R.argmax(axis=1)] = states.cnt
        assert states.particles == 7 and np.allclose(states.w, 1 / 7) and states.ess() == pytest.approx(7)
        assert np.all((copies == np.floor(target)) | (copies == np.ceil(target)))
        totals += copies
    assert np.allclose(totals / len(grid), target, atol=2 / len(grid))
    states = distinct_rows(cnt, w)
    states.resample(50)
    assert states.particles == 50 and states.size <= 4


def test_reweighting_every_row_to_zero_raises_depleted():
    """The signal the filter recovers from: no row survives a zero likelihood."""
    with pytest.raises(Depleted):
        distinct_rows([2, 1], [0.5, 0.5]).own_draw(np.zeros(NUM_CARD_TYPES, np.int64), 0)


# ---------------------------------------------------------------------------------------------- compiled kernels
def row_hands(states: HandStates, U: np.ndarray, s: int) -> list[tuple[np.ndarray, float]]:
    """Every hand row ``s`` allows, with ``P(h | s) = prod_j [prod_{t in j} C(A_t, h_t - R_t)] / C(m_j, K_j)``
    (docs/beliefs.md), by enumerating the lazy cards type by type: written from the definition, not the kernels."""
    R, K, dom = states.R[s], states.K[s], states.dom
    A = U - R
    out = [(R.copy(), 1.0)]
    for t in np.flatnonzero(A):
        out = [(h + np.eye(NUM_CARD_TYPES, dtype=np.int64)[t] * g, p * math.comb(int(A[t]), g))
               for h, p in out for g in range(int(A[t]) + 1)]
    hands = []
    for h, p in out:
        lazy = np.bincount(dom, weights=h - R, minlength=K.shape[0])
        if np.array_equal(lazy, K):
            norm = math.prod(math.comb(int(A[dom == j].sum()), int(K[j])) for j in range(K.shape[0]))
            hands.append((h, p / norm))
    return hands


def mixture(states: HandStates, U: np.ndarray) -> dict[tuple[int, ...], float]:
    """The belief's distribution over whole hands: rows' hand laws mixed by their masses."""
    law: dict[tuple[int, ...], float] = {}
    for s, mass in enumerate(states.masses()):
        for h, p in row_hands(states, U, s):
            law[tuple(h)] = law.get(tuple(h), 0.0) + mass * p
    return law


def small_state(seed: int) -> tuple[HandStates, np.ndarray]:
    """Several rows and domains over a small pool: 3 cards dealt, a draw, a voluntary draw, a play."""
    U = np.zeros(NUM_CARD_TYPES, np.int64)
    U[[0, 1, 2, 13, 14, 26, 40, 52]] = [2, 1, 2, 1, 2, 1, 1, 1]
    states = HandStates.uniform(3, 400, seeded_stream(np.random.default_rng(seed)))
    states.draw(U, 1)
    states.constrain(U, (13, 14, 52))
    states.draw(U, 2)
    states.resolve_type(U, 0, require=True, remove=True)
    U[0] -= 1  # the played card leaves the pool
    assert states.size > 2 and states.K.shape[1] > 1
    return states, U


@pytest.mark.parametrize("seed", range(3))
def test_compiled_answers_equal_the_rows_closed_forms(seed):
    """Expected counts, P(no card of a set) (the features), marginals, log P(hand) and sampled hands of a state
    with several rows and domains agree with enumerating every row's hands from their definition."""
    states, U = small_state(seed)
    law = mixture(states, U)
    assert sum(law.values()) == pytest.approx(1.0)
    hands = np.array(list(law), dtype=np.int64)
    probs = np.array(list(law.values()))
    assert np.allclose(states.expected_counts(U), probs @ hands, atol=1e-12)
    marginals = np.zeros((NUM_CARD_TYPES, 5))
    for t in range(NUM_CARD_TYPES):
        np.add.at(marginals[t], hands[:, t], probs)
    assert np.allclose(states.marginals(U), marginals, atol=1e-12)
    sets = np.zeros((NUM_CARD_TYPES, 3), bool)
    sets[[0, 1], 0] = sets[[2, 26, 40], 1] = sets[[13, 52], 2] = True
    none = [(probs * ~(hands[:, sets[:, i]] > 0).any(axis=1)).sum() for i in range(3)]
    assert np.allclose(states.prob_none(U, sets), none, atol=1e-12)
    features = np.empty(NUM_CARD_TYPES + 3, np.float32)
    states.features_into(U, sets, features)
    assert np.allclose(features, np.concatenate((probs @ hands, 1 - np.array(none))), atol=1e-6)
    for h, p in law.items():
        assert states.log_prob(U, np.array(h)) == pytest.approx(math.log(p), abs=1e-9)
    outside = hands[0].copy()
    outside[[0, 1]] = outside[[1, 0]] + 1  # a hand of the wrong size: no row allows it
    assert states.log_prob(U, outside) == -math.inf
    sampled = states.sample(U, 4000, np.random.default_rng(seed))
    assert sampled.shape == (4000, NUM_CARD_TYPES) and all(tuple(h) in law for h in sampled)
    assert np.all(np.abs(sampled.mean(axis=0) - probs @ hands) <= 5 * np.sqrt(U ** 2 / 4 / 4000) + 1e-9)


def test_merge_pools_equal_rows_of_equal_weight_only():
    """Equal rows with equal weights pool their particles (the law and the ESS stay); an equal row of another
    weight stays apart (merging it would change the ESS, hence when the filter resamples)."""
    states = HandStates(np.array([np.eye(NUM_CARD_TYPES)[i] for i in (0, 1, 0, 0)]), np.zeros((4, 1)),
                        np.zeros(NUM_CARD_TYPES, np.intp), np.array([1, 2, 3, 4]), np.array([0.1, 0.1, 0.1, 0.2]))
    law, ess = states.masses(), states.ess()
    states.merge()
    assert states.size == 3 and list(states.cnt) == [4, 2, 4] and list(states.w) == [0.1, 0.1, 0.2]
    assert states.ess() == pytest.approx(ess)
    assert np.allclose(np.bincount([0, 1, 0, 2], weights=law), states.masses())


def play_games(seed: int, particles: int, games: int = 2) -> list[tuple]:
    """Particle filters (seeded ``seed``) following seat 0 in random games against a random opponent, checked at
    every view; returns their rows (R, K, cnt, w, dom) at every view."""
    trackers = []
    for g in range(games):
        game = Game.deal(np.random.default_rng(100 + g), g % 2)
        policy = RandomPolicy()
        policy.reset(g)
        rng = np.random.default_rng(200 + g)
        pf = ParticleBelief(particles, np.random.default_rng(seed))
        pf.reset(game.observe(0))
        while not game.done:
            if game.current == 0:
                game.step(int(rng.choice(game.legal_actions())))
            else:
                game.step(policy.act(game.observe(1, consume_events=False)))
            view = game.observe(0)
            pf.update(view)
            features = pf.features()
            assert np.all(np.isfinite(features)) and np.all(np.isfinite(pf.states.w)) and np.all(pf.states.w > 0)
            # impossible particles leave until a resampling brings back N; a split never needs more rows than particles
            assert 0 < pf.states.particles <= pf.n_particles and pf.states.size <= len(pf.states.cnt_buf)
            assert np.all(pf.states.R >= 0) and np.all(pf.states.K >= 0)
            resolved = pf.states.R
            assert np.all(resolved <= unseen(view))
            assert abs(pf.expected_counts().sum() - view.opponent_hand_size) <= 1e-9
            states = pf.states
            trackers.append(tuple(x.copy() for x in (states.R, states.K, states.cnt, states.w, states.dom)))
    return trackers


def test_long_play_stays_finite_and_seeded():
    """Over whole games the compiled rows stay valid (finite positive weights, at most N particles, counts within
    the pool and summing to the hand size), and the same seed gives the same rows: the splitmix stream seeded at
    reset is the only source of randomness. Another seed gives other rows."""
    first, again, other = play_games(1, 300), play_games(1, 300), play_games(2, 300)
    assert all(np.array_equal(x, y) for a, b in zip(first, again, strict=True) for x, y in zip(a, b, strict=True))
    assert any(not np.array_equal(a[0], c[0]) for a, c in zip(first, other, strict=True))


# ---------------------------------------------------------------------------------------------- splits
def split_counts(particles: int, probs: list[float], trials: int, seed: int) -> np.ndarray:
    """(trials x outcomes) particles per outcome when one row of ``particles`` is split by ``probs`` (one stream)."""
    n_out = len(probs)
    stream = np.array([seed], np.uint64)
    out = np.zeros((trials, n_out), np.int64)
    for trial in range(trials):
        rows, cnt, w = np.zeros((n_out, ROW_WIDTH), np.int64), np.zeros(n_out, np.int64), np.zeros(n_out)
        cnt[0], w[0] = particles, 1.0
        meta, outcome = np.array([1, 1], np.int64), np.empty(n_out, np.int64)
        assert split(rows, cnt, w, meta, np.array([probs]), n_out, outcome, stream)
        out[trial, outcome[:meta[0]]] = cnt[:meta[0]]
    return out


def binomial_fit(counts: np.ndarray, n: int, p: float) -> float:
    """Chi-square p-value of observed draws against Binomial(n, p), bins of expected count 5 or more, tails pooled."""
    values = np.arange(n + 1)
    expected = stats.binom.pmf(values, n, p) * len(counts)
    observed = np.bincount(counts, minlength=n + 1)
    keep = expected >= 5
    obs, exp = list(observed[keep]), list(expected[keep])
    if len(counts) - sum(exp) > 1e-9:  # the pooled tails
        obs.append(len(counts) - sum(obs))
        exp.append(len(counts) - sum(exp))
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize(("n", "p"), [(1, 0.3), (30, 0.2), (48, 0.5), (200, 0.97), (1000, 0.02), (4000, 0.37)])
def test_binomial_draws_follow_the_binomial_law(n, p):
    """20,000 draws of the stream's binomial sampler (by inversion from 0 for a small mean, from the mode outward
    for a large one, of the complement above 1/2) fit Binomial(n, p): chi-square p-value above 1e-3."""
    x = np.uint64(20261125)
    draws = np.empty(20_000, np.int64)
    for i in range(len(draws)):
        x, draws[i] = next_binomial(np.uint64(x), n, p)  # numba hands the state back as a Python int
    assert binomial_fit(draws, n, p) > 1e-3, (draws.mean(), n * p)


@pytest.mark.parametrize(("particles", "probs"), [
    (1000, [0.05, 0.6, 0.004, 0.0, 0.346]),  # binomial draws: a mode search, a flip above 1/2, a search from 0
    (PER_PARTICLE_BELOW, [0.3, 0.0, 0.5, 0.2, 0.0]),  # the smallest row split by binomials
    (PER_PARTICLE_BELOW - 1, [0.3, 0.0, 0.5, 0.2, 0.0]),  # the largest split one draw per particle
    (7, [2.0, 1.0, 0.0, 0.0, 1.0]),  # unnormalized weights
])
def test_split_counts_follow_the_multinomial_law(particles, probs):
    """A row's particles split over outcomes (plays and one-card draws split this way) are a Multinomial(count,
    probs) draw whichever way they are drawn: over 3,000 splits (fixed seed), each outcome's count fits its
    Binomial(count, p) marginal (chi-square p-value above 1e-3; a wrong conditional probability in the chain of
    binomials moves them by far more), the counts sum to the row's, impossible outcomes get none, and the
    counts of two outcomes have the multinomial covariance -n p_a p_b (within 5 standard errors)."""
    trials = 3000
    counts = split_counts(particles, probs, trials, seed=20261125)
    p = np.array(probs) / sum(probs)
    assert np.all(counts.sum(axis=1) == particles) and np.all(counts[:, p == 0] == 0)
    for o in np.flatnonzero(p):
        assert binomial_fit(counts[:, o], particles, p[o]) > 1e-3, (o, counts[:, o].mean(), particles * p[o])
    a, b = np.flatnonzero(p)[:2]
    products = (counts[:, a] - particles * p[a]) * (counts[:, b] - particles * p[b])
    assert abs(products.mean() + particles * p[a] * p[b]) <= 5 * products.std() / math.sqrt(trials)


def test_split_is_seeded():
    """The same stream state gives the same split, another state another one (both ways of drawing)."""
    for particles in (PER_PARTICLE_BELOW - 1, 1000):
        probs = [0.25, 0.25, 0.25, 0.25]
        same = split_counts(particles, probs, 5, seed=7), split_counts(particles, probs, 5, seed=7)
        assert np.array_equal(*same)
        assert not np.array_equal(same[0], split_counts(particles, probs, 5, seed=8))


def test_a_draws_coinciding_children_pool_their_particles():
    """Rows K = (2, 1) and (1, 2) of equal weight (300 and 200 particles) each draw one card: their children with
    K = (2, 2) are one row holding the particles of both (merged as they are made), no particle is lost, no two
    rows are equal, and over 200 seeded draws that row's mean count is 500 * 53/105 (each parent's deck holds 52
    cards of the domain it has two of and 53 of the other), within 5 standard errors."""
    dom = np.repeat(np.arange(2), NUM_CARD_TYPES // 2)
    U = np.full(NUM_CARD_TYPES, 2, np.int64)
    merged = []
    for seed in range(200):
        states = HandStates(np.zeros((2, NUM_CARD_TYPES)), np.array([[2, 1], [1, 2]]), dom, np.array([300, 200]),
                            np.ones(2), np.array([seed], np.uint64))
        states.draw(U, 1)
        K = [tuple(k) for k in states.K.tolist()]
        assert states.particles == 500 and len(set(K)) == len(K) and set(K) <= {(3, 1), (2, 2), (1, 3)}
        merged.append(states.cnt[K.index((2, 2))])
    p = 53 / 105
    assert abs(np.mean(merged) - 500 * p) <= 5 * math.sqrt(500 * p * (1 - p) / len(merged))
