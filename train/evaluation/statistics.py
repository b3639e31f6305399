"""The 95% confidence intervals of evaluation scores (scipy's quantiles and Wilson intervals).

The interval of a mean score is a paired t-interval over deal pairs (each pair's mean score is one
observation, which keeps the correlation between the two games of a pair honest). Where that interval is not
trustworthy, the Wilson score interval over the games is used instead: when every pair has the same score
(the sample variance is zero), and when the t-interval would reach outside [0, 1], which happens on small
samples with scores near 0 or 1, where the t approximation breaks down. An interval is never clipped (a
clipped interval printed "0.0% - 50.3%" after wins), and tables name the method of every row (``t`` or ``W``).
Treating games as independent makes Wilson conservative here: the two games of a deal pair tend to go to
different players.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

_Z95 = float(stats.norm.ppf(0.975))
#: The interval methods of :func:`score_interval`, as the table's note names them.
CI_METHODS = {"t": "paired t-interval over deal pairs",
              "W": "Wilson score interval over games (no spread between pairs, or t would leave [0, 100%])"}


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (scipy)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    return float(stats.t.ppf(0.975, df))


def wilson_interval(successes: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval for a proportion (``successes`` may count draws as halves).

    Whole numbers of successes go to scipy's ``binomtest(...).proportion_ci(method="wilson")``; with
    half points (draws) the same formula is evaluated here, as scipy takes whole counts only.
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got successes={successes}, n={n}")
    if float(successes).is_integer():
        interval = stats.binomtest(int(successes), n).proportion_ci(0.95, method="wilson")
        return float(interval.low), float(interval.high)
    p = successes / n
    denominator = 1 + _Z95**2 / n
    centre = (p + _Z95**2 / (2 * n)) / denominator
    half = _Z95 * math.sqrt(p * (1 - p) / n + _Z95**2 / (4 * n * n)) / denominator
    return centre - half, centre + half


def score_interval(pair_scores: np.ndarray) -> tuple[float, float, str]:
    """95% CI of the mean score and its method (module docstring): ``(low, high, "t" or "W")``."""
    means = pair_scores.mean(axis=1)
    if len(means) > 1 and means.std(ddof=1) > 0.0:
        _, low, high = mean_interval(means)
        if low >= 0.0 and high <= 1.0:
            return low, high, "t"
    return (*wilson_interval(float(pair_scores.sum()), pair_scores.size), "W")


def paired_interval(pair_scores: np.ndarray) -> tuple[float, float]:
    """95% CI of the mean score: paired t over deal pairs, else Wilson over games (:func:`score_interval`)."""
    low, high, _ = score_interval(pair_scores)
    return low, high


def mean_interval(observations: np.ndarray) -> tuple[float, float, float]:
    """The mean of ``observations`` (one per deal pair) and its 95% t-interval: ``(mean, low, high)``.

    Raises:
        ValueError: fewer than 2 observations.
    """
    if len(observations) < 2:
        raise ValueError(f"need at least 2 observations for an interval, got {len(observations)}")
    mean = float(observations.mean())
    half = t_quantile_975(len(observations) - 1) * float(observations.std(ddof=1)) / math.sqrt(len(observations))
    return mean, mean - half, mean + half


def difference_interval(pair_scores: np.ndarray, reference_scores: np.ndarray) -> tuple[float, float, float]:
    """Mean score difference of two players on the same deal pairs and its 95% paired t-interval.

    Both arrays are ``(pairs, 2)`` scores on the same deals in the same order; the difference of each deal
    pair's mean is one observation, so the luck of the deal, shared by both players, cancels out.
    Returns ``(difference, low, high)``.
    """
    if pair_scores.shape != reference_scores.shape or len(pair_scores) < 2:
        raise ValueError(f"need two (pairs, 2) score arrays of the same shape with at least 2 pairs, got "
                         f"{pair_scores.shape} and {reference_scores.shape}")
    return mean_interval(pair_scores.mean(axis=1) - reference_scores.mean(axis=1))
