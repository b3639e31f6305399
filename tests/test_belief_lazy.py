"""The lazy particle states (uno_env/belief/lazy.py): the ESS, systematic resampling, depletion."""

from __future__ import annotations

import numpy as np
import pytest
from belief_testlib import PLAY_SCN, Replay

from uno_env.belief import (
    ParticleBelief,
)
from uno_env.belief.lazy import Depleted, HandStates
from uno_env.cards import NUM_CARD_TYPES


# ---------------------------------------------------------------------------------------------- 6. resampling
def distinct_rows(cnt: list[int], w: list[float]) -> HandStates:
    """Rows that differ (row i holds one card of type i), with particle counts and weights."""
    rows = len(cnt)
    return HandStates(np.eye(NUM_CARD_TYPES)[:rows].copy(), np.zeros((rows, 1)), np.zeros(NUM_CARD_TYPES, np.intp),
                      np.array(cnt, np.int64), np.array(w, float))


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
