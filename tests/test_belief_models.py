"""The opponent models (uno_env/belief/models.py) mirror the built-in policies they model."""

from __future__ import annotations

import numpy as np
from uno_testlib import DRAW, capped

from uno_env.belief import (
    RandomModel,
    RuleModel,
)
from uno_env.belief.tracker import Decision
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy


def test_opponent_models_mirror_the_builtin_policies():
    """At every decision of RandomPolicy / RulePolicy in random games, the model's likelihood of the chosen
    action given the true hand is 1 / (number of legal action ids) for RandomModel, and for RuleModel 1 for
    the chosen action and 0 for every other legal one."""
    decisions = 0
    for seed in range(12):
        for policy, model in ((RandomPolicy(), RandomModel()), (RulePolicy(), RuleModel())):
            rng = np.random.default_rng(seed)
            game = Game.deal(rng, seed % 2)
            policy.reset(seed)
            for _ in capped():
                if game.done:
                    break
                if game.current == 0:
                    game.step(int(rng.choice(game.legal_actions())))
                    continue
                view = game.observe(1, consume_events=False)
                action = policy.act(view)
                if not view.pending_draw and action != DRAW:
                    decision = Decision(view.top, view.active_colour, view.hand_size, view.opponent_hand_size,
                                        view.deck_size)
                    hand = np.array([view.hand])
                    likelihood = np.array([model.likelihood(hand, a, decision)[0] for a in view.legal_actions])
                    if isinstance(model, RandomModel):
                        assert np.allclose(likelihood, 1 / len(view.legal_actions))
                    else:
                        assert list(likelihood) == [float(a == action) for a in view.legal_actions]
                    decisions += 1
                game.step(action)
    assert decisions > 300
