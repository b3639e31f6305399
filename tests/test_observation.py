"""Every observation channel, decoded and checked against the public view it encodes.

The channel layout below is restated from the table in ``uno_env/observation.py`` (names, sizes, order) and
the card-type numbering from ``uno_env/cards.py``; expected values come from card names, ``info`` and the
scenario a test builds, never from the encoder. Hand-made positions pin known values (hand sizes 1 to 10, both
pending draws, wild tops); long random play checks every channel at every decision, belief channels included.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from uno_testlib import COLOUR_ORDER, capped, card_type, counts_of, deck_names, mask_set, scenario

from uno_env import UnoEnv, core
from uno_env.game import Game
from uno_env.observation import encode_base, encode_state_into
from uno_env.view import RESHUFFLE

#: (channel, size) in flat order, from the module table of uno_env/observation.py.
LAYOUT = (("hand", 54), ("legal", 61), ("top", 54), ("active_colour", 4), ("pending_draw", 2),
          ("opponent_cards", 7), ("sizes", 4), ("discard", 54), ("unseen", 54))
BASE = sum(size for _, size in LAYOUT)
BELIEF = 60  # expected count per card type (54), can play on each colour (4), holds a wild, can play on top
DECK = 108


type_index = card_type


def counts(names: list[str]) -> np.ndarray:
    """54 counts of a list of card names, as an array."""
    return np.array(counts_of(names), dtype=float)


FULL_DECK = counts(deck_names())


def decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Split a flat observation into its named channels (plus ``belief`` if present)."""
    out, start = {}, 0
    for name, size in LAYOUT:
        out[name] = obs[start:start + size]
        start += size
    if len(obs) > start:
        out["belief"] = obs[start:]
    return out


def one_hot_index(channel: np.ndarray) -> int:
    """The index of a one-hot channel; fails unless exactly one entry is 1 and the rest 0."""
    assert set(np.unique(channel)) <= {0.0, 1.0} and channel.sum() == 1, channel
    return int(np.argmax(channel))


def check_against_info(obs: np.ndarray, info: dict[str, Any], discard: np.ndarray | None = None) -> None:
    """Every base channel of ``obs`` against the public view in ``info`` (and the discard multiset if known)."""
    ch = decode(obs)
    hand = counts(info["hand"])
    assert np.array_equal(ch["hand"], hand)
    assert mask_set(ch["legal"]) == mask_set(info["action_mask"])
    assert one_hot_index(ch["top"]) == type_index(info["top"])
    assert one_hot_index(ch["active_colour"]) == COLOUR_ORDER.index(info["active_colour"])
    pending = {0: [0, 0], 2: [1, 0], 4: [0, 1]}[info["pending_draw"]]
    assert ch["pending_draw"].tolist() == pending
    size = info["opponent_hand_size"]
    if size == 0:  # only once the game is over: no size to one-hot
        assert not ch["opponent_cards"].any()
    else:
        assert one_hot_index(ch["opponent_cards"]) == min(size, 7) - 1
    expected_sizes = np.array([len(info["hand"]), size, info["deck_size"], info["discard_size"]]) / DECK
    np.testing.assert_allclose(ch["sizes"], expected_sizes, rtol=1e-6)
    assert ch["discard"].sum() == info["discard_size"]
    assert ch["discard"][type_index(info["top"])] >= 1
    if discard is not None:
        assert np.array_equal(ch["discard"], discard)
    # Card counting: what is neither held nor discarded is in the deck or the opponent's hand.
    assert np.array_equal(ch["unseen"], FULL_DECK - hand - ch["discard"])
    assert ch["unseen"].sum() == info["deck_size"] + size
    assert (ch["unseen"] >= 0).all()


def check_belief(obs: np.ndarray, info: dict[str, Any]) -> None:
    """Belief channels: expected counts of the opponent's hand within what is unseen, probabilities in [0, 1]."""
    ch = decode(obs)
    belief = ch["belief"]
    assert belief.shape == (BELIEF,)
    expected, probabilities = belief[:54], belief[54:]
    assert (expected >= -1e-5).all() and (expected <= ch["unseen"] + 1e-4).all()
    np.testing.assert_allclose(expected.sum(), info["opponent_hand_size"], atol=1e-3)
    assert ((probabilities >= -1e-6) & (probabilities <= 1 + 1e-6)).all()
    if info["opponent_hand_size"] and ch["unseen"][52:].sum() == 0:
        assert probabilities[4] == pytest.approx(0.0, abs=1e-6)  # no wild left to hold


def start(scn: dict[str, Any], **env_args: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """Reset an env on a scenario (the opponent never moves first here)."""
    env = UnoEnv(opponent="random", **env_args)
    return env.reset(seed=0, options={"scenario": scn})


FILLER = ["yellow:1", "yellow:2", "yellow:3", "yellow:4", "yellow:5", "yellow:6", "yellow:7", "yellow:8",
          "yellow:9", "yellow:skip"]


# ------------------------------------------------------------------------------------------- known positions
@pytest.mark.parametrize("opponent_size", range(1, 11))
def test_opponent_hand_size_one_hot_and_every_channel_on_known_positions(opponent_size):
    agent = ["red:7", "blue:7", "green:2"]
    discard = ["green:9", "red:9", "red:3"]
    deck = ["blue:1", "blue:2"]
    obs, info = start(scenario(agent, FILLER[:opponent_size], discard, deck))
    assert info["opponent_hand_size"] == opponent_size
    check_against_info(obs, info, counts(discard))
    ch = decode(obs)
    expected = np.zeros(7)
    expected[min(opponent_size, 7) - 1] = 1  # 1, 2, ..., 6, then "7 or more"
    assert ch["opponent_cards"].tolist() == expected.tolist()
    # Known values, stated directly: 3 own cards, the opponent's, 108 - 3 - n - 3 in the deck, 3 discarded.
    np.testing.assert_allclose(ch["sizes"] * DECK, [3, opponent_size, DECK - 6 - opponent_size, 3], atol=1e-4)
    assert ch["unseen"][type_index("red:3")] == 1 and ch["unseen"][type_index("red:7")] == 1
    assert ch["unseen"][type_index("green:9")] == 1 and ch["unseen"][type_index("green:2")] == 1
    assert ch["unseen"][type_index("blue:0")] == 1 and ch["unseen"][type_index("wild")] == 4


@pytest.mark.parametrize(("top", "pending", "colour", "expected"), [
    ("red:draw2", 2, None, [1, 0]),
    ("wild_draw4", 4, "green", [0, 1]),
    ("red:draw2", 0, None, [0, 0]),
])
def test_pending_draw_channel(top, pending, colour, expected):
    scn = scenario(["blue:4", "red:4"], ["yellow:1", "yellow:2"], [top], ["blue:1", "blue:2", "blue:3", "blue:5"],
                   pending_draw=pending, active_colour=colour)
    obs, info = start(scn)
    assert info["pending_draw"] == pending
    assert decode(obs)["pending_draw"].tolist() == expected
    check_against_info(obs, info, counts([top]))


@pytest.mark.parametrize("top", ["wild", "wild_draw4", "yellow:draw2", "red:0", "blue:reverse"])
def test_top_and_colour_one_hots_for_every_kind_of_top(top):
    colour = "blue" if top in ("wild", "wild_draw4") else None
    obs, info = start(scenario(["green:4", "yellow:4"], ["red:1", "red:2", "red:6"], [top], ["green:1"],
                               active_colour=colour))
    ch = decode(obs)
    assert one_hot_index(ch["top"]) == type_index(top)
    assert one_hot_index(ch["active_colour"]) == COLOUR_ORDER.index(colour or top.split(":")[0])
    check_against_info(obs, info, counts([top]))


def test_big_discard_pile_is_removed_from_the_unseen_cards():
    # Everything not named goes under the discard: the unseen cards are exactly the deck and the opponent's hand.
    agent, opponent, deck = ["red:7", "blue:7"], ["green:1", "wild"], ["yellow:5", "yellow:6", "wild_draw4"]
    obs, info = start(scenario(agent, opponent, ["red:9"], deck, rest="discard"))
    ch = decode(obs)
    assert np.array_equal(ch["unseen"], counts(opponent + deck))
    assert np.array_equal(ch["discard"], FULL_DECK - counts(agent + opponent + deck))
    np.testing.assert_allclose(ch["sizes"] * DECK, [2, 2, 3, DECK - 7], atol=1e-4)
    check_against_info(obs, info)


def test_counting_belief_is_exact_when_the_deck_is_empty():
    # No deck: every unseen card is in the opponent's hand, so counting knows it exactly.
    agent, opponent = ["red:7", "blue:7"], ["green:1", "wild", "yellow:2"]
    obs, info = start(scenario(agent, opponent, ["red:9"], [], rest="discard"), belief="counting")
    belief = decode(obs)["belief"]
    assert np.allclose(belief[:54], counts(opponent), atol=1e-5)
    assert belief[54 + 4] == pytest.approx(1.0)  # it holds a wild
    check_belief(obs, info)


# ------------------------------------------------------------------------------------------- long random play
@pytest.mark.parametrize("belief", ["none", "counting", "particles"])
def test_every_channel_matches_info_through_random_games(belief):
    env = UnoEnv(opponent="random", belief=belief, n_particles=64)
    rng = np.random.default_rng(7)
    games = 12 if belief == "particles" else 40
    seen_sizes: set[int] = set()
    seen_pending: set[int] = set()
    seen_tops: set[str] = set()
    for seed in range(games):
        obs, info = env.reset(seed=seed)
        done = False
        for _ in capped():
            assert obs.shape == (BASE + (BELIEF if belief != "none" else 0),)
            check_against_info(obs, info)
            if belief != "none":
                check_belief(obs, info)
            seen_sizes.add(info["opponent_hand_size"])
            seen_pending.add(info["pending_draw"])
            seen_tops.add(info["top"])
            if done:
                break
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    # The games went through the interesting cases, so the checks above were exercised on them.
    assert {1, 6, 7, 8} <= seen_sizes
    if belief != "particles":
        assert {0, 2, 4} <= seen_pending and {"wild", "wild_draw4"} <= seen_tops


def test_dict_observation_holds_the_same_channels():
    flat_env, dict_env = UnoEnv(opponent="rule"), UnoEnv(opponent="rule", dict_obs=True)
    flat, _ = flat_env.reset(seed=3)
    named, _ = dict_env.reset(seed=3)
    assert list(named) == [name for name, _ in LAYOUT]
    for name, channel in decode(flat).items():
        assert np.array_equal(named[name], channel), name


def test_the_kernel_state_encoding_equals_the_view_encoding_in_long_random_play():
    """encode_state_into (compiled playouts' observations) gives encode_base's vector at every decision."""
    rng = np.random.default_rng(5)
    legal, out = np.empty(61, dtype=np.int64), np.empty(BASE, dtype=np.float32)
    compared = pending = reshuffled = 0
    for seed in range(150):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in capped():
            if game.done:
                break
            state = core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                    game.pending_draw)
            encode_state_into(state, legal, core.legal_actions_into(state, legal), out)
            assert (out == encode_base(game.observe(game.current))).all()
            compared += 1
            pending += game.pending_draw > 0
            actions = game.legal_actions()
            game.step(actions[rng.integers(len(actions))])
        reshuffled += any(event[0] == RESHUFFLE for event in game.events)
    assert compared > 3000 and pending > 50 and reshuffled >= 3
