"""The Policy protocol and the policy registry (uno_env.policy)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from uno_testlib import DRAW, FirstLegalPolicy, act, scenario, wild_actions

from uno_env import policy as policy_module
from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import NO_NEEDS, Needs, Policy, make_policy, needs_of, policy_names, register_policy

ROOT = Path(__file__).resolve().parent.parent


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


def test_installed_plugins_are_the_declared_ones():
    """The installed metadata carries pyproject.toml's policy entry points: the names "search" and the shipped
    agents reach uno_env through them (a stale install loses them: reinstall with pip install -e .)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in (policy_module.POLICY_GROUP, policy_module.CATALOGUE_GROUP):
        installed = {point.name: point.value for point in entry_points(group=group)}
        assert installed == declared[group], f"{group}: installed {installed}; reinstall (pip install -e .)"


def test_unknown_name_without_plugins_says_so(monkeypatch):
    """With no policy entry points installed, "search" is unknown and the error says why."""
    monkeypatch.setattr(policy_module, "_installed", lambda group: {})
    assert "search" not in policy_names() and "random" in policy_names()
    with pytest.raises(ValueError, match="unknown policy 'search'.*no 'uno_rl.policies' entry points: is uno-rl "
                                         "installed"):
        make_policy("search")


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter from the project root; its standard output."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_built_in_names_need_only_import_uno_env():
    """``import uno_env`` imports no agents, train or torch; the registry finds "search" and shipped agents itself."""
    out = run_python(
        "import sys, gymnasium as gym, uno_env\n"
        "print(sorted(m for m in ('agents', 'train', 'torch') if m in sys.modules))\n"
        "for name in ('search', 'search-q-none'):\n"
        "    env = gym.make('Uno-v0', opponent=name)\n"
        "    obs, info = env.reset(seed=0)\n"
        "    env.step(int(info['action_mask'].nonzero()[0][0]))\n"
        "    print(type(env.unwrapped.opponent).__name__)\n")
    assert out.split("\n")[:3] == ["[]", "SearchPolicy", "PPOPolicy"]


def test_policies_declare_needs():
    class Tracking(RandomPolicy):
        needs = Needs(belief="counting")

    assert needs_of(RandomPolicy()) == NO_NEEDS == Needs("none")
    assert needs_of(Tracking()).belief == "counting"
    assert needs_of(make_policy("search")) == NO_NEEDS, "the search player keeps its own belief"
    with pytest.raises(TypeError, match="Needs"):
        needs_of(type("Bad", (RandomPolicy,), {"needs": "counting"})())
    with pytest.raises(TypeError, match=r"declare needs = uno_env.policy.Needs\(belief='counting'\)"):
        needs_of(type("OldStyle", (RandomPolicy,), {"belief": "counting"})())  # earlier versions' declaration
