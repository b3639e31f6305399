"""Cards, card types, names and the 61-action layout (RULES.md "Cards", "Action encoding", "Card names")."""

from collections import Counter

import pytest
from uno_testlib import COLOUR_ORDER, DRAW, RANK_ORDER, act, deck_names, legal_by_rules

from uno_env import cards
from uno_env.cards import (
    CARD_NAMES,
    COPIES,
    NUM_ACTIONS,
    NUM_CARD_TYPES,
    action_card,
    action_colour,
    action_name,
    card_actions,
    card_colour,
    card_id,
    card_name,
    card_rank,
    colour_id,
    full_deck,
    playable_types,
)


def test_deck_is_the_108_cards_of_the_rules():
    deck = full_deck()
    assert len(deck) == 108 == cards.DECK_SIZE
    assert Counter(card_name(card) for card in deck) == Counter(deck_names())


def test_copies_per_type():
    assert len(COPIES) == NUM_CARD_TYPES == 54
    assert sum(COPIES) == 108
    assert {card_name(card): COPIES[card] for card in range(54)} == dict(Counter(deck_names()))
    per_colour = [sum(COPIES[c * 13:(c + 1) * 13]) for c in range(4)]
    assert per_colour == [25, 25, 25, 25]
    assert COPIES[card_id("wild")] == 4 and COPIES[card_id("wild_draw4")] == 4


def test_card_type_layout_is_colour_times_13_plus_rank():
    for colour, colour_name in enumerate(COLOUR_ORDER):
        for rank in range(13):
            card = card_id(f"{colour_name}:{RANK_ORDER[rank]}")
            assert card == colour * 13 + rank
            assert card_colour(card) == colour and card_rank(card) == rank
    assert card_id("wild") == 52 and card_id("wild_draw4") == 53
    assert card_colour(52) == card_colour(53) == -1
    assert card_rank(52) == 13 and card_rank(53) == 14


def test_names_and_ids_round_trip():
    assert len(CARD_NAMES) == len(set(CARD_NAMES)) == 54
    assert set(CARD_NAMES) == set(deck_names())
    for card in range(54):
        assert card_id(card_name(card)) == card
    for name in deck_names():
        assert card_name(card_id(name)) == name


@pytest.mark.parametrize("name", ["purple:3", "red:10", "Red:7", "red 7", "red:", "wild4", "", None, 7, "red:wild"])
def test_unknown_card_names_raise_value_error(name):
    with pytest.raises(ValueError, match="unknown card name"):
        card_id(name)


@pytest.mark.parametrize("name", ["pink", "Red", "", None, 0])
def test_unknown_colours_raise_value_error(name):
    with pytest.raises(ValueError, match="unknown colour"):
        colour_id(name)
    assert [colour_id(c) for c in COLOUR_ORDER] == [0, 1, 2, 3]


@pytest.mark.parametrize("bad", [-1, 54])
def test_card_name_out_of_range(bad):
    with pytest.raises(ValueError, match="0..53"):
        card_name(bad)


@pytest.mark.parametrize("bad", [-1, 61])
def test_action_name_out_of_range(bad):
    with pytest.raises(ValueError, match="0..60"):
        action_name(bad)


def test_action_layout_is_colour_times_15_plus_rank():
    assert NUM_ACTIONS == 61
    for colour, colour_name in enumerate(COLOUR_ORDER):
        for rank in range(13):
            name = f"{colour_name}:{RANK_ORDER[rank]}"
            action = colour * 15 + rank
            assert act(name) == action
            assert action_card(action) == card_id(name)
            assert action_colour(action) == colour
            assert card_actions(card_id(name)) == (action,)
            assert action_name(action) == f"play {name}"
        for rank, wild in ((13, "wild"), (14, "wild_draw4")):
            action = colour * 15 + rank
            assert act(wild, colour_name) == action
            assert action_card(action) == card_id(wild)
            assert action_colour(action) == colour
            assert action_name(action) == f"play {wild} -> {colour_name}"
    assert action_card(DRAW) == -1 and action_colour(DRAW) == -1 and action_name(DRAW) == "draw"


def test_actions_cover_every_play_exactly_once():
    plays = [(action_card(a), action_colour(a)) for a in range(60)]
    assert len(set(plays)) == 60
    expected = {(card, card_colour(card)) for card in range(52)}
    expected |= {(card, colour) for card in (52, 53) for colour in range(4)}
    assert set(plays) == expected
    for card in (52, 53):
        assert card_actions(card) == tuple(colour * 15 + card_rank(card) for colour in range(4))


# A coloured top card sets the active colour itself; after a wild any colour may be in force.
_TOPS = [(card_colour(top), top) for top in range(52)] + [(colour, top) for top in (52, 53) for colour in range(4)]


@pytest.mark.parametrize(("colour", "top"), _TOPS)
def test_playable_types_follow_the_playability_rule(colour, top):
    playable = {card_name(card) for card in playable_types(colour, card_rank(top))}
    by_rules = {name for name in CARD_NAMES
                if legal_by_rules([name], card_name(top), COLOUR_ORDER[colour], 0) != {DRAW}}
    assert playable == by_rules
