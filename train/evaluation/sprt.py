"""Sequential probability ratio tests on deal pairs: play until a result is decided, not a fixed number of games.

``uno-evaluate A --opponents B --sprt ELO0 ELO1`` tests H0: A's expected score against B is ``score0`` against
H1: it is ``score1`` (Elo bounds become scores by the logistic, ``1 / (1 + 10 ** (-elo / 400))``). Deal pairs are
played in batches across the workers (the chunks of :func:`~train.evaluation.matches.run_matches`), and after each
batch the log-likelihood ratio of the pair scores seen so far is compared with the bounds
``log(beta / (1 - alpha))`` (accept H0) and ``log((1 - beta) / alpha)`` (accept H1).

The pair scores (the mean of a deal pair's two games, adjusted by the control variates when there are any) are
treated as normal with their sample variance, as chess engines' test frameworks (fishtest) do for game pairs:
``LLR = n (s1 - s0) (2 mean - s0 - s1) / (2 var)``. The test looks at the results in deal-pair order only, at
whole batches, so its decision and the pairs it took do not depend on the number of workers or on which chunk
finished first, and a run resumed from ``--checkpoint`` decides as an uninterrupted one.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from train.evaluation.matches import MatchResult, Player, run_matches


def elo_to_score(elo: float) -> float:
    """The expected score of a player ``elo`` points stronger (the logistic Elo curve)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclass(frozen=True)
class SprtBounds:
    """The two hypotheses and the error rates of a test: H0 (score ``score0``) against H1 (score ``score1``).

    Raises:
        ValueError: the scores are not ``0 < score0 < score1 < 1`` or an error rate is not in (0, 0.5).
    """

    score0: float
    score1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 < self.score0 < self.score1 < 1.0:
            raise ValueError(f"SPRT bounds must satisfy 0 < lower < upper < 1 as scores, got {self.score0:.4g} and "
                             f"{self.score1:.4g}")
        for name, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < rate < 0.5:
                raise ValueError(f"SPRT {name} must be in (0, 0.5), got {rate}")

    @classmethod
    def from_elo(cls, elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05) -> SprtBounds:
        """Bounds given as Elo differences."""
        if not elo0 < elo1:
            raise ValueError(f"SPRT bounds must be in increasing order, got {elo0:g} and {elo1:g}")
        return cls(elo_to_score(elo0), elo_to_score(elo1), alpha, beta)

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)


def llr(pair_scores: np.ndarray, bounds: SprtBounds) -> float:
    """The log-likelihood ratio of H1 to H0 given the pair scores (normal approximation, module docstring); 0 while
    fewer than 2 pairs or no spread between them say nothing."""
    n = len(pair_scores)
    variance = float(pair_scores.var(ddof=1)) if n > 1 else 0.0
    if variance <= 0.0:
        return 0.0
    s0, s1 = bounds.score0, bounds.score1
    return n * (s1 - s0) * (2.0 * float(pair_scores.mean()) - s0 - s1) / (2.0 * variance)


@dataclass(frozen=True)
class SprtOutcome:
    """Where a test stands: ``decision`` is ``"H0"``, ``"H1"`` or ``None`` (undecided), after ``pairs`` deal pairs
    with log-likelihood ratio ``llr``."""

    decision: str | None
    pairs: int
    llr: float


def decide(pair_scores: np.ndarray, bounds: SprtBounds, batch: int, most: int) -> SprtOutcome:
    """The test run over ``pair_scores`` (the first deal pairs, in order): the first whole batch of ``batch`` pairs
    after which the LLR leaves the bounds, else the LLR after the last whole batch (or after all ``most`` pairs, the
    test's limit, once they are all there)."""
    ends = list(range(batch, len(pair_scores) + 1, batch))
    if len(pair_scores) == most and (not ends or ends[-1] != most):
        ends.append(most)
    outcome = SprtOutcome(None, 0, 0.0)
    for end in ends:
        ratio = llr(pair_scores[:end], bounds)
        decision = "H1" if ratio >= bounds.upper else "H0" if ratio <= bounds.lower else None
        outcome = SprtOutcome(decision, end, ratio)
        if decision is not None:
            break
    return outcome


def _prefix(done: np.ndarray) -> int:
    """How many deal pairs from the first are all played."""
    missing = np.flatnonzero(~done)
    return int(missing[0]) if len(missing) else len(done)


def run_sprt(agent: Player, opponent: Player, bounds: SprtBounds, most: int, seed: int = 0, batch: int = 50,
             workers: int | None = None, n_particles: int = 200, deterministic: bool = True,
             executor: Executor | None = None, progress: bool = False, checkpoint: Path | None = None,
             control_variates: Path | None = None) -> tuple[SprtOutcome, MatchResult]:
    """Test ``agent`` against ``opponent``: deal pairs in batches of ``batch`` until a decision or ``most`` pairs.

    The deals are those of a fixed-size evaluation of ``most`` pairs from ``seed`` (so a test and that evaluation
    share their first pairs); with ``control_variates`` (a value network file) the test reads the adjusted pair
    scores. Returns the outcome and the results of the pairs the test took. Other arguments are
    :func:`~train.evaluation.matches.run_matches`'.
    """
    if batch < 1:
        raise ValueError(f"the SPRT's batch must be at least 1 deal pair, got {batch}")

    def pair_scores(done: np.ndarray, scores: np.ndarray, adjusted: np.ndarray) -> np.ndarray:
        played = _prefix(done[0])
        return (scores if control_variates is None else adjusted)[0, :played].mean(axis=1)

    def stop(done: np.ndarray, scores: np.ndarray, adjusted: np.ndarray) -> bool:
        return decide(pair_scores(done, scores, adjusted), bounds, batch, most).decision is not None

    result, = run_matches([(agent, opponent)], most, seed, workers, n_particles, deterministic, executor, progress,
                          checkpoint=checkpoint, control_variates=control_variates, stop=stop, chunk=batch)
    done = ~np.isnan(result.pair_scores[:, 0])
    adjusted = result.pair_scores if result.adjusted_scores is None else result.adjusted_scores
    outcome = decide(pair_scores(done[None], result.pair_scores[None], adjusted[None]), bounds, batch, most)
    taken = outcome.pairs
    return outcome, MatchResult(result.agent, result.opponent, result.pair_scores[:taken], result.lengths[:taken],
                                None if result.adjusted_scores is None else result.adjusted_scores[:taken])


def describe(outcome: SprtOutcome, bounds: SprtBounds, adjusted: bool) -> str:
    """One line saying what the test decided, after how many pairs, and its LLR against the bounds."""
    verdict = {"H1": f"H1 accepted (score >= {bounds.score1:.1%})", "H0": f"H0 accepted (score <= {bounds.score0:.1%})",
               None: "no decision"}[outcome.decision]
    return (f"SPRT: {verdict} after {outcome.pairs} deal pairs; LLR {outcome.llr:.2f} (bounds {bounds.lower:.2f}, "
            f"{bounds.upper:.2f}; alpha {bounds.alpha:g}, beta {bounds.beta:g}) on "
            f"{'adjusted' if adjusted else 'plain'} pair scores")


def to_dict(outcome: SprtOutcome, bounds: SprtBounds, adjusted: bool) -> dict[str, Any]:
    """The test's outcome as JSON-ready fields."""
    return {"decision": outcome.decision, "pairs": outcome.pairs, "llr": outcome.llr, "llr_lower": bounds.lower,
            "llr_upper": bounds.upper, "score0": bounds.score0, "score1": bounds.score1, "alpha": bounds.alpha,
            "beta": bounds.beta, "pair_scores": "adjusted" if adjusted else "plain"}
