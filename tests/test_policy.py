"""The Policy protocol and the policy registry (uno_env.policy)."""

from __future__ import annotations

import numpy as np
import pytest
from uno_testlib import DRAW, FirstLegalPolicy, act, scenario, wild_actions

from uno_env import policy as policy_module
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Policy, make_policy, policy_names, register_policy


def test_make_policy_by_name_and_object():
    assert isinstance(make_policy("random"), RandomPolicy)
    assert isinstance(make_policy("rule"), RulePolicy)
    assert make_policy("random") is not make_policy("random"), "a fresh policy per call"
    mine = FirstLegalPolicy()
    assert make_policy(mine) is mine
    assert isinstance(RandomPolicy(), Policy) and isinstance(mine, Policy)
    assert {"random", "rule"} <= set(policy_names()) and policy_names() == sorted(policy_names())


def test_make_policy_errors():
    with pytest.raises(ValueError, match="unknown policy 'nobody'.*random.*rule"):
        make_policy("nobody")
    with pytest.raises(TypeError, match="reset.*act"):
        make_policy(object())

    class ActOnly:
        def act(self, view):
            return DRAW

    with pytest.raises(TypeError, match="ActOnly"):
        make_policy(ActOnly())


def test_register_policy(monkeypatch):
    monkeypatch.setattr(policy_module, "_REGISTRY", dict(policy_module._REGISTRY))
    register_policy("first_legal", FirstLegalPolicy)
    assert "first_legal" in policy_names()
    policy = make_policy("first_legal")
    assert isinstance(policy, FirstLegalPolicy)
    view = Game.from_scenario(scenario(["red:5", "wild"], ["yellow:1", "yellow:2"], ["red:3"]),
                              np.random.default_rng(0)).observe(0)
    assert policy.act(view) == min(view.legal_actions) == act("red:5")
    assert wild_actions("wild") <= set(view.legal_actions)
