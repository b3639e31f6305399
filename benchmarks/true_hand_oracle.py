"""Measurement only: the opponent's TRUE hand as a network's input, the ceiling of what any belief can give it.

Every belief setting (:mod:`uno_env.belief`) hands a network the 60 channels of :data:`~uno_env.belief.FEATURE_NAMES`
computed from what the seat may infer. This module computes the same 60 channels from the opponent's real hand (a
belief that is certain and right: ``expected_count`` is the true count, each probability 0 or 1), under the setting
name :data:`ORACLE` (``"true-hand-oracle"``), so a network fitted on them differs from a belief-featured one by the
feature values alone. Its win rate bounds what a better belief could add to the same recipe
(``benchmarks/belief_bound.py``; docs/RESULTS.md, "What a belief is worth to a network: the true-hand bound").

Why it cannot leak into play (tests/test_true_hand_oracle.py checks each point):

* **It lives here, outside the packages.** ``benchmarks/`` is not part of the installed distribution (pyproject's
  ``packages``), and no module of ``uno_env``, ``agents`` or ``train`` may import it: the public env, agents,
  loaders, the evaluation CLI and the policy registry cannot even name it. :data:`ORACLE` is not one of
  :data:`~uno_env.belief.BELIEF_KINDS`, so no env, ``Needs`` or ``PPOPolicy`` accepts it.
* **Its networks are refused by every public loader.** ``save_measurement_network`` writes the ordinary checkpoint
  zip but records ``belief: "true-hand-oracle"``; ``agents.ppo.read_settings`` (under ``PPOPolicy.load``,
  ``uno-evaluate``, ``uno-play``, the shipped catalogue, opponent pools) refuses a belief it does not know, with a
  message naming it. Loaded as a ``counting`` network it would play with the counting features in place of the true
  hand (the same 60 channels) without a word: that is the accident this tag prevents. Only
  :func:`load_measurement_network` here reads it back. (So does a network of the told-opponent ``aware`` filter,
  which no public setting computes.)
* **It needs the game itself.** :class:`LadderPlayer` with the oracle reads the hand from the dealt
  :class:`~uno_env.game.Game` that :func:`play_pairs` hands it through ``play_game``'s measurement hook
  (``on_deal``); seated anywhere else it has no game, or another game, and raises instead of playing.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.ppo import SETTINGS_MEMBER, PPOPolicy, load_network, policy_metadata
from train.evaluation.matches import MatchResult, deal_seeds
from uno_env.belief import BELIEF_FEATURES, make_belief
from uno_env.belief.filters import feature_sets_at
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.observation import BASE_SIZE, encode_base
from uno_env.policy import Needs, Policy
from uno_env.view import PublicView

#: The oracle's setting name: deliberately not a :data:`~uno_env.belief.BeliefKind`.
ORACLE = "true-hand-oracle"
#: The feature sources of the ladder, weakest first: no features, three beliefs, the true hand.
#: ``aware`` is the particle filter told the opponent's policy (:class:`~uno_env.belief.TrajectoryBelief`).
SOURCES = ("none", "counting", "particles", "aware", ORACLE)
#: The sources no public setting names: their networks are saved only by :func:`save_measurement_network`.
MEASUREMENT_ONLY = ("aware", ORACLE)
#: The name of the oracle's 60-channel block (the beliefs' block is ``belief``).
ORACLE_CHANNEL = "oracle_hand"


def oracle_features(opponent_hand: np.ndarray, top: int, colour: int) -> np.ndarray:
    """The :data:`~uno_env.belief.FEATURE_NAMES` channels of a belief certain of ``opponent_hand`` (54 counts).

    ``expected_count`` is the hand itself; ``can_play[colour]``, ``holds_wild`` and ``can_play_top`` are 1 when
    the hand holds a card of the channel's set in this position (top card, colour in force), else 0.
    """
    hand = np.asarray(opponent_hand, dtype=np.float32)
    held = (hand > 0).astype(np.float32) @ (feature_sets_at(top, colour) > 0).astype(np.float32)
    return np.concatenate((hand, (held > 0).astype(np.float32)))


class FeatureSource:
    """One seat's features of one kind (:data:`SOURCES`), fed every view of the seat like a belief tracker.

    ``opponent`` is the opponent's policy, told only to ``aware``; ``rng`` draws the particles.
    """

    def __init__(self, source: str, rng: np.random.Generator, opponent: Policy | None = None,
                 n_particles: int = 1000) -> None:
        if source not in SOURCES:
            raise ValueError(f"feature source must be one of {', '.join(SOURCES)}, got {source!r}")
        self.source = source
        kind = "particles" if source == "aware" else source
        self.tracker = None if source in ("none", ORACLE) else make_belief(
            kind, n_particles=n_particles, rng=rng, opponent_policy=opponent if source == "aware" else None)
        if source == "aware" and type(self.tracker).__name__ != "TrajectoryBelief":
            raise ValueError(f"the aware source needs an opponent with a known model, got {opponent!r}")

    def start(self, view: PublicView) -> None:
        """The seat's view right after the deal."""
        if self.tracker is not None:
            self.tracker.reset(view)

    def update(self, view: PublicView) -> None:
        """Each later view of the seat, in order (forced moves too)."""
        if self.tracker is not None:
            self.tracker.update(view)

    def features(self, view: PublicView, game: Game | None) -> np.ndarray:
        """The features at the current view (float32; empty for ``none``); the oracle reads ``game``'s hand of the
        seat not to move, after checking that ``game`` is the one this view belongs to."""
        if self.source == ORACLE:
            seat = _seat_of(view, game)
            return oracle_features(np.asarray(game.hands[1 - seat]), view.top, view.active_colour)
        if self.tracker is None:
            return np.zeros(0, np.float32)
        return self.tracker.features().astype(np.float32)


def _seat_of(view: PublicView, game: Game | None) -> int:
    """The seat to move of ``game``, which must be the game ``view`` shows (else the oracle would read a stranger's
    hand): a clear error outside :func:`play_pairs` and the labels' replay."""
    if game is None:
        raise RuntimeError(f"the {ORACLE} features need the dealt game (play_pairs passes it through play_game's "
                           "on_deal); they are for measurement only and cannot play a public seat")
    seat = game.current
    if not view.to_move or list(game.hands[seat]) != list(view.hand) or game.discard[-1] != view.top:
        raise RuntimeError(f"the {ORACLE} features were given a view of another game than the one dealt to them")
    return seat


class LadderPlayer:
    """A fitted network playing with one feature source: the base encoding plus that source's features.

    It declares no belief (its seat encodes the base channels only) and keeps its own
    :class:`FeatureSource`, so every rung of the ladder, the oracle included, is played by the same code.
    ``deal(game)`` must receive each dealt game (:func:`play_pairs` does).
    """

    needs = Needs("none")

    def __init__(self, network: PPOPolicy, source: str, opponent: Policy | None = None,
                 n_particles: int = 1000) -> None:
        size = BASE_SIZE + (0 if source == "none" else BELIEF_FEATURES)
        if network.observation_size != size:
            raise ValueError(f"a {source!r} network reads {size} inputs, this one {network.observation_size}")
        self.network, self.source, self.opponent, self.n_particles = network, source, opponent, n_particles
        self.game: Game | None = None
        self.features: FeatureSource | None = None
        self.rng = np.random.default_rng()

    def deal(self, game: Game) -> None:
        """The measurement hook: the dealt game (only the oracle reads it)."""
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        """A new game; the particles' draws come from ``seed``."""
        self.rng = np.random.default_rng(seed)
        self.features = None

    def observe_start(self, view: PublicView) -> None:
        """Start the feature source from the view after the deal."""
        self.features = FeatureSource(self.source, self.rng, self.opponent, self.n_particles)
        self.features.start(view)

    def act(self, view: PublicView) -> int:
        """The network's best legal move on the base encoding and the source's features."""
        self.features.update(view)
        if len(view.legal_actions) == 1:
            return view.legal_actions[0]
        obs = np.concatenate((encode_base(view), self.features.features(view, self.game)))
        logits = self.network.logits(obs[None])[0]
        return int(max(view.legal_actions, key=lambda action: logits[action]))


def play_pairs(make_player: Any, opponent: Policy, pairs: int, seed: int, name: str,
               opponent_name: str) -> MatchResult:
    """``pairs`` deal pairs of ``make_player(opponent)`` (a :class:`LadderPlayer`) against ``opponent``, seats
    swapped within each pair: the deals of :func:`train.evaluation.matches.deal_seeds` (those of ``uno-evaluate
    --seed``), in this process, each game's deal handed to the player."""
    player = make_player(opponent)
    seeds, firsts = deal_seeds(seed, pairs)
    scores = np.empty((pairs, 2))
    lengths = np.empty((pairs, 2), dtype=np.int64)
    for i, (game_seed, first) in enumerate(zip(seeds, firsts, strict=True)):
        for game, seats in enumerate(((player, opponent), (opponent, player))):
            result = play_game(seats, int(game_seed), first_player=int(first), on_deal=player.deal)
            scores[i, game] = 0.5 if result.winner == -1 else float(result.winner == game)
            lengths[i, game] = result.decisions
    return MatchResult(name, opponent_name, scores, lengths)


def save_measurement_network(model: Any, path: Path, source: str, settings: dict[str, Any]) -> Path:
    """A fitted ``aware`` or oracle network as a checkpoint zip that only :func:`load_measurement_network` reads: its
    settings record ``belief: source``, which every public loader refuses (module docstring)."""
    if source not in MEASUREMENT_ONLY:
        raise ValueError(f"only {', '.join(MEASUREMENT_ONLY)} networks are saved here, got {source!r}")
    record = {**settings, "belief": source, "observation_size": BASE_SIZE + BELIEF_FEATURES, "privileged_size": 0,
              "policy": policy_metadata(model.policy)}
    model.save(path)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(SETTINGS_MEMBER, json.dumps(record, indent=1, sort_keys=True))
    return path


def load_measurement_network(path: Path) -> PPOPolicy:
    """A network written by :func:`save_measurement_network`, as a PPOPolicy for :class:`LadderPlayer` only (it
    declares no belief: seated directly, it is refused for its observation size)."""
    with zipfile.ZipFile(path) as archive:
        settings = json.loads(archive.read(SETTINGS_MEMBER))
    if settings.get("belief") not in MEASUREMENT_ONLY:
        raise ValueError(f"{path} is not a measurement-only network (belief {settings.get('belief')!r})")
    return PPOPolicy(load_network(path, settings), observation_size=settings["observation_size"], name=path.stem)


def fitted_policy(model: Any, source: str) -> PPOPolicy:
    """A PPOPolicy of a freshly fitted model (any source), declared belief-free: a :class:`LadderPlayer` feeds it."""
    torch.set_num_threads(1)
    return PPOPolicy(model.policy, observation_size=BASE_SIZE + (0 if source == "none" else BELIEF_FEATURES),
                     name=source)
