"""What one seat can infer about the opponent's hidden hand from its own public view and the public events.

Three settings (the env option ``belief``):

* ``"none"``: no tracker (:class:`NoBelief`, empty features);
* ``"counting"``: exact card counting (:class:`CountingBelief`): the opponent's hand is a uniformly random
  subset of the unseen cards; the baseline;
* ``"particles"``: the particle filter (:class:`ParticleBelief`) with N lazy (Rao-Blackwellized) particles,
  which also learns from what the opponent did: the cards it played, the draws that show it had no playable
  card, our own draws, reshuffles. When the opponent's policy is known (:mod:`uno_env.belief.models`),
  :func:`make_belief` gives the policy-aware :class:`TrajectoryBelief` instead (trajectory particles with
  resample-move, :mod:`uno_env.belief.trajectory`); with ``opponent_model="learned"`` it gives that filter
  with a model of the opponent learned from its plays, not told (:mod:`uno_env.belief.learned`).

Every tracker sees only :class:`~uno_env.view.PublicView` objects of its seat (``reset`` with the view right
after the deal, then ``update`` with each later view), never the game: leakage of hidden state is
impossible by construction. ``features()`` returns the :data:`BELIEF_FEATURES` channels named in
:data:`FEATURE_NAMES` (expected count of each card type in the opponent's hand, probabilities that it can
play on each colour, holds a wild, can play on the current top card). ``sample_hands`` draws opponent hands
for determinizing planners. :class:`ExactBelief` enumerates the exact posterior on small positions (the
reference of the tests and of the quality measurement, ``python -m train.cli.belief_quality``).
docs/beliefs.md has the maths, each update case and the measured quality and cost.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np

from uno_env.belief import models
from uno_env.belief.exact import ExactBelief
from uno_env.belief.filters import (
    BELIEF_FEATURES,
    FEATURE_NAMES,
    MAX_PARTICLES,
    Belief,
    CountingBelief,
    NoBelief,
    ParticleBelief,
    belief_features,
    check_particles,
    counting_features_into,
)
from uno_env.belief.learned import LearnedOpponent
from uno_env.belief.models import NoisyRuleModel, OpponentModel, RandomModel, RuleModel, opponent_model
from uno_env.belief.trajectory import TrajectoryBelief

#: The belief settings, the one definition: what a seat's observer tracks about the opponent's hand.
BeliefKind = Literal["none", "counting", "particles"]
BELIEF_KINDS: tuple[BeliefKind, ...] = get_args(BeliefKind)
#: Where a particle belief's opponent model comes from: ``"told"``, the model of the ``opponent_policy`` it is
#: given (none: the plain likelihood); ``"learned"``, learned from the opponent's plays (:class:`LearnedOpponent`).
OpponentModelSetting = Literal["told", "learned"]
OPPONENT_MODELS: tuple[OpponentModelSetting, ...] = get_args(OpponentModelSetting)

__all__ = [
    "BELIEF_FEATURES", "BELIEF_KINDS", "FEATURE_NAMES", "MAX_PARTICLES", "OPPONENT_MODELS", "Belief", "BeliefKind",
    "CountingBelief", "ExactBelief", "LearnedOpponent", "NoBelief", "NoisyRuleModel", "OpponentModel",
    "OpponentModelSetting", "ParticleBelief", "RandomModel", "RuleModel", "TrajectoryBelief", "belief_features",
    "check_opponent_model", "check_particles", "counting_features_into", "make_belief", "opponent_model",
]


def check_opponent_model(kind: str, setting: Any, opponent_policy: Any = None) -> LearnedOpponent | None:
    """The learned model a belief setting asks for (``None`` for ``"told"``), or a one-line ``ValueError``.

    ``setting`` is ``"told"``, ``"learned"`` (a :class:`LearnedOpponent` with its default candidates) or a
    :class:`LearnedOpponent`; a learned model needs ``kind == "particles"`` and no ``opponent_policy`` (it is
    not told the opponent).
    """
    if isinstance(setting, str) and setting == "told":
        return None
    if isinstance(setting, str) and setting == "learned":
        learned = LearnedOpponent()
    elif isinstance(setting, LearnedOpponent):
        learned = setting
    else:
        raise ValueError(f"unknown opponent_model {setting!r}; expected one of "
                         f"{', '.join(map(repr, OPPONENT_MODELS))} or a LearnedOpponent")
    if kind != "particles":
        raise ValueError(f"a learned opponent model needs belief 'particles', got {kind!r}")
    if opponent_policy is not None:
        raise ValueError("a learned opponent model is not told the opponent: pass opponent_policy=None")
    return learned


def make_belief(kind: BeliefKind, *, n_particles: int = 1000, rng: np.random.Generator,
                opponent_policy: Any = None, opponent_model: OpponentModelSetting | LearnedOpponent = "told") -> Belief:
    """A belief tracker of the given kind (:data:`BELIEF_KINDS`).

    Args:
        kind: ``"none"``, ``"counting"`` or ``"particles"``.
        n_particles: N for ``"particles"`` (an int in 1..:data:`MAX_PARTICLES`).
        rng: the generator of the tracker's random draws (particles only).
        opponent_policy: the opponent's policy if known. When :func:`~uno_env.belief.models.opponent_model`
            finds its model (a policy carrying its ``likelihood_model``, as the built-in ``random`` and
            ``rule`` do, or any :class:`~uno_env.belief.models.OpponentModel`), ``"particles"`` is the
            policy-aware :class:`TrajectoryBelief`; otherwise the lazy plain-likelihood :class:`ParticleBelief`.
        opponent_model: ``"told"`` (the above), or ``"learned"`` / a :class:`LearnedOpponent`: the
            :class:`TrajectoryBelief` with an opponent model learned from the plays (:func:`check_opponent_model`).

    Raises:
        ValueError: naming the unknown kind, the invalid ``n_particles`` or the bad ``opponent_model``.
    """
    learned = check_opponent_model(kind, opponent_model, opponent_policy)
    if kind == "none":
        return NoBelief()
    if kind == "counting":
        return CountingBelief()
    if kind == "particles":
        model = learned or models.opponent_model(opponent_policy)  # the argument hides the function
        if model is not None:
            return TrajectoryBelief(n_particles, rng, model=model)
        return ParticleBelief(n_particles, rng)
    raise ValueError(f"unknown belief kind {kind!r}; expected one of {', '.join(map(repr, BELIEF_KINDS))}")
