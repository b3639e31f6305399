"""The compiled rules core (uno_env/core.py) against RULES.md, the engine and the rule player's documentation.

* Long random play: at every decision the kernel's legal actions equal the rules (restated in uno_testlib),
  and after every action the kernel's state equals the engine's (the deck order only differs after a
  reshuffle, which each side draws from its own generator: there the deck must hold the same cards).
* Reshuffle and the draw-impossible end from RULES.md scenarios.
* Compiled playouts conserve the 108 cards, end, and replay for a seed; the compiled rule player plays the
  rule player's moves, which are checked against the scoring RulePolicy's docstring states.
* The search player with compiled rollouts is reproducible for a seed and keeps common random numbers.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from uno_testlib import capped, legal_by_rules, scenario

from agents.search import SearchPolicy, _Worlds
from agents.search_kernels import reward_of
from uno_env import core
from uno_env.cards import CARD_NAMES, COLOURS, COPIES
from uno_env.game import Game
from uno_env.opponents import RulePolicy
from uno_env.view import RESHUFFLE


def packed(game: Game) -> np.ndarray:
    return core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                           game.pending_draw, game.outcome)


def kernel_legal(state: np.ndarray) -> list[int]:
    out = np.empty(61, dtype=np.int64)
    return out[:core.legal_actions_into(state, out)].tolist()


def cards_conserved(state: np.ndarray) -> bool:
    """Hands, deck and discard pile hold the 108 cards, and the stored sizes and counts agree with them."""
    hands = state[core.HANDS:core.HANDS + 108].reshape(2, 54)
    deck = state[core.DECK:core.DECK + state[core.DECK_LEN]]
    discard = state[core.DISCARD:core.DISCARD + state[core.DISCARD_LEN]]
    total = hands.sum(axis=0) + np.bincount(deck, minlength=54) + np.bincount(discard, minlength=54)
    return (total.tolist() == list(COPIES)
            and hands.sum(axis=1).tolist() == state[core.HAND_SIZES:core.HAND_SIZES + 2].tolist()
            and np.bincount(discard, minlength=54).tolist() == state[core.COUNTS:core.COUNTS + 54].tolist())


def live(state: np.ndarray) -> np.ndarray:
    """The state with the slots past the deck's and the pile's ends zeroed: the kernels leave old cards there."""
    out = state.copy()
    out[core.DECK + out[core.DECK_LEN]:core.DISCARD] = 0
    out[core.DISCARD + out[core.DISCARD_LEN]:core.COUNTS] = 0
    return out


def after_reshuffle(state: np.ndarray, seat: int) -> tuple[list[int], list[int]]:
    """What two sides that shuffled differently must still agree on after ``seat`` drew through a reshuffle:
    the live state without ``seat``'s hand and the deck, and the cards of that hand and the deck together."""
    out = live(state)
    hand = slice(core.HANDS + 54 * seat, core.HANDS + 54 * (seat + 1))
    pool = out[hand] + np.bincount(out[core.DECK:core.DECK + out[core.DECK_LEN]], minlength=54)
    out[hand] = 0
    out[core.DECK:core.DISCARD] = 0
    return out.tolist(), pool.tolist()


@pytest.mark.parametrize("chunk", range(4))
def test_kernels_follow_the_rules_and_the_engine_on_long_random_play(chunk):
    reshuffles = 0
    for seed in range(chunk * 100, chunk * 100 + 100):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        stream = core.seed_stream(seed)
        for _ in capped():
            if game.done:
                break
            state = packed(game)
            seat = game.current
            hand = [CARD_NAMES[c] for c in range(54) for _ in range(game.hands[seat][c])]
            expected = legal_by_rules(hand, CARD_NAMES[game.top], COLOURS[game.active_colour], game.pending_draw)
            legal = kernel_legal(state)
            assert legal == sorted(expected)
            action = legal[int(rng.integers(len(legal)))]
            events = len(game.events)
            game.step(action)
            core.apply_action(state, action, stream)
            assert cards_conserved(state)
            if any(event[0] == RESHUFFLE for event in game.events[events:]):
                reshuffles += 1
                assert after_reshuffle(state, seat) == after_reshuffle(packed(game), seat)
            else:
                assert (live(state) == packed(game)).all()
        assert kernel_legal(packed(game)) == []
    assert reshuffles > 0  # the comparison covered the reshuffle step


@pytest.mark.parametrize(("agent_cards", "winner"), [(52, 0), (54, 1), (53, core.DRAWN)])
def test_draw_impossible_ends_the_game_with_the_smaller_hand_winning(agent_cards, winner):
    # RULES.md: a +4 to draw, an empty deck and one card under the top card: after the reshuffle the deck holds
    # 1 card, fewer than 4, so the game ends at once and the smaller hand wins (equal hands: a draw).
    names = [n for n in CARD_NAMES[:52] for _ in range(COPIES[CARD_NAMES.index(n)])] + ["wild"] * 4
    agent, opponent = names[:agent_cards], names[agent_cards:103] + ["wild_draw4"] * 3
    pos = scenario(agent, opponent, [names[103], "wild_draw4"], to_move="agent", pending_draw=4,
                   active_colour="red")
    state = packed(Game.from_scenario(pos, np.random.default_rng(0)))
    core.apply_action(state, 60, core.seed_stream(0))
    assert state[core.OUTCOME] == winner and kernel_legal(state) == []
    assert state[core.HAND_SIZES:core.HAND_SIZES + 2].tolist() == [agent_cards, 106 - agent_cards]
    assert state[core.DECK_LEN] == 1 and state[core.DISCARD_LEN] == 1 and cards_conserved(state)


def test_reshuffle_keeps_the_top_card_and_moves_the_rest_of_the_pile_into_the_deck():
    # Every other card lies under the top card yellow:4; the deck is empty and red:1 is not playable: draw.
    pos = scenario(["red:1"], ["green:1"], ["yellow:4"], rest="discard", to_move="agent")
    game = Game.from_scenario(pos, np.random.default_rng(0))
    state = packed(game)
    assert kernel_legal(state) == [60] and state[core.DECK_LEN] == 0
    core.apply_action(state, 60, core.seed_stream(3))
    discard = state[core.DISCARD:core.DISCARD + state[core.DISCARD_LEN]].tolist()
    assert [CARD_NAMES[c] for c in discard] == ["yellow:4"]
    assert state[core.DECK_LEN] == 108 - 2 - 1 - 1 and state[core.HAND_SIZES] == 2 and cards_conserved(state)


def reference_rule_choice(hand: list[int], opponent_cards: int, legal: list[int]) -> int:
    """RulePolicy's docstring as code: wilds -5, +4 -4; +1 per other card of the colour left in force; skip,
    reverse, +2 +2; with the opponent at 2 cards or fewer attacks +20 (+4: +20 more) and first; coloured cards
    before wilds; ties to the lowest id."""
    def key(action: int) -> tuple[int, int]:
        colour, rank = divmod(action, 15)
        held = sum(hand[colour * 13:(colour + 1) * 13]) - (rank < 13)
        danger = opponent_cards <= 2
        if rank == 13:
            return 0, held - 5
        if rank == 14:
            return (2, held - 4 + 40) if danger else (0, held - 4)
        if rank in (10, 11, 12):
            return (2, held + 2 + 18) if danger else (1, held + 2)
        return 1, held
    return max(sorted(legal), key=lambda a: (key(a), -a))


def random_positions(count: int, seed: int):
    """Decision points of random self-play games (with a choice to make), as (game copy state, view)."""
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        game = Game.deal(rng, found % 2)
        while not game.done and found < count:
            legal = game.legal_actions()
            if len(legal) > 1:
                found += 1
                yield game, game.observe(game.current, consume_events=False)
            game.step(legal[int(rng.integers(len(legal)))])


def test_the_rule_player_scores_as_its_documentation_says():
    policy = RulePolicy()
    for _, view in random_positions(3000, 11):
        assert policy.act(view) == reference_rule_choice(view.hand, view.opponent_hand_size, view.legal_actions)


def test_compiled_rule_playout_plays_the_rule_player_on_the_engine():
    # Both seats played by RulePolicy on the engine, and by the kernel's playout: the same moves, hence the same
    # final state, in every game that ends before a reshuffle (after one each side shuffles its own way).
    compared = 0
    policy = RulePolicy()
    for game, _ in random_positions(300, 5):
        state = packed(game)
        replay = Game(game.hands, list(game.deck), list(game.discard), game.active_colour, game.current,
                      game.pending_draw, np.random.default_rng(0))
        for _ in capped():
            if replay.done:
                break
            replay.step(policy.act(replay.observe(replay.current)))
        if any(event[0] == RESHUFFLE for event in replay.events):
            continue
        core.playout(state, core.RULE_POLICY, core.RULE_POLICY, core.seed_stream(0), 3000)
        assert (live(state) == packed(replay)).all()
        compared += 1
    assert compared > 100


def test_playouts_end_conserve_cards_and_replay_for_a_seed():
    outcomes = Counter()
    for seed in range(300):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        policy = seed % 2  # RANDOM_POLICY or RULE_POLICY
        results = []
        for _ in range(2):
            state = packed(game)
            results.append((core.playout(state, policy, policy, core.seed_stream(seed), 3000), state))
        assert results[0][0] == results[1][0] and (results[0][1] == results[1][1]).all()
        outcome, state = results[0]
        assert outcome in (0, 1, core.DRAWN) and cards_conserved(state)
        sizes = state[core.HAND_SIZES:core.HAND_SIZES + 2]
        assert outcome == core.DRAWN or sizes[outcome] <= sizes[1 - outcome]
        outcomes[outcome] += 1
    assert outcomes[0] > 100 and outcomes[1] > 100  # both seats win: the random stream is not stuck


def search_decision(seed: int) -> tuple[int, dict[int, tuple[int, float]]]:
    game = Game.from_scenario(scenario(["red:5", "blue:5", "green:7", "yellow:9", "wild"],
                                       ["yellow:3", "yellow:4", "red:8"], ["green:5"]), np.random.default_rng(0))
    player = SearchPolicy(simulations=300, belief="counting", keep_default_z=None)
    assert player._compiled_rollout == (core.RULE_POLICY, core.RULE_POLICY)
    player.reset(seed)
    player.observe_start(game.observe(0, consume_events=False))
    return player.act(game.observe(0)), player.last_root


def test_search_with_compiled_rollouts_is_reproducible_for_a_seed():
    first, again, other = search_decision(4), search_decision(4), search_decision(5)
    assert first == again
    assert first[1] != other[1]  # the seed matters
    assert sum(visits for visits, _ in first[1].values()) == 300  # every simulation backed up at the root


def compiled_world_rewards(seed: int, action: int, order: range) -> list[float]:
    """Rewards of ``action`` in the worlds of ``order`` (simulated in that order), for a player seeded ``seed``."""
    game = Game.from_scenario(scenario(["red:5", "blue:5", "green:7"], ["yellow:3", "yellow:4", "red:8"],
                                       ["green:5"]), np.random.default_rng(0))
    player = SearchPolicy(simulations=10, belief="counting", rollout="random")
    player.reset(seed)
    player.observe_start(game.observe(0, consume_events=False))
    worlds = _Worlds(player, game.observe(0))
    while len(worlds) < len(order):
        worlds.extend()
    return [reward_of(core.simulate(worlds.states[k], action, core.RANDOM_POLICY, core.RANDOM_POLICY,
                                    worlds.seeds[k], 3000)) for k in order]


def test_a_compiled_simulation_depends_only_on_its_world():
    # Common random numbers: world k (hidden hand, deck order and random stream) is fixed by the seed, whatever
    # was simulated before, so every root action meets the same luck in its k-th simulation.
    forward = compiled_world_rewards(1, 5, range(150))
    assert compiled_world_rewards(1, 5, range(149, -1, -1))[::-1] == forward
    assert len(set(forward)) > 1 and set(forward) <= {0.0, 0.5, 1.0}
    assert compiled_world_rewards(2, 5, range(150)) != forward
