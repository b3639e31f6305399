"""Long random play: conservation of cards, masks equal to the rules, no crash, sane statistics.

The engine fuzz plays 10,000 random self-play games (in chunks, so ``pytest -n`` can spread them)
and re-derives the legal actions at every decision from the hand, the top card, the colour in force
and the pending draw, independently of the engine's own tables.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from uno_testlib import capped, legal_by_rules

from uno_env.cards import COPIES, card_id
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.observation import BASE_CHANNELS

GAMES_PER_CHUNK = 2500
CHUNKS = 4


def rule_legal(hand: list[int], top: int, colour: int, pending: int) -> list[int]:
    """Legal action ids from counts, restating RULES.md with card type = colour*13 + rank, wilds 52/53."""
    if pending:
        return [60]
    top_rank = top % 13 if top < 52 else -1
    out = [(t // 13) * 15 + t % 13 for t in range(52) if hand[t] and (t // 13 == colour or t % 13 == top_rank)]
    for wild, rank in ((52, 13), (53, 14)):
        if hand[wild]:
            out += [c * 15 + rank for c in range(4)]
    return sorted(out) or [60]


def play_random_game(seed: int, full_check: bool) -> tuple[int, int]:
    """One random self-play game with per-decision checks; returns (outcome, decisions)."""
    rng = np.random.default_rng(seed)
    game = Game.deal(rng, seed % 2)
    decisions = 0
    for _ in capped():
        if game.done:
            break
        seat = game.current
        legal = game.legal_actions()
        assert legal == rule_legal(game.hands[seat], game.discard[-1], game.active_colour, game.pending_draw)
        if full_check:
            assert [a for a in range(61) if game.is_legal(a)] == legal
            assert game.observe(seat).action_mask.nonzero()[0].tolist() == legal
            assert game.hand_sizes == [sum(h) for h in game.hands]
        game.step(legal[int(rng.integers(len(legal)))])
        decisions += 1
        assert game.hand_sizes[0] + game.hand_sizes[1] + len(game.deck) + len(game.discard) == 108
        assert decisions < 3000, "a random game this long means the game does not progress"
    assert game.legal_actions() == []
    held = Counter(game.deck) + Counter(game.discard)
    for card in range(54):
        assert held[card] + game.hands[0][card] + game.hands[1][card] == COPIES[card]
    assert game.discard_counts == [game.discard.count(card) for card in range(54)]
    return game.outcome, decisions


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_engine_random_self_play(chunk):
    outcomes, lengths = [], []
    for i in range(GAMES_PER_CHUNK):
        seed = chunk * GAMES_PER_CHUNK + i
        outcome, decisions = play_random_game(seed, full_check=seed % 25 == 0)
        outcomes.append(outcome)
        lengths.append(decisions)
    outcomes = np.array(outcomes)
    # Seats alternate first move; each seat should win about half (RULES.md statistics), wide bounds.
    assert 0.44 < np.mean(outcomes == 0) < 0.56
    assert np.mean(outcomes == -1) < 0.02
    assert 60 < np.mean(lengths) < 80 and 45 <= np.median(lengths) <= 65


def test_same_seed_same_game():
    def trace(seed: int) -> list:
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, 0)
        out = []
        for _ in capped():
            if game.done:
                break
            legal = game.legal_actions()
            game.step(legal[int(rng.integers(len(legal)))])
            out.append((legal, game.observe(0).events, game.observe(1).events))
        return out

    assert trace(17) == trace(17)
    assert trace(17) != trace(18)


def channel(obs: np.ndarray, name: str) -> np.ndarray:
    """One named channel of a flat observation (layout in uno_env.observation)."""
    start = 0
    for channel_name, size, _ in BASE_CHANNELS:
        if channel_name == name:
            return obs[start:start + size]
        start += size
    raise KeyError(name)


@pytest.mark.parametrize("opponent", ["random", "rule"])
def test_env_random_play(opponent):
    env = UnoEnv(opponent=opponent)
    rng = np.random.default_rng(2)
    results = Counter()
    for seed in range(150):
        obs, info = env.reset(seed=seed)
        terminated = "winner" in info
        steps = 0
        for _ in capped():
            assert obs in env.observation_space
            mask = info["action_mask"]
            assert np.array_equal(channel(obs, "legal"), mask)
            assert np.array_equal(env.action_masks(), mask.astype(bool))
            assert np.array_equal(channel(obs, "hand"), np.bincount([card_id(n) for n in info["hand"]], minlength=54))
            if terminated:
                break
            assert set(np.flatnonzero(mask)) == legal_by_rules(info["hand"], info["top"], info["active_colour"],
                                                               info["pending_draw"])
            obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
            assert not truncated and isinstance(reward, float) and isinstance(terminated, bool)
            assert reward == ({"agent": 1.0, "opponent": -1.0, "draw": 0.0}[info["winner"]] if terminated else 0.0)
        results[info["winner"]] += 1
        assert steps < 1000
    if opponent == "random":
        assert 45 < results["agent"] < 105
    else:
        assert results["opponent"] > results["agent"], "the rule opponent beats a random agent"
