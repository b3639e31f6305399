"""The one table of compiled players (``uno_env.core.COMPILED_PLAYERS``) and everything that reads it.

Each name must have its branch in ``core.choose`` (in ``core.player_options``: a code without one raises, it never
plays another player); the native vector env and the training config's ``vec_env: native`` check accept exactly the
table's names; a Python policy's compiled twin is a name of the table, read from its own class only.
"""

from __future__ import annotations

import numpy as np
import pytest

from train.config import ConfigError, parse_config
from uno_env import core
from uno_env.cards import NUM_ACTIONS
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import policy_names
from uno_env.seat import Seat
from uno_env.vector import OPPONENTS, UnoVectorEnv

NATIVE = {"name": "tiny", "seed": 0, "total_timesteps": 256, "n_envs": 2, "vec_env": "native",
          "ppo": {"n_steps": 64, "batch_size": 64}}


def dealt_states(count: int) -> list[np.ndarray]:
    """Positions right after seeded deals, with the seat to move holding a choice (several legal actions)."""
    states, seed, legal = [], 0, np.empty(NUM_ACTIONS, dtype=np.int64)
    while len(states) < count:
        state = np.zeros(core.STATE_SIZE, dtype=np.int64)
        core.deal_into(state, core.seed_stream(seed), seed % 2)
        seed += 1
        if core.legal_actions_into(state, legal) > 1:
            states.append(state)
    return states


@pytest.mark.parametrize("name", core.COMPILED_PLAYERS)
def test_every_compiled_player_has_its_branch_in_choose(name: str):
    code = core.COMPILED_PLAYERS.index(name)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for state in dealt_states(40):
        n = core.legal_actions_into(state, legal)
        before = state.copy()
        action = core.choose(state, legal, n, code, core.seed_stream(1))
        assert action in legal[:n] and (state == before).all()
        outcome = core.playout(state, code, code, core.seed_stream(2), 3000)
        assert outcome in (0, 1, core.DRAWN)


def test_the_policy_codes_are_the_table_indices():
    codes = {"random": core.RANDOM_POLICY, "rule": core.RULE_POLICY, "noisy-rule": core.NOISY_RULE_POLICY,
             "hold-wilds": core.HOLD_WILDS_POLICY, "wilds-first": core.WILDS_FIRST_POLICY,
             "dump-actions": core.DUMP_ACTIONS_POLICY, "hold-actions": core.HOLD_ACTIONS_POLICY,
             "highest-number": core.HIGHEST_NUMBER_POLICY, "rule-fixed-colour": core.FIXED_COLOUR_POLICY}
    assert {name: core.COMPILED_PLAYERS[code] for name, code in codes.items()} == {name: name for name in codes}
    assert len(set(core.COMPILED_PLAYERS)) == len(core.COMPILED_PLAYERS) == len(codes)
    assert set(core.DETERMINISTIC_PLAYERS) < set(core.COMPILED_PLAYERS)
    assert len(core.PLAYER_NOISE) == len(core.COMPILED_PLAYERS)


@pytest.mark.parametrize("code", [-1, len(core.COMPILED_PLAYERS), 99])
def test_an_unknown_code_raises_instead_of_playing_another_player(code: int):
    state = dealt_states(1)[0]
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    n = core.legal_actions_into(state, legal)
    with pytest.raises(ValueError, match="COMPILED_PLAYERS"):
        core.choose(state, legal, n, code, core.seed_stream(0))
    with pytest.raises(ValueError, match="COMPILED_PLAYERS"):  # and through the callers, as the playouts'
        core.playout(state, code, code, core.seed_stream(0), 3000)


def native_accepts(name: str) -> tuple[bool, bool]:
    """Whether the training config's native check and the native vector env accept ``name`` as the opponent."""
    try:
        parse_config({**NATIVE, "opponents": [{"mix": {name: 1}}]})
        config = True
    except ConfigError:
        config = False
    try:
        UnoVectorEnv(1, opponent=name)
        vector = True
    except ValueError:
        vector = False
    return config, vector


def test_the_config_and_the_vector_env_accept_exactly_the_table():
    assert OPPONENTS == core.COMPILED_PLAYERS
    for name in sorted({*core.COMPILED_PLAYERS, *policy_names(), "greedy", "self"}):
        expected = name in core.COMPILED_PLAYERS
        assert native_accepts(name) == (expected, expected), name


def test_each_policy_twin_is_a_table_name_read_from_its_own_class():
    assert Seat(1, RandomPolicy()).compiled_twin()[0] == core.RANDOM_POLICY
    assert Seat(1, RulePolicy()).compiled_twin() == (core.RULE_POLICY, None)

    class Careful(RulePolicy):  # decides otherwise, perhaps: no twin inherited
        pass

    class Unknown(RulePolicy):
        compiled_player = "greedy"

    assert Seat(1, Careful()).compiled_twin() is None
    with pytest.raises(ValueError, match="'greedy', not a compiled player"):
        Seat(1, Unknown()).compiled_twin()
