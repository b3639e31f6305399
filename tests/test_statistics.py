"""Evaluation statistics pinned to values computed by hand: train.evaluation.statistics's intervals and scores,
train.evaluation.tournament's Bradley-Terry ratings.

Reference numbers are worked out here from the textbook formulas, with Student's t quantiles from a printed
table (t_{0.975, df}), so a wrong degrees-of-freedom, a wrong n or a wrong draw score changes a number the
test states, not one it recomputes with the code under test.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from train.evaluation import matches
from train.evaluation.matches import run_matches
from train.evaluation.statistics import (
    difference_interval,
    paired_interval,
    score_interval,
    t_quantile_975,
    wilson_interval,
)
from train.evaluation.tournament import bradley_terry
from uno_env.match import GameResult
from uno_env.opponents import RandomPolicy

#: t_{0.975, df} from a printed Student's t table.
T_TABLE = {1: 12.706205, 2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 9: 2.262157, 10: 2.228139,
           19: 2.093024, 20: 2.085963, 29: 2.045230, 30: 2.042272, 60: 2.000298, 120: 1.979930}
Z = 1.959964


@pytest.mark.parametrize("df", sorted(T_TABLE))
def test_t_quantile_matches_the_table(df):
    assert t_quantile_975(df) == pytest.approx(T_TABLE[df], rel=1e-3)


def test_paired_interval_by_hand_ten_pairs():
    # Ten pairs, one of them holding a drawn game (0.5). Pair means:
    # 1, .5, .5, 1, .75, 0, 1, .5, 1, .5 -> mean 6.75 / 10 = .675.
    pairs = np.array([[1, 1], [1, 0], [0, 1], [1, 1], [1, .5], [0, 0], [1, 1], [0, 1], [1, 1], [1, 0]])
    # Squared deviations from .675: .105625 * 4 (the ones), .030625 * 4 (the halves), .005625, .455625
    # -> 1.00625; s^2 = 1.00625 / 9, s = .334373; the interval is .675 +- t(9) * s / sqrt(10) = .675 +- .239196.
    low, high = paired_interval(pairs)
    assert low == pytest.approx(0.675 - 0.239196, abs=2e-4)
    assert high == pytest.approx(0.675 + 0.239196, abs=2e-4)


def test_paired_interval_by_hand_five_pairs():
    # Pair means .5, .5, 1, .5, 0 -> mean .5, s^2 = (0 + 0 + .25 + 0 + .25) / 4 = .125, s = .353553;
    # half width t(4) * s / sqrt(5) = 2.776445 * .158114 = .438994.
    pairs = np.array([[1, 0], [0, 1], [1, 1], [.5, .5], [0, 0]])
    assert paired_interval(pairs) == pytest.approx((0.5 - 0.438994, 0.5 + 0.438994), abs=2e-4)


def test_difference_interval_by_hand_five_pairs():
    # Pair means of the player: 1, .5, 1, .5, 0; of the reference on the same deals: .5, .5, .5, 0, 0.
    # Differences .5, 0, .5, .5, 0 -> mean .3, s^2 = (3 * .04 + 2 * .09) / 4 = .075, s = .273861;
    # half width t(4) * s / sqrt(5) = 2.776445 * .122474 = .340043.
    player = np.array([[1, 1], [1, 0], [1, 1], [0, 1], [0, 0]])
    reference = np.array([[1, 0], [0, 1], [0, 1], [0, 0], [0, 0]])
    assert difference_interval(player, reference) == pytest.approx((0.3, 0.3 - 0.340043, 0.3 + 0.340043), abs=2e-4)


def test_difference_interval_needs_the_same_deals():
    with pytest.raises(ValueError, match="same shape"):
        difference_interval(np.zeros((5, 2)), np.zeros((4, 2)))


def test_paired_interval_never_clips_it_falls_back_to_wilson():
    pairs = np.array([[1, 1], [1, 1], [1, 0]])  # means 1, 1, .5: mean .8333, s = .288675, t(2) = 4.302653
    # The t-interval .8333 +- .7171 leaves [0, 1]; clipping it would claim (.1162, 1.0). Wilson over the games
    # instead: 5 of 6, p = .8333, centre (p + z^2/12) / (1 + z^2/6) = .70322, half .26673.
    assert paired_interval(pairs) == pytest.approx((0.70322 - 0.26673, 0.70322 + 0.26673), abs=2e-4)
    assert score_interval(pairs)[2] == "W"
    assert score_interval(np.array([[1, 0], [0, 1], [1, 1], [.5, .5], [0, 0]]))[2] == "t"


def test_wilson_interval_by_hand():
    # 8 of 10: the textbook Wilson interval is (.4902, .9433).
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    # A draw counts half: 7.5 of 10 -> p = .75, centre (.75 + z^2/20) / (1 + z^2/10), from the formula.
    p, n = 0.75, 10
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n)) / (1 + Z**2 / n)
    assert wilson_interval(7.5, 10) == pytest.approx((centre - half, centre + half), abs=1e-6)


def test_no_spread_uses_wilson_over_games_not_pairs():
    # 10 pairs, every game won: 20/20 gives a lower bound of .8389 (10/10 would give .7225).
    assert paired_interval(np.ones((10, 2))) == pytest.approx((0.8389, 1.0), abs=1e-4)
    # Every pair split 1-0: 10 of 20 games, Wilson (.2993, .7007).
    assert paired_interval(np.array([[1.0, 0.0]] * 10)) == pytest.approx((0.2993, 0.7007), abs=1e-4)


# -------------------------------------------------------------------------------- scores through run_matches
class Named(RandomPolicy):
    """A stand-in player told apart by name; the fake game below decides its results."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


def fake_games(draw_if: Any) -> Any:
    """A play_game stand-in: a draw when ``draw_if(seed)``, else the player named "strong" wins."""
    def play(policies: tuple[Any, Any], seed: int, first_player: int = 0, **_: Any) -> GameResult:
        if draw_if(seed):
            return GameResult(-1, 10, first_player)
        winner = [p.name for p in policies].index("strong")
        return GameResult(winner, 20, first_player)
    return play


def test_a_drawn_game_scores_one_half(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(matches, "play_game", fake_games(lambda seed: True))
    (result,) = run_matches([(Named("strong"), Named("weak"))], pairs=6, workers=1)
    assert result.draws == 12 and result.wins == 0 and result.losses == 0
    assert result.score == 0.5
    assert result.pair_scores.tolist() == [[0.5, 0.5]] * 6


def test_scores_with_a_mix_of_draws_wins_and_losses(monkeypatch: pytest.MonkeyPatch):
    pairs, seed = 40, 3
    seeds, _ = matches.deal_seeds(seed, pairs)
    drawn = {int(s) for s in seeds if s % 3 == 0}
    assert 0 < len(drawn) < pairs  # the sample holds both kinds of deal
    monkeypatch.setattr(matches, "play_game", fake_games(lambda s: int(s) in drawn))
    as_strong, as_weak = run_matches([(Named("strong"), Named("weak")), (Named("weak"), Named("strong"))],
                                     pairs=pairs, seed=seed, workers=1)
    n_drawn = len(drawn)
    assert as_strong.draws == as_weak.draws == 2 * n_drawn
    assert as_strong.wins == as_weak.losses == 2 * (pairs - n_drawn)
    assert as_strong.score == pytest.approx((n_drawn * 0.5 + (pairs - n_drawn)) / pairs)
    assert as_weak.score == pytest.approx(n_drawn * 0.5 / pairs)
    assert as_strong.mean_length == pytest.approx((n_drawn * 10 + (pairs - n_drawn) * 20) / pairs)
    # The interval is over the 40 pairs (pair means 1 or .5), with 39 degrees of freedom.
    means = np.where([int(s) in drawn for s in seeds], 0.5, 1.0)
    half = 2.022691 * means.std(ddof=1) / math.sqrt(pairs)  # t_{0.975, 39} from the table
    assert as_strong.ci == pytest.approx((means.mean() - half, min(1.0, means.mean() + half)), abs=2e-4)


# ------------------------------------------------------------------------------------------ Bradley-Terry
def test_bradley_terry_recovers_a_known_fit():
    # Strengths 1, 2, 4 (Elo 0, 120.4, 240.8). Data made so that, with the virtual drawn game per matchup, the
    # points of i against j are exactly (games + 1) * s_i / (s_i + s_j): the maximum-likelihood fit is s.
    strengths = np.array([1.0, 2.0, 4.0])
    games = np.zeros((3, 3))
    points = np.zeros((3, 3))
    for (i, j), n in {(0, 1): 29, (0, 2): 59, (1, 2): 44}.items():
        games[i, j] = n
        points[i, j] = (n + 1) * strengths[i] / (strengths[i] + strengths[j]) - 0.5
        points[j, i] = n - points[i, j]
    elo = 400 * np.log10(strengths)
    assert bradley_terry(points, games) == pytest.approx(elo - elo.mean(), abs=1e-3)


def test_bradley_terry_two_players_by_hand():
    # 15 of 20 plus the virtual half point each way: odds 15.5 / 5.5, 400 * log10 = 180.0 points apart.
    ratings = bradley_terry(np.array([[0.0, 15.0], [5.0, 0.0]]), np.array([[0.0, 20.0], [0.0, 0.0]]))
    assert ratings == pytest.approx([90.0, -90.0], abs=0.1)
    # A clean sweep stays finite: 20.5 / 0.5 -> 645.1 points apart.
    ratings = bradley_terry(np.array([[0.0, 20.0], [0.0, 0.0]]), np.array([[0.0, 20.0], [0.0, 0.0]]))
    assert ratings[0] - ratings[1] == pytest.approx(645.1, abs=0.1)
