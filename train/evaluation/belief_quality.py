"""How well each belief tracker predicts the opponent's hidden hand, and how close it is to the exact posterior.

    .venv/bin/python -m train.cli.belief_quality --games 200 --seed 0                 # random vs random
    .venv/bin/python -m train.cli.belief_quality --games 200 --tracked rule --opponent rule
    .venv/bin/python -m train.cli.belief_quality --exact --games 300 --seed 0         # against exact enumeration
    .venv/bin/python -m train.cli.belief_quality --games 40 --tracked rule --opponent rule hold-wilds --learned 1000

**Played games** (:func:`measure_quality`): seeded games between the tracked seat's policy and the opponent's
(:func:`uno_env.match.play_game`, first mover alternating). Every tracker is created at the deal and fed the
same views of the tracked seat (``reset`` with the view after the deal, ``update`` at each of its decisions).
At every decision of the tracked seat, forced draws included, the opponent's true hand ``h`` (read from the
game by this measuring code, never by a tracker) is scored under each belief's marginals
``P(count_t = x)``:

* ``log-loss``: ``-log P_t(h_t)``, probabilities clipped at :data:`CLIP` = 1e-6, averaged over the 54 types
  (nats per card type; a type with no unseen copy scores 0 under every belief);
* ``Brier``: ``sum_x (P_t(x) - [x = h_t])^2``, averaged over the 54 types;
* ``hand``: ``-log P(hand = h)`` of the whole hand (``log_prob``), capped at :data:`HAND_CAP` nats where a
  belief gives the true hand no mass (the ``zero`` column counts those decisions);
* ``miss``: the share of types whose true count had probability below :data:`CLIP`.

With ``match`` above 1 the games go in matches of that many against the same opponent: every tracker is kept
from a match's first game to its last, and between games a tracker that can (a learned opponent model's,
``same_opponent_again``) is told that it meets the same opponent again.

Means are over decisions. Decisions of one game are correlated, so standard errors treat games as clusters
(the ratio estimator's cluster-robust error, :func:`cluster_mean`), and the paired difference tracker minus
counting is computed decision by decision on the same decisions, with its 95% interval (mean +- 1.96 SE). Against
several opponents, :func:`opponents_table` gives each belief's log-loss per opponent and its paired difference with
the plain filter.

**Exact enumeration** (:func:`measure_exact`): the enumeration of :class:`ExactBelief` fits only small
positions, so games start from random small positions: a shuffled deck dealt as ``--hands`` cards to each
seat and ``--deck`` cards to the deck, the rest forming the discard pile (its top a coloured card). Every
tracker starts there from the uniform prior over the unseen cards, like the enumeration. At each decision of
the tracked seat, each belief's marginals are compared with the exact posterior's, per type that still has
unseen copies: total variation ``1/2 sum_x |P - Q|`` and ``KL(Q_exact || P)`` (``P`` clipped at 1e-6). Both
exact posteriors are kept: without opponent model (what the plain filter approximates) and with the
opponent's model (the posterior given how the opponent really plays; what the policy-aware filter
approximates). A game's measurement stops at its first reshuffle (the discard pile joins the pool, which
becomes too large to enumerate) or at the first position with more than ``max_support`` possible hands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import numpy as np

from uno_env.belief.exact import ExactBelief
from uno_env.belief.filters import CountingBelief, ParticleBelief
from uno_env.belief.learned import LearnedOpponent
from uno_env.belief.models import opponent_model
from uno_env.belief.trajectory import TrajectoryBelief
from uno_env.cards import NUM_CARD_TYPES, WILD, card_colour, full_deck
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.policy import Policy, make_policy, needs_of
from uno_env.seat import Seat, start_game
from uno_env.view import RESHUFFLE, PublicView

#: Marginal probabilities are clipped below at this value before taking logs.
CLIP = 1e-6
#: ``-log P(hand)`` is capped at this many nats when a belief gives the true hand no mass.
HAND_CAP = 60.0
_TYPES = np.arange(NUM_CARD_TYPES)
_Z95 = 1.96
METRICS = ("log-loss", "Brier", "hand", "miss", "zero")
DISTANCES = ("TV", "KL")


@dataclass(frozen=True)
class Spec:
    """A belief to measure: a display name and a factory taking the tracker's generator."""

    name: str
    make: Callable[[np.random.Generator], Any]


def tracker_specs(opponent: Policy, particles: Sequence[int] = (100, 1000), aware: Sequence[int] = (1000,),
                  plain: Sequence[int] = (), trajectory: Sequence[int] = (),
                  learned: Sequence[int] = ()) -> list[Spec]:
    """Counting, then particle filters of each size: lazy plain-likelihood ones, policy-aware ones (if the
    opponent has a model), non-lazy ones, trajectory particles with the plain likelihood, and trajectory filters
    with the learned opponent model (:class:`~uno_env.belief.learned.LearnedOpponent`), which is not told the
    opponent."""
    model = opponent_model(opponent)
    specs = [Spec("counting", lambda rng: CountingBelief())]
    specs += [Spec(f"particles N={n}", lambda rng, n=n: ParticleBelief(n, rng)) for n in particles]
    if model is not None:
        specs += [Spec(f"policy-aware N={n}", lambda rng, n=n: TrajectoryBelief(n, rng, model=model)) for n in aware]
    specs += [Spec(f"plain N={n}", lambda rng, n=n: ParticleBelief(n, rng, lazy=False)) for n in plain]
    specs += [Spec(f"trajectory N={n}", lambda rng, n=n: TrajectoryBelief(n, rng)) for n in trajectory]
    specs += [Spec(f"learned N={n}", lambda rng, n=n: TrajectoryBelief(n, rng, model=LearnedOpponent()))
              for n in learned]
    return specs


def marginal_scores(marginals: np.ndarray, hand: np.ndarray) -> np.ndarray:
    """Scores of the true ``hand`` (54 counts) under stacked marginals (B x 54 x 5): (B x 3) log-loss, Brier, miss.

    Each score is averaged over the 54 card types.
    """
    p_true = marginals[:, _TYPES, hand]
    onehot = np.zeros(marginals.shape[1:])
    onehot[_TYPES, hand] = 1.0
    logloss = -np.log(np.maximum(p_true, CLIP)).mean(axis=1)
    brier = ((marginals - onehot) ** 2).sum(axis=2).mean(axis=1)
    return np.stack((logloss, brier, (p_true < CLIP).mean(axis=1)), axis=1)


def distances(marginals: np.ndarray, exact: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """(B x 2) mean total variation and ``KL(exact || belief)`` over the types with unseen copies in ``pool``."""
    live = pool > 0
    p, q = marginals[:, live], exact[live]
    tv = 0.5 * np.abs(p - q).sum(axis=2).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (np.log(q) - np.log(np.maximum(p, CLIP))), 0.0)
    return np.stack((tv, terms.sum(axis=2).mean(axis=1)), axis=1)


def cluster_mean(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean per decision and its cluster-robust standard error, games as clusters.

    Args:
        sums: (G, ...) per-game sums of a score over the game's decisions.
        counts: (G,) decisions per game.
    """
    total = counts.sum()
    mean = sums.sum(axis=0) / total
    resid = sums - mean * counts.reshape((-1,) + (1,) * (sums.ndim - 1))
    games = len(counts)
    se = np.sqrt((resid**2).sum(axis=0) * games / max(games - 1, 1)) / total
    return mean, se


# ---------------------------------------------------------------------------------------- played games
class _Scorer:
    """Plays the tracked seat with ``policy``; feeds every tracker its views and scores them at each decision."""

    def __init__(self, policy: Policy, trackers: list[Any]) -> None:
        self.policy, self.trackers = policy, trackers
        self.needs = needs_of(policy)
        self.game: Game | None = None
        self.rows: list[np.ndarray] = []
        self.phases: list[tuple[int, int]] = []  # (opponent's hand size, decisions of the tracked seat before)

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def observe_start(self, view: PublicView) -> None:
        for tracker in self.trackers:
            tracker.reset(view)
        if hasattr(self.policy, "observe_start"):
            self.policy.observe_start(view)

    def act(self, view: PublicView) -> int:
        for tracker in self.trackers:
            tracker.update(view)
        hand = np.array(self.game.hands[1], dtype=np.intp)  # measurement only: the trackers never see it
        scores = marginal_scores(np.stack([t.marginals() for t in self.trackers]), hand)
        log_p = np.array([t.log_prob(hand) for t in self.trackers])
        hand_loss = np.minimum(-log_p, HAND_CAP)
        self.rows.append(np.column_stack((scores[:, :2], hand_loss, scores[:, 2], ~np.isfinite(log_p))))
        self.phases.append((int(hand.sum()), len(self.phases)))
        return self.policy.act(view)


def _game_seeds(seed: int, games: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**62, size=games)


def _played_games(tracked: str, opponent: str, spec_args: dict[str, Any], seeds: list[int],
                  firsts: list[int], match: int = 1) -> tuple[np.ndarray, ...]:
    """Per game: summed scores (G x B x 5), decisions (G,), and particle-filter recoveries/fallbacks (G x B x 2);
    per decision: its phase (D x 2, see :data:`PHASES`) and each belief's log-loss (D x B). Games go in matches of
    ``match``: the trackers of a match's first game see its later games too, told between games that they meet the
    same opponent again (``same_opponent_again``, where a tracker has it)."""
    rival = make_policy(opponent)
    specs = tracker_specs(rival, **spec_args)
    sums, counts, repairs, phases, losses = [], [], [], [], []
    trackers: list[Any] = []
    for game, (seed, first) in enumerate(zip(seeds, firsts, strict=True)):
        if game % match == 0:
            trackers = [spec.make(np.random.default_rng([seed, i])) for i, spec in enumerate(specs)]
        else:
            for tracker in trackers:
                getattr(tracker, "same_opponent_again", lambda: None)()
        scorer = _Scorer(make_policy(tracked), trackers)
        play_game((scorer, rival), seed, first, on_deal=lambda game, s=scorer: setattr(s, "game", game))
        rows = np.array(scorer.rows).reshape(-1, len(specs), len(METRICS))
        sums.append(rows.sum(axis=0))
        counts.append(len(rows))
        repairs.append([[getattr(t, "recoveries", 0), getattr(t, "fallbacks", 0)] for t in trackers])
        phases.append(np.array(scorer.phases, dtype=np.int64).reshape(-1, 2))
        losses.append(rows[:, :, 0])
    return (np.array(sums), np.array(counts), np.array(repairs), np.concatenate(phases),
            np.concatenate(losses))


@dataclass
class QualityResult:
    """Per-game sums of the scores of each belief (see :func:`measure_quality`)."""

    names: list[str]
    sums: np.ndarray  # (games, beliefs, metrics)
    counts: np.ndarray  # (games,) decisions scored
    repairs: np.ndarray  # (games, beliefs, 2): recoveries and fallbacks of the particle filters
    phases: np.ndarray  # (decisions, 2): the opponent's hand size, and the tracked seat's decisions before it
    losses: np.ndarray  # (decisions, beliefs): log-loss of each decision
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        """Markdown table: mean per decision +- SE per belief, and the paired difference with counting."""
        mean, se = cluster_mean(self.sums, self.counts)
        diff_mean, diff_se = cluster_mean(self.sums - self.sums[:, :1], self.counts)
        lines = ["| belief | log-loss (nats/type) | Brier (/type) | -log P(hand) (nats) | miss | zero-mass hands "
                 "| log-loss minus counting, 95% CI | recoveries/fallbacks |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for b, name in enumerate(self.names):
            m, s = mean[b], se[b]
            diff = ("(baseline)" if b == 0 else
                    f"{diff_mean[b, 0]:+.4f} [{diff_mean[b, 0] - _Z95 * diff_se[b, 0]:+.4f}, "
                    f"{diff_mean[b, 0] + _Z95 * diff_se[b, 0]:+.4f}]")
            lines.append(f"| {name} | {m[0]:.4f} ± {s[0]:.4f} | {m[1]:.4f} ± {s[1]:.4f} | {m[2]:.2f} ± {s[2]:.2f} "
                         f"| {m[3]:.2e} | {m[4]:.2%} | {diff} | {self.repairs[:, b, 0].sum()}/"
                         f"{self.repairs[:, b, 1].sum()} |")
        return "\n".join(lines)


    def phase_table(self) -> str:
        """Markdown table: mean log-loss per decision of each belief in each game phase (:data:`PHASES`)."""
        lines = ["| phase | decisions | " + " | ".join(self.names) + " |",
                 "| --- | ---: |" + " ---: |" * len(self.names)]
        for label, column, low, high in PHASES:
            chosen = (self.phases[:, column] >= low) & (self.phases[:, column] <= high)
            if chosen.any():
                cells = " | ".join(f"{x:.4f}" for x in self.losses[chosen].mean(axis=0))
                lines.append(f"| {label} | {chosen.sum()} | {cells} |")
        return "\n".join(lines)

    def phase_log_loss(self) -> dict[str, np.ndarray]:
        """Mean log-loss of each belief per phase label (phases with no decision left out)."""
        out = {}
        for label, column, low, high in PHASES:
            chosen = (self.phases[:, column] >= low) & (self.phases[:, column] <= high)
            if chosen.any():
                out[label] = self.losses[chosen].mean(axis=0)
        return out


def opponents_table(results: Sequence[QualityResult], marks: dict[str, str] | None = None) -> str:
    """Markdown table of the same beliefs measured against several opponents, one row each: every belief's mean
    log-loss, then each belief's paired difference with the plain filter (the first ``particles`` belief) and its 95%
    interval, decision by decision with games as clusters. The last row averages the opponents' rows, its intervals
    combining the opponents' as independent. ``marks`` adds a note after an opponent's name (``"held out"``).

    Raises:
        ValueError: if the results do not measure the same beliefs, or no belief is a plain filter.
    """
    names = results[0].names
    if any(result.names != names for result in results):
        raise ValueError("the results measure different beliefs: one table needs the same beliefs against each")
    plain = next((b for b, name in enumerate(names) if name.startswith("particles")), None)
    if plain is None:
        raise ValueError("no plain filter (a 'particles' belief) to take the differences against")
    others = [b for b, name in enumerate(names) if b != plain and name != "counting"]
    header = ["opponent", *names, *(f"{names[b]} minus {names[plain]} (95%)" for b in others)]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    rows = []
    for result in results:
        mean = cluster_mean(result.sums[:, :, 0], result.counts)[0]
        diff, se = cluster_mean(result.sums[:, others, 0] - result.sums[:, plain:plain + 1, 0], result.counts)
        rows.append((mean, diff, se))
        opponent = result.meta["opponent"]
        note = f" ({marks[opponent]})" if marks and opponent in marks else ""
        lines.append(_opponent_row(f"`{opponent}`{note}", mean, diff, se))
    if len(results) > 1:
        means, diffs, ses = (np.array(column) for column in zip(*rows, strict=True))
        lines.append(_opponent_row(f"mean of the {len(results)}", means.mean(axis=0), diffs.mean(axis=0),
                                   np.sqrt((ses**2).sum(axis=0)) / len(results)))
    return "\n".join(lines)


def _opponent_row(label: str, mean: np.ndarray, diff: np.ndarray, se: np.ndarray) -> str:
    cells = [f"{m:.4f}" for m in mean] + [f"{d:+.4f} ({d - _Z95 * e:+.4f} .. {d + _Z95 * e:+.4f})"
                                           for d, e in zip(diff, se, strict=True)]
    return f"| {label} | " + " | ".join(cells) + " |"


#: Game phases of :meth:`QualityResult.phase_table`: (label, column of ``phases``, low, high), both bounds included.
PHASES = (("opponent holds 1-2", 0, 1, 2), ("opponent holds 3-4", 0, 3, 4), ("opponent holds 5-7", 0, 5, 7),
          ("opponent holds 8+", 0, 8, 10**6), ("decisions 1-5", 1, 0, 4), ("decisions 6-10", 1, 5, 9),
          ("decisions 11-20", 1, 10, 19), ("decisions 21+", 1, 20, 10**6))


def measure_quality(games: int = 200, seed: int = 0, tracked: str = "random", opponent: str = "random",
                    particles: Sequence[int] = (100, 1000), aware: Sequence[int] = (1000,),
                    plain: Sequence[int] = (), trajectory: Sequence[int] = (),
                    learned: Sequence[int] = (), workers: int = 1, match: int = 1) -> QualityResult:
    """Score every belief on ``games`` seeded games (module docstring); the tracked seat is seat 0.

    Args:
        games: number of games; game ``g`` has its own seed (from ``seed``) and first mover ``g % 2``.
        tracked, opponent: policy names (:func:`uno_env.opponents.make_policy`) of the two seats.
        particles, aware, plain: particle counts of the plain-likelihood, policy-aware (only when the opponent
            has a model) and non-lazy (``lazy=False``) particle filters.
        workers: processes; the result does not depend on it (each game is seeded on its own).
        match: games in a row against the same opponent: every tracker is kept through a match, and a learned
            opponent model starts each later game from what the earlier ones taught it (1: every game alone).
    """
    seeds = _game_seeds(seed, games).tolist()
    firsts = [g % 2 for g in range(games)]
    spec_args = {"particles": tuple(particles), "aware": tuple(aware), "plain": tuple(plain),
                 "trajectory": tuple(trajectory), "learned": tuple(learned)}
    names = [spec.name for spec in tracker_specs(make_policy(opponent), **spec_args)]
    start = time.perf_counter()
    parts = _map(_played_games, [(tracked, opponent, spec_args, seeds[c], firsts[c], match)
                                 for c in _chunks(games, workers, match)], workers)
    sums, counts, repairs, phases, losses = (np.concatenate([p[i] for p in parts]) for i in range(5))
    meta = {"games": games, "seed": seed, "tracked": tracked, "opponent": opponent, "match": match}
    return QualityResult(names, sums, counts, repairs, phases, losses, time.perf_counter() - start, meta)


# ---------------------------------------------------------------------------------------- exact enumeration
def small_position(rng: np.random.Generator, hand_size: int, deck_size: int, first: int) -> Game:
    """A random position with ``hand_size`` cards per seat, ``deck_size`` in the deck and the rest discarded.

    The top of the discard pile is a coloured card and no draw is pending.
    """
    cards = [full_deck()[i] for i in rng.permutation(len(full_deck()))]
    hands = [[0] * NUM_CARD_TYPES for _ in range(2)]
    for seat in (0, 1):
        for card in cards[seat * hand_size:(seat + 1) * hand_size]:
            hands[seat][card] += 1
    deck = cards[2 * hand_size:2 * hand_size + deck_size]
    discard = cards[2 * hand_size + deck_size:]
    top = next(i for i in range(len(discard) - 1, -1, -1) if discard[i] < WILD)
    discard.append(discard.pop(top))
    return Game(hands, deck, discard, card_colour(discard[-1]), first, 0, rng)


class _Stop(Exception):
    """The enumeration cannot hold the position any more: the game's measurement ends."""


def _too_large(error: ValueError) -> _Stop:
    """``_Stop`` for an enumeration that outgrew ``max_support``; any other ``ValueError`` (for example a play
    that the opponent model calls impossible: a model that does not match its policy) is raised again."""
    if "possible hands" not in str(error):
        raise error
    return _Stop()


def _exact_games(tracked: str, opponent: str, spec_args: dict[str, Any], hand_size: int, deck_size: int,
                 max_support: int, seeds: list[int], firsts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per game: summed (log-loss, distances to each exact posterior) (G x B x 1+2E) and decisions (G,)."""
    rival = make_policy(opponent)
    specs = tracker_specs(rival, **spec_args)
    model = opponent_model(rival)
    sums, counts = [], []
    for seed, first in zip(seeds, firsts, strict=True):
        seats = [Seat(0, make_policy(tracked)), Seat(1, rival)]
        game = start_game(seats, seed, start=small_position(np.random.default_rng(seed), hand_size, deck_size, first))
        exacts = [ExactBelief(None, max_support)] + ([ExactBelief(model, max_support)] if model else [])
        trackers = [spec.make(np.random.default_rng([seed, i])) for i, spec in enumerate(specs)] + exacts
        rows = []
        try:
            start = game.observe(0)
            for tracker in exacts:  # the largest first: a position too large is skipped before any work
                try:
                    tracker.reset(start)
                except ValueError as error:
                    raise _too_large(error) from None
            for tracker in trackers[:-len(exacts)]:
                tracker.reset(start)
            while not game.done:
                seat = seats[game.current]
                view = seat.observe(game)
                if game.current == 0:
                    if any(event[0] == RESHUFFLE for event in view.events):
                        raise _Stop  # the pool grows by the discard pile: too large to enumerate
                    try:
                        for tracker in exacts:
                            tracker.update(view)
                    except ValueError as error:
                        raise _too_large(error) from None
                    for tracker in trackers[:-len(exacts)]:
                        tracker.update(view)
                    hand = np.array(game.hands[1], dtype=np.intp)
                    marg = np.stack([t.marginals() for t in trackers])
                    pool = trackers[0].pool
                    row = [marginal_scores(marg, hand)[:, :1]]
                    row += [distances(marg, marg[len(specs) + e], pool) for e in range(len(exacts))]
                    rows.append(np.hstack(row))
                game.step(seat.act(game, view))
        except _Stop:
            pass
        width = 1 + 2 * len(exacts)
        rows_array = np.array(rows).reshape(-1, len(trackers), width)
        sums.append(rows_array.sum(axis=0))
        counts.append(len(rows))
    return np.array(sums), np.array(counts)


@dataclass
class ExactResult:
    """Per-game sums of the log-loss and the distances of each belief to the exact posteriors."""

    names: list[str]
    references: list[str]
    sums: np.ndarray  # (games, beliefs, 1 + 2 * references)
    counts: np.ndarray
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        """Markdown table: log-loss and mean TV / KL per type to each exact posterior, +- SE over games."""
        used = self.counts > 0
        mean, se = cluster_mean(self.sums[used], self.counts[used])
        head = ["belief", "log-loss (nats/type)"]
        for ref in self.references:
            head += [f"TV to {ref}", f"KL({ref} ‖ belief)"]
        lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
        for b, name in enumerate(self.names):
            cells = [f"{mean[b, i]:.4f} ± {se[b, i]:.4f}" for i in range(mean.shape[1])]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def measure_exact(games: int = 300, seed: int = 0, tracked: str = "random", opponent: str = "random",
                  hand_size: int = 5, deck_size: int = 12, particles: Sequence[int] = (100, 1000),
                  aware: Sequence[int] = (1000,), plain: Sequence[int] = (), trajectory: Sequence[int] = (),
                  learned: Sequence[int] = (), max_support: int = 50_000,
                  workers: int = 1) -> ExactResult:
    """Compare every belief with exact enumeration on games started from small random positions (module docstring)."""
    seeds = _game_seeds(seed, games).tolist()
    firsts = [g % 2 for g in range(games)]
    spec_args = {"particles": tuple(particles), "aware": tuple(aware), "plain": tuple(plain),
                 "trajectory": tuple(trajectory), "learned": tuple(learned)}
    rival = make_policy(opponent)
    names = [spec.name for spec in tracker_specs(rival, **spec_args)] + ["exact"]
    references = ["exact"]
    if opponent_model(rival) is not None:
        names.append("exact policy-aware")
        references.append("exact policy-aware")
    start = time.perf_counter()
    parts = _map(_exact_games, [(tracked, opponent, spec_args, hand_size, deck_size, max_support, seeds[c],
                                 firsts[c]) for c in _chunks(games, workers)], workers)
    sums, counts = (np.concatenate([p[i] for p in parts]) for i in range(2))
    meta = {"games": games, "seed": seed, "tracked": tracked, "opponent": opponent, "hand_size": hand_size,
            "deck_size": deck_size}
    return ExactResult(names, references, sums, counts, time.perf_counter() - start, meta)


# ---------------------------------------------------------------------------------------- running
def _chunks(games: int, workers: int, match: int = 1) -> list[slice]:
    """Slices of the games for the workers, each a whole number of matches of ``match`` games (the last shorter)."""
    matches = -(-games // match)
    bounds = np.linspace(0, matches, min(matches, 4 * workers if workers > 1 else 1) + 1).astype(int) * match
    bounds[-1] = games
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _map(function: Callable, argument_lists: list[tuple], workers: int) -> list[Any]:
    if workers == 1:
        return [function(*args) for args in argument_lists]
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        return list(pool.map(function, *zip(*argument_lists, strict=True)))
