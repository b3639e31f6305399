"""The learned opponent model against every opponent style: it learns the style at the table, and its belief about
the opponent's hand is never worse than the plain filter's (docs/beliefs.md, "Against the opponent styles")."""

from __future__ import annotations

import numpy as np
import pytest

from agents.guided import guided_search
from train.evaluation.belief_quality import measure_quality
from uno_env.belief import LearnedOpponent, TrajectoryBelief
from uno_env.belief.learned import RULE_CANDIDATES, STYLE_CANDIDATES
from uno_env.core import COMPILED_PLAYERS
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import make_policy
from uno_env.styles import HELD_OUT_STYLES, TRAINING_STYLES

#: Every player the project has: the styles, rule and random.
OPPONENTS = COMPILED_PLAYERS


def test_the_default_candidates_are_rule_the_training_styles_and_random():
    players = LearnedOpponent().candidate_players()
    assert set(players) == {"rule", "random", *TRAINING_STYLES}
    assert not set(players) & set(HELD_OUT_STYLES)  # nothing is tuned against a held-out style
    assert [type(m) for m in LearnedOpponent().candidates] == [type(m) for m in STYLE_CANDIDATES]


def test_the_guided_search_keeps_the_filter_its_strength_was_measured_with():
    model = guided_search().opponent_model
    assert [type(m) for m in model.candidates] == [type(m) for m in RULE_CANDIDATES]
    assert model.proposal == "prior" and model.catch_all == "random"


class _Recorder:
    """Plays ``rule`` and feeds ``belief`` its views, keeping the learned weights after each update."""

    def __init__(self, belief: TrajectoryBelief) -> None:
        self.belief, self.policy, self.seen = belief, RulePolicy(), []

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def observe_start(self, view) -> None:
        self.belief.reset(view)
        self.seen.append(self.belief.model_weights())

    def act(self, view) -> int:
        self.belief.update(view)
        self.seen.append(self.belief.model_weights())
        return self.policy.act(view)


@pytest.mark.parametrize("proposal", ["learned", "prior"])
def test_each_play_is_weighed_with_the_weights_learned_before_it_and_the_prior_or_the_prior_alone(proposal: str):
    belief = TrajectoryBelief(200, np.random.default_rng(0), model=LearnedOpponent(proposal=proposal))
    recorder = _Recorder(belief)
    play_game((recorder, make_policy("hold-actions")), 7, 0)
    mixes = belief.play_weights()
    assert len(mixes) > 5
    if proposal == "prior":
        assert np.allclose(mixes, belief.model.prior)
        return
    assert np.allclose(mixes[0], belief.model.prior) and not np.allclose(mixes, mixes[0])
    assert all(np.isclose(mix.sum(), 1.0) and mix.min() > 0 for mix in mixes)
    # The weights the seat saw after an update, half and half with the prior, weigh the opponent's next play.
    prior = belief.model.prior
    followed = [w for w in recorder.seen[:-2] if not any(np.allclose((prior + w) / 2, mix) for mix in mixes)]
    assert not followed, followed


def test_a_bad_proposal_is_refused():
    with pytest.raises(ValueError, match="proposal must be 'learned' or 'prior'"):
        LearnedOpponent(proposal="posterior")


@pytest.mark.parametrize("opponent", OPPONENTS)
def test_the_learned_filter_is_no_worse_than_the_plain_one_against_every_style(opponent: str):
    """Log-loss of the opponent's true hand on a few seeded games, the tracked seat playing ``rule``."""
    result = measure_quality(games=4, seed=33500, tracked="rule", opponent=opponent, particles=(500,), aware=(),
                             learned=(500,))
    plain, learned = (result.sums[:, b, 0].sum() / result.counts.sum() for b in (1, 2))
    assert learned <= plain + 0.002, (opponent, plain, learned)


@pytest.mark.parametrize("style", ["wilds-first", "dump-actions", "hold-actions"])
def test_the_style_at_the_table_takes_the_weight(style: str):
    """Against a training style, its own model ends with the most weight, or shares it with styles that made the same
    choices, and more than the prior's sixth, in 3 of 4 seeded games at least. (Not in every game: with 300
    particles a deterministic style's model can lose every particle that explains one of its plays.)"""
    index = LearnedOpponent().candidate_players().index(style)
    ends = []
    for seed in range(4):
        belief = TrajectoryBelief(300, np.random.default_rng(seed), model=LearnedOpponent())
        play_game((_Recorder(belief), make_policy(style)), 40 + seed, seed % 2)
        ends.append(belief.model_weights())
    ends = np.array(ends)
    leads = np.isclose(ends[:, index], ends.max(axis=1)) & (ends[:, index] > 0.2)
    assert leads.sum() >= 3, ends
