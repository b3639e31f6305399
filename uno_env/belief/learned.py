"""An opponent model learned from what the opponent does: a Bayesian mixture over candidate models.

The policy-aware filter (:mod:`uno_env.belief.trajectory`) weighs each hypothesis by ``pi_2(action | hand)``,
which it must be told. :class:`LearnedOpponent` is told nothing about the opponent: it names *candidate* models
(:mod:`uno_env.belief.models`; by default :data:`STYLE_CANDIDATES`, the models of ``rule``, of the training opponent
styles and of the uniform ``random`` player) and prior weights, and the filter learns which candidate the opponent
plays like while it tracks the hand:

* at an opponent play ``a`` the filter weighs a hypothesis (hand ``H``) by the mixture
  ``pi_mix(a | H) = sum_k m_k pi_k(a | H)`` with ``m = (prior + W) / 2``, half the prior and half the weights ``W``
  learned from the plays before it (the *proposal* ``"learned"``; ``"prior"`` weighs every play with the prior
  alone, ``m = prior``). The mixture is logged with the play, so the resample-move moves target one fixed posterior
  and keep their detailed balance. Following what was learned lets the particles follow the candidate that
  describes the opponent: under the prior mixture alone the deterministic candidates (probability 1 for the one move
  they make) dominate it, and the histories of a player whose choices are spread get too few particles for its
  posterior. The prior's half keeps particles on every candidate's histories, so a candidate that gained weight early
  cannot starve the others of evidence (with ``m = W`` alone, the rule candidates kept the weight against a player
  that hoards wilds);
* each particle carries, per candidate, the log of ``R_k = prod_plays pi_k / pi_mix`` along its own trajectory:
  its importance weight for candidate ``k``'s posterior. After each play the candidates' weights are Bayes' rule
  with the hand integrated out along the trajectories, ``W_k ∝ prior_k sum_p w_p R_k(p)`` (true whatever mixture
  each play was weighed with, as long as it was fixed before the play);
* then a small share of the weight is spread evenly over the candidates, ``W <- (1 - s) W + s / K``: a floor
  (``W`` is recomputed from the ratios at each play, so this is not a switching prior), which keeps every
  candidate in the answers' average and in the mixture, and the weights away from 0. A deterministic candidate that
  no history the particles hold can reconcile with the plays (``rule`` after a play no hand makes it choose) stays
  at the floor: Bayes' rule refutes it;
* the answers (marginals, features, sampled hands) are the model average ``sum_k W_k`` (candidate ``k``'s
  posterior by self-normalized importance weights ``w_p R_k(p)``).

A uniform candidate (``random``: every legal action) must be among the candidates: it explains every play the
hand can make, so the true hand is never ruled out, whatever the opponent does. It is the catch-all, the candidate
that takes the weight when no other describes the opponent; but as a description of how a player chooses it is as
wrong as the others then: it reads a coloured play as evidence against holding a wild (a wild is four of the legal
ids), and a player that keeps its wilds makes that reading wrong. So by default (``catch_all="plain"``) the
catch-all's *answer* is the plain particle filter's (:class:`~uno_env.belief.filters.ParticleBelief`, which reads a
play only as the card having been held, kept beside the trajectory particles on the same views at about a
seventieth of their cost): when no candidate fits the opponent, the belief falls back to the plain filter's. Its
*evidence* stays the uniform model's, so the candidates are still compared by proper likelihoods.

Its cost and worth are measured in docs/beliefs.md ("The learned opponent model").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from uno_env.belief.models import (
    PLAIN_MODEL,
    RANDOM_MODEL,
    DumpActionsModel,
    HoldActionsModel,
    NoisyRuleModel,
    OpponentModel,
    RandomModel,
    RuleModel,
    WildsFirstModel,
)
from uno_env.core import COMPILED_PLAYERS

#: The likelihood code of the filter for a learned mixture (not a code of ``models.action_likelihood``).
LEARNED_MODEL = -1
#: The default candidates: ``rule``, the training opponent styles (``uno_env.styles.TRAINING_STYLES``; never the
#: held-out ones) and the uniform ``random``.
STYLE_CANDIDATES: tuple[OpponentModel, ...] = (RuleModel(), NoisyRuleModel(), WildsFirstModel(), DumpActionsModel(),
                                               HoldActionsModel(), RandomModel())
#: The rule-like candidates: ``rule``, ``rule`` with a quarter of uniform choices (a player that is rule-like but
#: not ``rule`` refutes ``rule`` at its first deviation) and ``random``. ``search-guided``'s filter learns these.
RULE_CANDIDATES: tuple[OpponentModel, ...] = (RuleModel(), NoisyRuleModel(), RandomModel())


class LearnedOpponent:
    """The settings of a learned opponent model (module docstring); the filter holds the learned weights.

    Args:
        candidates: the candidate models (``code`` and ``likelihood``, :mod:`uno_env.belief.models`); one of them
            must be the uniform ``random`` model. Default: :data:`STYLE_CANDIDATES`.
        prior: prior weights of the candidates (positive, normalized here); default equal.
        share: the fixed share spread evenly after each update, in ``[0, 1)``.
        catch_all: what the uniform candidate answers: ``"plain"`` (the default), the plain filter's posterior;
            ``"random"``, its own (module docstring).
        proposal: the mixture each play is weighed with: ``"learned"`` (the default), half the prior and half the
            weights learned from the plays before it; ``"prior"``, the prior weights (module docstring).

    Raises:
        ValueError: naming the bad setting (no candidates, no uniform candidate, a candidate that is not a model
            or is the plain likelihood, a duplicate, a prior of the wrong length or not positive, a share outside
            ``[0, 1)``, an unknown ``catch_all`` or ``proposal``).
    """

    code = LEARNED_MODEL

    def __init__(self, candidates: Sequence[OpponentModel] | None = None, prior: Sequence[float] | None = None,
                 share: float = 0.01, catch_all: Literal["plain", "random"] = "plain",
                 proposal: Literal["learned", "prior"] = "learned") -> None:
        candidates = STYLE_CANDIDATES if candidates is None else tuple(candidates)
        if not candidates:
            raise ValueError("a learned opponent model needs at least one candidate model")
        for candidate in candidates:
            code = getattr(candidate, "code", None)
            if not isinstance(code, int) or code < 0 or code == PLAIN_MODEL:
                raise ValueError(f"candidate {candidate!r} is not an opponent model with a compiled likelihood")
        codes = [candidate.code for candidate in candidates]
        if len(set(codes)) != len(codes):
            raise ValueError(f"duplicate candidate models (likelihood codes {codes})")
        if RANDOM_MODEL not in codes:
            raise ValueError("the candidates must include the uniform model (RandomModel), which explains every play")
        weights = np.ones(len(codes)) if prior is None else np.asarray(prior, dtype=np.float64)
        if weights.shape != (len(codes),) or not np.all(np.isfinite(weights)) or not np.all(weights > 0):
            raise ValueError(f"prior must be {len(codes)} positive weights, one per candidate, got {prior!r}")
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0.0 <= share < 1.0:
            raise ValueError(f"share must be a number in [0, 1), got {share!r}")
        if catch_all not in ("plain", "random"):
            raise ValueError(f"catch_all must be 'plain' or 'random', got {catch_all!r}")
        if proposal not in ("learned", "prior"):
            raise ValueError(f"proposal must be 'learned' or 'prior', got {proposal!r}")
        self.candidates = candidates
        self.codes = np.array(codes, np.int64)
        self.prior = weights / weights.sum()
        self.share = float(share)
        self.catch_all = catch_all
        self.proposal = proposal
        #: The uniform candidate's index among the candidates.
        self.uniform = codes.index(RANDOM_MODEL)

    def candidate_players(self) -> tuple[str, ...]:
        """The compiled player each candidate describes (its class attribute ``player``, a name of
        :data:`uno_env.core.COMPILED_PLAYERS`), in ``candidates`` order: what a search plays on the opponent's seat
        in a world where it plays like that candidate.

        Raises:
            ValueError: naming the first candidate that names no compiled player.
        """
        players = tuple(getattr(candidate, "player", None) for candidate in self.candidates)
        for candidate, player in zip(self.candidates, players, strict=True):
            if player not in COMPILED_PLAYERS:
                raise ValueError(f"candidate model {type(candidate).__name__} names no compiled player (its class "
                                 f"attribute player must be one of {', '.join(COMPILED_PLAYERS)}, got {player!r}), "
                                 "so no search can play it")
        return players

    def __repr__(self) -> str:
        names = ", ".join(type(candidate).__name__ for candidate in self.candidates)
        return (f"LearnedOpponent([{names}], share={self.share}, catch_all={self.catch_all!r}, "
                f"proposal={self.proposal!r})")
