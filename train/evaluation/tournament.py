"""Round-robin tournaments with Bradley-Terry ratings on the Elo scale.

Every pair of players meets on the same deal pairs (:func:`train.evaluation.matches.run_matches`). The
Bradley-Terry model says player i beats j with probability ``g_i / (g_i + g_j)``; the strengths
are fitted by Hunter's minorize-maximize iteration on the total scores (draws count half), with
one virtual drawn game per matchup so that a player who wins everything keeps a finite rating.
Ratings are reported as ``400 * log10(g)``, so 400 points means 10:1 odds, shifted so that
``random`` (or, without it, the first player) is 0. The 95% intervals come from a bootstrap
over the deal pairs of every matchup.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from train.evaluation.matches import MatchResult, Player, run_matches
from train.specs import label


@dataclass(frozen=True)
class TournamentResult:
    """All matchups of a round robin, and the players' ratings with bootstrap 95% intervals."""

    players: list[str]
    matches: list[MatchResult]  # one per unordered pair (i < j), agent = players[i]
    ratings: np.ndarray
    rating_ci: np.ndarray  # (n_players, 2)
    anchor: int = 0  # the player rated 0 by definition (random if it plays, else the first)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"players": self.players, "anchor": self.players[self.anchor],
                "matches": [m.to_dict() for m in self.matches],
                "ratings": {p: {"elo": float(r), "ci_low": float(lo), "ci_high": float(hi)}
                            for p, r, (lo, hi) in zip(self.players, self.ratings, self.rating_ci, strict=True)}}


def bradley_terry(points: np.ndarray, games: np.ndarray, iterations: int = 10_000, tol: float = 1e-10) -> np.ndarray:
    """Elo-scale Bradley-Terry ratings (mean 0) from ``points[i, j]`` scored by i against j in ``games[i, j]``."""
    n = len(points)
    points = points + 0.5 * (games.T + games > 0)  # the virtual drawn game (half a point each way)
    games = games + games.T + (games + games.T > 0)
    wins = points.sum(axis=1)
    strength = np.ones(n)
    for _ in range(iterations):
        denominator = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        new = wins / denominator
        new /= np.exp(np.log(new).mean())
        if np.max(np.abs(new - strength)) < tol:
            strength = new
            break
        strength = new
    ratings = 400 * np.log10(strength)
    return ratings - ratings.mean()


def _ratings(matches: Sequence[MatchResult], index: Sequence[tuple[int, int]], n: int,
             rows: Sequence[np.ndarray] | None = None) -> np.ndarray:
    points = np.zeros((n, n))
    games = np.zeros((n, n))
    for k, ((i, j), match) in enumerate(zip(index, matches, strict=True)):
        scores = match.pair_scores if rows is None else match.pair_scores[rows[k]]
        points[i, j] += scores.sum()
        points[j, i] += scores.size - scores.sum()
        games[i, j] += scores.size
    return bradley_terry(points, games)


def round_robin(players: Sequence[Player], pairs: int = 200, seed: int = 0, workers: int | None = None,
                n_particles: int = 200, deterministic: bool = True, bootstrap: int = 200,
                progress: bool = False, executor: Executor | None = None,
                checkpoint: Path | None = None) -> TournamentResult:
    """Every player against every other on ``pairs`` deal pairs, then ratings (module docstring).

    ``progress`` shows a progress bar of the deal pairs played, ``executor`` (e.g. a
    :class:`train.evaluation.distributed.RayExecutor`) plays them instead of a local pool, and ``checkpoint`` keeps
    the finished ones for a resumed call (:func:`train.evaluation.matches.run_matches`).
    """
    if len(players) < 2:
        raise ValueError(f"a tournament needs at least 2 players, got {len(players)}")
    names = [label(p) for p in players]
    if len(set(names)) != len(names):
        raise ValueError(f"players must have distinct names, got {names}")
    index = [(i, j) for i in range(len(players)) for j in range(i + 1, len(players))]
    matches = run_matches([(players[i], players[j]) for i, j in index], pairs, seed, workers, n_particles,
                          deterministic, executor, progress, checkpoint=checkpoint)
    ratings = _ratings(matches, index, len(players))
    rng = np.random.default_rng(seed)
    samples = np.array([_ratings(matches, index, len(players),
                                 [rng.integers(0, pairs, size=pairs) for _ in matches]) for _ in range(bootstrap)]
                       ).reshape(bootstrap, len(players))  # (0, n) without a bootstrap
    anchor = names.index("random") if "random" in names else 0
    ratings = ratings - ratings[anchor]
    samples = samples - samples[:, [anchor]]
    ci = np.percentile(samples, [2.5, 97.5], axis=0).T if bootstrap else np.column_stack([ratings, ratings])
    return TournamentResult(names, matches, ratings, ci, anchor)


def format_tournament(result: TournamentResult) -> str:
    """Markdown: the ratings table, then each player's score against each other player, each with a caption.

    The anchor (rated 0 by definition: module docstring) has no interval; its cell says so instead of ``+0 .. +0``.
    """
    order = np.argsort(-result.ratings)
    n = len(result.players)
    score = np.full((n, n), np.nan)
    idx = {name: i for i, name in enumerate(result.players)}
    for match in result.matches:
        i, j = idx[match.agent], idx[match.opponent]
        score[i, j], score[j, i] = match.score, 1 - match.score
    anchor = result.players[result.anchor]
    lines = ["| rank | player | rating (Elo) | 95% CI | mean score |", "| ---: | --- | ---: | ---: | ---: |"]
    for rank, i in enumerate(order, 1):
        low, high = result.rating_ci[i]
        interval = "anchor" if i == result.anchor else f"{low:+.0f} .. {high:+.0f}"
        lines.append(f"| {rank} | {result.players[i]} | {result.ratings[i]:+.0f} | {interval} | "
                     f"{np.nanmean(score[i]):.1%} |")
    lines += ["", f"Ratings: Bradley-Terry on the Elo scale (400 points: 10 to 1 odds), relative to {anchor}, which "
              "is 0 by definition; 95% CI: a bootstrap over the deal pairs. Mean score: against every other player, "
              "a draw counting half.",
              "", "| row vs column | " + " | ".join(result.players[i] for i in order) + " |",
              "| --- |" + " ---: |" * n]
    for i in order:
        cells = ["-" if i == j else f"{score[i, j]:.1%}" for j in order]
        lines.append(f"| {result.players[i]} | " + " | ".join(cells) + " |")
    games = result.matches[0].games if result.matches else 0
    lines += ["", f"Each cell: the row player's score against the column player over {games} games (a draw "
              "counting half)."]
    return "\n".join(lines)
