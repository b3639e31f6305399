"""The search's modelled opponent (agents/search.py, ``opponent_rollout="modelled"``): each world's opponent is a
candidate of the learned opponent model drawn by the weights the belief learned, and its rollouts play it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_search_invariants import choice_position, last_search

from agents.search import OracleSearchPolicy, SearchPolicy
from agents.search_kernels import reward_of
from uno_env import core
from uno_env.belief import LearnedOpponent, NoisyRuleModel, RandomModel, RuleModel
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Policy
from uno_env.view import PublicView

#: Candidates that all name a compiled player: rule (index 0) and the uniform random (index 1).
CANDIDATES = (RuleModel(), RandomModel())


def modelled(simulations: int = 64, **args: Any) -> SearchPolicy:
    """A search whose opponent's seat plays the candidates of a learned rule / random model."""
    return SearchPolicy(simulations=simulations, n_particles=200, opponent_model=LearnedOpponent(CANDIDATES),
                        opponent_rollout="modelled", **args)


class Watched:
    """Seats a search and keeps, at each of its searched decisions, the belief's learned weights and the opponent's
    player in each world the search drew (from :func:`last_search`'s record of its kernel calls)."""

    def __init__(self, player: SearchPolicy, seen: dict[str, Any]) -> None:
        self.player, self.seen = player, seen
        self.decisions: list[tuple[np.ndarray, np.ndarray]] = []

    def reset(self, seed: int | None = None) -> None:
        self.player.reset(seed)

    def observe_start(self, view: PublicView) -> None:
        self.player.observe_start(view)

    def act(self, view: PublicView) -> int:
        action = self.player.act(view)
        if len(view.legal_actions) > 1:
            self.decisions.append((self.player._tracker.model_weights(), self.seen["worlds"][2].copy()))
        return action


def watched_game(monkeypatch: pytest.MonkeyPatch, opponent: Policy, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (learned weights, worlds' opponent players) of each searched decision of a game against ``opponent``."""
    watched = Watched(modelled(), last_search(monkeypatch))
    play_game((watched, opponent), seed, first_player=0)
    return watched.decisions


def test_each_worlds_opponent_is_a_candidate_drawn_by_the_learned_weights(monkeypatch):
    # Against random the rule candidate is refuted (its weight falls to the floor) and the worlds roll out random;
    # against rule it keeps its weight and the worlds roll out rule: the share of rule worlds follows rule's weight.
    games = {name: [watched_game(monkeypatch, opponent, seed) for seed in (1, 2)]
             for name, opponent in (("random", RandomPolicy()), ("rule", RulePolicy()))}
    for name, weight_of_rule in (("random", lambda w: w < 0.05), ("rule", lambda w: w > 0.9)):
        late = [decisions[-1] for decisions in games[name]]  # each game's last decision
        assert all(weight_of_rule(weights[0]) for weights, _ in late), name
        assert set(np.concatenate([players for _, players in late])) <= {core.RULE_POLICY, core.RANDOM_POLICY}
        share = np.mean([np.mean(players == core.RULE_POLICY) for _, players in late])
        assert weight_of_rule(share), (name, share)
    every = [d for decisions in games["random"] + games["rule"] for d in decisions]
    share = np.array([np.mean(players == core.RULE_POLICY) for _, players in every])
    weight = np.array([weights[0] for weights, _ in every])
    assert abs(np.mean(share - weight)) < 0.05 and min(len(players) for _, players in every) >= 64


def test_the_rollouts_play_each_worlds_candidate_not_rule(monkeypatch):
    # Before the opponent's first play the weights are the prior, half rule, half random: the root's results are
    # each world's simulation with that world's player on the opponent's seat, and rule on every world would give
    # others.
    seen = last_search(monkeypatch)
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2", "green:1", "red:2"])
    player = modelled(simulations=300, rollout="random")
    player.reset(0)
    player.observe_start(start)
    player.act(view)
    (states, seeds, opponents), (actions, _, visits, _, rewards, *_) = seen["worlds"], seen["root"]
    used = opponents[:visits.max()]
    assert 0.3 < np.mean(used == core.RULE_POLICY) < 0.7 and set(used) == {core.RULE_POLICY, core.RANDOM_POLICY}

    def results(players: np.ndarray) -> list[list[float]]:
        return [[reward_of(core.simulate(states[k], action, core.RANDOM_POLICY, players[k], seeds[k], 3000))
                 for k in range(visits[i])] for i, action in enumerate(actions)]

    recorded = [rewards[i, :visits[i]].tolist() for i in range(len(actions))]
    assert recorded == results(opponents)
    assert recorded != results(np.full(len(opponents), core.RULE_POLICY))


def test_a_posterior_on_random_or_on_rule_changes_what_the_search_finds():
    # The same decision searched with the same seed, the learned weights concentrated on one candidate or the other
    # (a prior that all but excludes the other): the opponent the worlds play changes the values the root finds.
    _, start, view = choice_position(["yellow:3", "yellow:4", "red:8", "blue:2", "green:1", "red:2"])

    def root(prior: tuple[float, float]) -> dict[int, tuple[int, float]]:
        player = SearchPolicy(simulations=600, n_particles=200, rollout="random", exploration=1e6,
                              opponent_model=LearnedOpponent(CANDIDATES, prior=prior, share=0.0),
                              opponent_rollout="modelled")
        player.reset(3)
        player.observe_start(start)
        player.act(view)
        return player.last_root

    on_rule, on_random = root((1.0, 1e-9)), root((1e-9, 1.0))
    mean = {name: {a: total / visits for a, (visits, total) in values.items()}
            for name, values in (("rule", on_rule), ("random", on_random))}
    assert mean["rule"] != mean["random"]
    # Against a random opponent the random rollout wins more than against rule, whatever the move.
    assert sum(mean["random"].values()) > sum(mean["rule"].values())


def test_same_seed_same_decisions():
    def game(seed: int) -> list[tuple[int, dict[int, tuple[int, float]]]]:
        player = modelled(simulations=48)
        decisions: list[tuple[int, dict[int, tuple[int, float]]]] = []

        class Seat:
            def reset(self, seed: int | None = None) -> None:
                player.reset(seed)

            def observe_start(self, view: PublicView) -> None:
                player.observe_start(view)

            def act(self, view: PublicView) -> int:
                action = player.act(view)
                decisions.append((action, dict(player.last_root)))
                return action

        play_game((Seat(), RandomPolicy()), seed, first_player=1)
        return decisions

    first = game(5)
    assert first == game(5) and len(first) > 5
    assert first != game(6)


class Unplayable(NoisyRuleModel):
    """A candidate model that names no compiled player."""

    player = None


def test_a_modelled_opponent_needs_a_learned_model_whose_candidates_name_compiled_players():
    with pytest.raises(ValueError, match="opponent_rollout 'modelled' plays the opponent the belief learns: set "
                                         "opponent_model='learned'"):
        SearchPolicy(opponent_rollout="modelled")
    with pytest.raises(ValueError, match="needs belief 'particles'"):
        SearchPolicy(belief="counting", opponent_model="learned", opponent_rollout="modelled")
    with pytest.raises(ValueError, match="candidate model Unplayable names no compiled player"):
        SearchPolicy(opponent_model=LearnedOpponent((RuleModel(), Unplayable(), RandomModel())),
                     opponent_rollout="modelled")
    with pytest.raises(ValueError, match="opponent_rollout must be one of random, rule, modelled or None"):
        SearchPolicy(opponent_rollout="learned")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the oracle keeps no belief"):
        OracleSearchPolicy(lambda: [0] * 54, opponent_model=LearnedOpponent(CANDIDATES), opponent_rollout="modelled")
    assert LearnedOpponent(CANDIDATES).candidate_players() == ("rule", "random")
