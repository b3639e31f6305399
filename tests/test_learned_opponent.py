"""The learned opponent model (uno_env/belief/learned.py) inside the trajectory filter: its weights learn the
opponent, the true hand is never impossible under it, and bad settings are refused."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from belief_testlib import check_invariants

from agents.search import SearchPolicy
from train.evaluation.belief_quality import measure_quality
from uno_env.belief import LearnedOpponent, NoisyRuleModel, RandomModel, RuleModel, TrajectoryBelief, make_belief
from uno_env.belief.learned import RULE_CANDIDATES
from uno_env.belief.tracker import Decision
from uno_env.cards import DRAW_ACTION
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import make_policy
from uno_env.view import PublicView


class _Tracked:
    """Plays ``policy`` and feeds ``belief`` this seat's views; keeps the least model weight seen after an update
    and, with ``check``, checks every belief's invariants at each view."""

    def __init__(self, policy: object, belief: TrajectoryBelief, check: bool = False) -> None:
        self.policy, self.belief = policy, belief
        self.least_weight = 1.0
        self.check, self.rng = check, np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def observe_start(self, view: PublicView) -> None:
        self.belief.reset(view)

    def act(self, view: PublicView) -> int:
        self.belief.update(view)
        self.least_weight = min(self.least_weight, float(self.belief.model_weights().min()))
        if self.check:  # the answers (the model average by importance weights) are a belief's
            check_invariants(self.belief, view, self.rng)
        return self.policy.act(view)


class _NoisyRule:
    """The rule player, but a uniformly random legal action at 30% of its decisions: rule-like, yet it makes
    plays the rule model calls impossible. Records (hand, action, decision) of each play (the test's truth)."""

    def __init__(self) -> None:
        self.rule, self.random = RulePolicy(), RandomPolicy()
        self.plays: list[tuple[np.ndarray, int, Decision]] = []

    def reset(self, seed: int | None = None) -> None:
        self.random.reset(seed)
        self.rng = np.random.default_rng(seed)
        self.plays = []

    def act(self, view: PublicView) -> int:
        chooser = self.random if self.rng.random() < 0.3 else self.rule
        action = chooser.act(view)
        if action != DRAW_ACTION:
            decision = Decision(view.top, view.active_colour, view.hand_size, view.opponent_hand_size,
                                view.deck_size)
            self.plays.append((np.array(view.hand, np.int64), action, decision))
        return action


def _final_weights(opponent: Callable[[], object], games: int, n: int = 300,
                   candidates: tuple = RULE_CANDIDATES) -> np.ndarray:
    """The weights learned by the end of each game with the rule-like candidates weighed by their prior (the filter
    ``search-guided`` plays with; tests/test_belief_styles.py has the default filter against every style)."""
    weights = []
    for seed in range(games):
        belief = TrajectoryBelief(n, np.random.default_rng(seed), model=LearnedOpponent(candidates, proposal="prior"))
        play_game((_Tracked(RulePolicy(), belief), opponent()), seed, seed % 2)
        weights.append(belief.model_weights())
    return np.array(weights)


def test_weights_move_toward_the_model_that_generated_the_moves():
    """Candidates (rule, random) from equal priors: against the rule player the rule model gains weight in every
    game, against the random player the uniform one does. If the likelihood of the plays were ignored the
    weights would stay at the prior."""
    pair = (RuleModel(), RandomModel())
    against_rule = _final_weights(RulePolicy, 4, candidates=pair)
    against_random = _final_weights(RandomPolicy, 4, candidates=pair)
    assert np.all(against_rule[:, 0] > 0.6), against_rule
    assert np.all(against_random[:, 1] > 0.8), against_random
    assert against_rule[:, 0].mean() > 0.75 and against_random[:, 1].mean() > 0.9


def test_a_rule_like_player_is_learned_as_the_noisy_rule_model():
    """The rule-like candidates (rule, noisy rule, random): a player that is the rule player at 70% of its decisions
    refutes the rule model at its first deviation, and the noisy rule model explains its plays better than the
    uniform one, so the noisy model ends with the most weight in every game. Against the rule player itself the two
    rule models share the weight (both explain its plays; the plain rule model only slightly better) and the uniform
    one loses it; against the random player the rule model is refuted and the uniform one takes the weight in most
    games (a short game of random plays can look rule-like: the noisy model then keeps some)."""
    assert [type(model) for model in RULE_CANDIDATES] == [RuleModel, NoisyRuleModel, RandomModel]
    against_noisy = _final_weights(_NoisyRule, 4)
    against_rule = _final_weights(RulePolicy, 4)
    against_random = _final_weights(RandomPolicy, 4)
    assert np.all(against_noisy.argmax(axis=1) == 1), against_noisy
    assert against_noisy[:, 1].mean() > 0.8, against_noisy
    assert np.all(against_rule[:, 2] < 0.2) and against_rule[:, 2].mean() < 0.1, against_rule
    assert np.all(against_random[:, 0] < 0.05) and np.median(against_random[:, 2]) > 0.9, against_random


def test_the_true_hand_is_never_impossible_in_soak_games():
    """Soak: seeded games against a player that is mostly the rule player but often not. No candidate's learned
    weight ever reaches 0; at every opponent play the mixture the filter weighed it with gives the opponent's true
    hand a positive likelihood; and the filter never finds the history impossible (no fallback to card
    counting). The answers satisfy every belief's invariants (three of the games)."""
    plays = 0
    for seed in range(12):
        belief = TrajectoryBelief(200, np.random.default_rng(seed), model=LearnedOpponent())
        opponent, tracked = _NoisyRule(), _Tracked(RulePolicy(), belief, check=seed < 3)
        play_game((tracked, opponent), 100 + seed, seed % 2)
        assert belief.fallbacks == 0, f"seed {seed}: the filter found the history impossible"
        assert tracked.least_weight > 0.0, f"seed {seed}: a candidate lost all its weight"
        weights = belief.play_weights()
        # The last plays may follow the tracked seat's last view: the filter has seen a prefix of them.
        assert 0 < len(weights) <= len(opponent.plays)
        for mix, (hand, action, decision) in zip(weights, opponent.plays, strict=False):
            likelihood = sum(w * model.likelihood(hand[None], action, decision)[0]
                             for w, model in zip(mix, belief.model.candidates, strict=True))
            assert likelihood > 0.0, f"seed {seed}: the true hand was ruled out by a play"
        plays += len(weights)
    assert plays > 150


@pytest.mark.parametrize(("make", "message"), [
    (lambda: LearnedOpponent(candidates=()), "at least one candidate"),
    (lambda: LearnedOpponent(candidates=(RuleModel(),)), "uniform model"),
    (lambda: LearnedOpponent(candidates=(RuleModel(), RandomModel(), RuleModel())), "duplicate"),
    (lambda: LearnedOpponent(candidates=(RulePolicy(), RandomModel())), "not an opponent model"),
    (lambda: LearnedOpponent(prior=(1.0,)), "prior must be 6 positive weights"),
    (lambda: LearnedOpponent((RuleModel(), RandomModel()), prior=(1.0, 0.0)), "prior must be 2 positive weights"),
    (lambda: LearnedOpponent(share=1.0), "share must be a number in [0, 1)"),
    (lambda: LearnedOpponent(share=-0.1), "share must be a number in [0, 1)"),
    (lambda: LearnedOpponent(catch_all="uniform"), "catch_all must be 'plain' or 'random'"),
    (lambda: make_belief("particles", rng=np.random.default_rng(0), opponent_model="learnt"),
     "unknown opponent_model 'learnt'"),
    (lambda: make_belief("counting", rng=np.random.default_rng(0), opponent_model="learned"),
     "needs belief 'particles'"),
    (lambda: make_belief("particles", rng=np.random.default_rng(0), opponent_model="learned",
                         opponent_policy=RulePolicy()), "not told the opponent"),
    (lambda: SearchPolicy(simulations=10, belief="counting", opponent_model="learned"), "needs belief 'particles'"),
    (lambda: SearchPolicy(simulations=10, opponent_model=None), "unknown opponent_model None"),
])
def test_bad_opponent_model_settings_are_refused(make, message):
    with pytest.raises(ValueError, match=None) as error:
        make()
    text = str(error.value)
    assert message in text and "\n" not in text, text


def test_learned_setting_builds_the_learned_filter():
    belief = make_belief("particles", n_particles=50, rng=np.random.default_rng(0), opponent_model="learned")
    assert isinstance(belief, TrajectoryBelief) and isinstance(belief.model, LearnedOpponent)
    assert np.allclose(belief.model_weights(), 1 / len(belief.model.candidates))
    told = make_belief("particles", n_particles=50, rng=np.random.default_rng(0), opponent_policy=RulePolicy())
    assert told.model_weights() is None


def test_the_search_player_draws_its_worlds_from_the_learned_filter():
    """``SearchPolicy(opponent_model="learned")`` plays with the learned filter as its tracker, told nothing."""
    searcher = SearchPolicy(simulations=20, n_particles=100, opponent_model="learned")
    play_game((searcher, RulePolicy()), 3, 0)
    tracker = searcher._tracker
    assert isinstance(tracker, TrajectoryBelief) and isinstance(tracker.model, LearnedOpponent)
    assert searcher.opponent_policy is None and len(tracker.play_weights()) > 0
    assert np.isclose(tracker.model_weights().sum(), 1.0)


def test_the_plain_filter_answers_for_the_catch_all_candidate():
    """Against a player no candidate describes (it keeps its wilds), the uniform candidate takes the weight and the
    answers become the plain filter's: ``plain_share`` is that weight, and the answers mix in the plain filter's
    by it. With ``catch_all="random"`` the uniform candidate answers itself and the plain filter has no share."""
    for catch_all, expect_share in (("plain", True), ("random", False)):
        belief = TrajectoryBelief(200, np.random.default_rng(1),
                                  model=LearnedOpponent(RULE_CANDIDATES, catch_all=catch_all))
        tracked = _Tracked(RulePolicy(), belief, check=True)
        play_game((tracked, make_policy("hold-wilds")), 1, 0)
        weights = belief.model_weights()
        assert weights[2] > 0.5, weights
        # The share is the uniform weight among the candidates the answers use: at least its weight among all.
        assert (belief.plain_share() >= weights[2] - 1e-12) if expect_share else belief.plain_share() == 0.0
    only_uniform = TrajectoryBelief(100, np.random.default_rng(2), model=LearnedOpponent((RandomModel(),)))
    play_game((_Tracked(RulePolicy(), only_uniform, check=True), RulePolicy()), 2, 1)
    assert only_uniform.plain_share() == 1.0


class _Starts(_Tracked):
    """Plays ``rule``; records the model weights right after the deal, before any play."""

    def __init__(self, belief: TrajectoryBelief) -> None:
        super().__init__(RulePolicy(), belief)
        self.first: np.ndarray | None = None

    def observe_start(self, view: PublicView) -> None:
        super().observe_start(view)
        self.first = self.belief.model_weights()


def test_a_match_carries_what_was_learned_to_the_next_game():
    """Told it meets the same opponent again, the filter starts the next game from the weights the last one ended
    with (before any play of the new game); not told, it starts from the prior."""
    ends = []
    for again in (True, False):
        belief = TrajectoryBelief(200, np.random.default_rng(4), model=LearnedOpponent(RULE_CANDIDATES))
        play_game((_Tracked(RulePolicy(), belief), RulePolicy()), 4, 0)
        ends.append(belief.model_weights())
        if again:
            belief.same_opponent_again()
        starts = _Starts(belief)
        play_game((starts, RulePolicy()), 5, 1)
        assert np.allclose(starts.first, ends[-1] if again else belief.model.prior), (again, starts.first)
    assert ends[0][2] < 0.1, "the rule player was learned in the first game"


def test_belief_quality_keeps_a_match_together_whatever_the_workers():
    """``measure_quality(match=2)``: the learned filter of a match's second game starts from the first game's weights,
    so its scores differ from games played alone; a match is never split between workers, so two workers give what
    one gives."""
    def learned_sums(match: int, workers: int) -> np.ndarray:
        result = measure_quality(games=4, seed=3, tracked="rule", opponent="rule", particles=(), aware=(),
                                 learned=(60,), workers=workers, match=match)
        return result.sums[:, 1]

    together = learned_sums(2, 1)
    assert np.array_equal(together, learned_sums(2, 2))
    alone = learned_sums(1, 1)
    assert np.array_equal(together[0::2], alone[0::2]) and not np.array_equal(together[1::2], alone[1::2])
