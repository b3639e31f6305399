"""Game records and replays: saved, loaded, re-simulated on the engine, refused when damaged; move input."""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from rich.console import Console

from train.cli import evaluate
from train.evaluation.matches import deal_seeds
from train.table import records
from train.table.moves import Move, Reply, parse_colour, parse_move
from train.table.records import GameRecord, load_record, positions, record_match, seed_start, start_scenario
from train.table.replay import replay
from train.table.session import TableGame, expected_opponent_hand
from uno_env.cards import CARD_IDS, COPIES, DRAW_ACTION, card_actions
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Needs
from uno_env.view import PublicView


def test_record_match_is_play_game_plus_a_record_that_replays_every_view(tmp_path):
    reshuffled = 0
    for seed in range(40):
        result, record = record_match((RandomPolicy(), RulePolicy()), seed, seed % 2)
        assert result == play_game((RandomPolicy(), RulePolicy()), seed, seed % 2)
        loaded = load_record(record.save(tmp_path / f"{seed}.json"))
        assert loaded == record
        steps = positions(loaded)
        assert len(steps) == result.decisions + 1
        assert [p.index for p in steps] == list(range(len(steps)))
        reshuffled += any(e["kind"] == "reshuffle" for e in record.events)
        # The last position is the engine's: both hands and the winner as play_game ended them.
        final = steps[-1].views
        assert final[0].outcome is not None and record.winner == {0: "agent", 1: "opponent"}.get(result.winner, "draw")
        assert sum(final[0].hand) + sum(final[1].hand) + final[0].deck_size + final[0].discard_size == 108
    assert reshuffled, "some of these games reshuffle, so reshuffles replay too"


def test_a_record_holds_public_events_and_marks_the_hidden_part(tmp_path):
    _, record = record_match((RandomPolicy(), RulePolicy()), 7, 0, names=["me", "rule"])
    data = json.loads(record.save(tmp_path / "game.json").read_text())
    assert data["format"] == "uno-rl game record" and data["seed"] == 7 and data["players"] == ["me", "rule"]
    assert all("cards" not in event for event in data["events"]), "no draw shows its cards in the public part"
    assert "Hidden from the players" in data["hidden"]["note"]
    assert len(data["hidden"]["drawn"]) == sum(e["kind"] == "draw" for e in data["events"])
    assert len(data["hidden"]["start"]["agent_hand"]) == 7 and len(data["hidden"]["start"]["deck"]) == 93


def test_a_game_that_ends_on_a_draw_the_deck_cannot_supply_replays():
    # An empty deck and a pile of one card: the +2 cannot be supplied, so the game ends on the forced draw
    # (the smaller hand wins), leaving a reshuffle event and no draw event.
    others = [name for name, card in CARD_IDS.items() for _ in range(COPIES[card])]
    for name in ("blue:5", "green:7"):
        others.remove(name)
    scenario = {"agent_hand": others, "opponent_hand": ["blue:5"], "deck": [], "discard": ["green:7"],
                "to_move": "agent", "pending_draw": 0}
    game = Game.from_scenario(scenario, np.random.default_rng(0))
    start = start_scenario(game)
    game.step(card_actions(CARD_IDS["green:draw2"])[0])
    game.step(DRAW_ACTION)
    record = GameRecord.from_game(start, game, None, ["a", "b"])
    assert [e["kind"] for e in record.events] == ["play", "reshuffle"] and record.winner == "opponent"
    steps = positions(GameRecord.from_dict(record.to_dict()))
    assert len(steps) == 3 and steps[-1].action == DRAW_ACTION and steps[-1].views[1].outcome == 0


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d.update(format="other"), "not a game record"),
    (lambda d: d.update(version=9), "unsupported game record version 9"),
    (lambda d: d.update(players=["one"]), "two names"),
    (lambda d: d["events"][0].update(card="blue:9" if d["events"][0]["card"] != "blue:9" else "red:9"),
     "event 1|move 1"),
    (lambda d: d["events"].append({"kind": "teleport"}), "unknown event kind 'teleport'"),
    (lambda d: d["hidden"]["drawn"].pop(), "more draw events than hidden draws"),
    (lambda d: d["hidden"]["start"].update(deck=[]), "not a valid deal"),
    (lambda d: d.update(winner="me"), "\"winner\" must be one of"),
])
def test_a_damaged_record_is_refused_with_the_reason(tmp_path, damage, message):
    _, record = record_match((RulePolicy(), RulePolicy()), 3, 0)
    data = record.to_dict()
    assert data["events"][0]["kind"] == "play"
    damage(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_record(path)


def _flip(winner: str) -> str:
    return {"agent": "opponent", "opponent": "agent", "draw": "agent"}[winner]


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d.update(winner=_flip(d["winner"])), r"the events end the game at event {n} \(.+\) with {won} winning, "
                                                    r"but the record says {lost} winning$"),
    (lambda d: d.update(winner=None), r"the events end the game at event {n} \(.+\) with {won} winning, but the "
                                      r"record says no winner$"),
    (lambda d: d.update(events=d["events"][:-1]), r"the record says {won} winning, but after its last event, "
                                                  r"event {cut} \(.+\), the game goes on: events are missing$"),
    (lambda d: d.update(events=d["events"][:10]), r"\"hidden\".\"drawn\" holds more draws than the 10 events make: "
                                                  r"the events are cut short$"),
])
def test_a_record_its_events_do_not_reproduce_is_refused_naming_the_file_and_the_event(tmp_path, damage, message):
    _, record = record_match((RulePolicy(), RandomPolicy()), 5, 0, names=["rule", "random"])
    data = record.to_dict()
    assert data["winner"] in ("agent", "opponent") and data["events"][-1]["kind"] == "play"
    assert sum(event["kind"] == "draw" for event in data["events"][:10]) < len(data["hidden"]["drawn"])
    won = record.players[("agent", "opponent").index(data["winner"])]
    damage(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    expected = message.format(n=len(record.events), cut=len(record.events) - 1, won=won,
                              lost=({"rule", "random"} - {won}).pop())
    with pytest.raises(ValueError, match=f"^{path}: {expected}"):
        load_record(path)


def test_a_drawn_record_may_stop_before_the_game_ends_only_at_the_decision_limit(monkeypatch):
    table = TableGame([RulePolicy(), RandomPolicy()], ["rule", "random"], 8)
    for _ in range(12):
        table.step_policy()
    assert not table.game.done
    data = {**table.record().to_dict(), "winner": "draw"}  # a harness that stopped the game here
    monkeypatch.setattr(records, "DECISION_LIMIT", 12)
    assert GameRecord.from_dict(data).winner == "draw"
    monkeypatch.setattr(records, "DECISION_LIMIT", 13)
    with pytest.raises(ValueError, match="the record says a draw, but after its last event"):
        GameRecord.from_dict(data)


def test_not_json_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        load_record(path)


def test_uno_evaluate_save_games_writes_one_replayable_record_per_game(tmp_path, capsys):
    status = evaluate.main(["rule", "--opponents", "random", "--pairs", "2", "--workers", "1", "--no-progress",
                            "--save-games", str(tmp_path / "games")])
    assert status == 0
    files = sorted((tmp_path / "games").glob("*.json"))
    assert [f.name for f in files] == [f"rule-vs-random-seed0-pair{i:05d}-{s}.json" for i in range(2) for s in "ab"]
    seeds, firsts = deal_seeds(0, 2)
    for path in files:
        record = load_record(path)
        pair, seats = int(path.stem[-7:-2]), path.stem[-1]
        assert record.seed == seeds[pair] and record.first_player == ("agent", "opponent")[firsts[pair]]
        assert record.players == (("rule", "random") if seats == "a" else ("random", "rule"))
    assert "| rule | random | 4 |" in capsys.readouterr().out


def test_uno_evaluate_save_games_never_replaces_a_record(tmp_path, capsys):
    folder = tmp_path / "games"
    command = ["rule", "--opponents", "random", "--pairs", "1", "--workers", "1", "--no-progress",
               "--save-games", str(folder)]
    for seed in ("3", "4", "4"):
        assert evaluate.main([*command, "--seed", seed]) == 0
    capsys.readouterr()
    names = sorted(path.name for path in folder.iterdir())
    assert names == sorted(f"rule-vs-random-seed{seed}-pair00000-{seats}.json"
                           for seed, seats in (("3", "a"), ("3", "b"), ("4", "a"), ("4", "a-2"), ("4", "b"),
                                               ("4", "b-2")))
    seeds = {path.name: load_record(path).seed for path in folder.iterdir()}
    assert seeds["rule-vs-random-seed3-pair00000-a.json"] == deal_seeds(3, 1)[0][0]
    assert seeds["rule-vs-random-seed4-pair00000-a.json"] == seeds["rule-vs-random-seed4-pair00000-a-2.json"] \
        == deal_seeds(4, 1)[0][0]


def test_a_record_never_replaces_a_file_even_with_writers_racing(tmp_path):
    _, record = record_match((RulePolicy(), RandomPolicy()), 3, 0)
    (tmp_path / "game.json").write_text("someone else's file")
    with ThreadPoolExecutor(8) as pool:
        written = list(pool.map(lambda _: record.save(tmp_path / "game.json"), range(8)))
    assert sorted(path.name for path in written) == sorted(f"game-{k}.json" for k in range(2, 10))
    assert (tmp_path / "game.json").read_text() == "someone else's file"
    assert all(load_record(path).to_dict() == record.to_dict() for path in written)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["game.json", *(p.name for p in written)])


def test_save_games_is_refused_for_a_tournament(capsys, tmp_path):
    with pytest.raises(SystemExit):
        evaluate.main(["--tournament", "rule", "random", "--save-games", str(tmp_path)])
    assert "not of a --tournament" in capsys.readouterr().err


def test_replay_steps_forward_back_and_jumps_with_beliefs():
    _, record = record_match((RulePolicy(), RandomPolicy()), 2, 0, names=["rule", "random"])
    last = len(positions(record)) - 1
    out, prompts = io.StringIO(), []
    answers = ["", "n", "b", "3", "zz", str(last + 5), "e", "n", "s", "b", "q"]

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return answers.pop(0)
    replay(record, show_belief=True, console=Console(file=out, width=140, color_system=None), ask=ask)
    text = out.getvalue()
    assert [p.split("]")[0] for p in prompts] == [f"[{i}/{last}" for i in (0, 1, 2, 1, 3, 3, 3, last, last, 0, 0)]
    assert "Enter or n: next move" in text and f"The game has {last} moves" in text
    assert "That was the last move" in text and "This is the deal, before the first move" in text
    assert "rule's card counting: random's hand" in text and "random's card counting: rule's hand" in text
    assert "(both hands shown" in text


class CountingRule(RulePolicy):
    needs = Needs(belief="counting")


@pytest.mark.parametrize("first_player", [0, 1, None])
def test_a_table_seats_policies_as_play_game_does_and_its_record_seed_redeals_the_game(tmp_path, first_player):
    for seed in range(8):
        table = TableGame([CountingRule(), RandomPolicy()], ["rule", "random"], seed, first_player)
        assert table.seats[0].observer.belief_kind == "counting", "the seat gives a policy what it needs"
        table.advance()
        record = load_record(table.record().save(tmp_path / f"{seed}.json"))
        assert record.first_from_seed == (first_player is None) and seed_start(record) == record.start
        first = 0 if record.first_player == "agent" else 1
        if first_player is not None:  # the same game as play_game's: one seating routine, one seed scheme
            result = play_game((CountingRule(), RandomPolicy()), seed, first)
            assert (result.decisions, {0: "agent", 1: "opponent"}.get(result.winner, "draw")) == \
                   (len(positions(record)) - 1, record.winner)
    _, played = record_match((RulePolicy(), RandomPolicy()), 3, 1)
    assert seed_start(played) == played.start and seed_start(GameRecord(None, ("a", "b"), played.start)) is None


def test_a_person_seat_is_a_seat_without_a_policy():
    table = TableGame([None, RulePolicy()], ["you", "rule"], 4, 1)
    assert table.seats[0].policy is None and table.seats[1].policy is not None
    table.advance()
    assert table.person_to_move() and table.view(0, consume_events=True).events  # the opponent's move, once
    assert not table.view(0, consume_events=True).events
    with pytest.raises(ValueError, match="only a person's seat"):
        table.view(1, consume_events=True)


def test_counting_belief_in_a_view_is_consistent_with_what_the_seat_sees():
    table = TableGame([RulePolicy(), RandomPolicy()], ["a", "b"], 9, 0)
    for _ in range(12):
        table.step_policy()
    view: PublicView = table.view(0)
    expected = expected_opponent_hand(view)
    assert expected.sum() == pytest.approx(view.opponent_hand_size)
    unseen = np.array([COPIES[c] for c in range(54)]) - np.array(view.hand) - np.array(view.discard)
    assert np.all(expected[unseen == 0] == 0), "no card the seat can see all copies of"


@pytest.mark.parametrize(("text", "card", "colour"), [
    ("r7", "red:7", None), ("red 7", "red:7", None), ("Red:7", "red:7", None), ("yelow 7", "yellow:7", None),
    ("gren 5", "green:5", None), ("g skip", "green:skip", None), ("green rev", "green:reverse", None),
    ("g+2", "green:draw2", None), ("green draw two", "green:draw2", None), ("wild blue", "wild", 2),
    ("w b", "wild", 2), ("+4 red", "wild_draw4", 0), ("wild draw4", "wild_draw4", None), ("wild", "wild", None),
])
def test_card_names_are_read_with_forgiving_spelling(text, card, colour):
    view = _view(["red:7", "yellow:7", "green:5", "green:skip", "green:reverse", "green:draw2", "wild", "wild_draw4"])
    move = parse_move(text, view)
    assert isinstance(move, Move), move
    if colour is None and card.startswith("wild"):
        assert move.action is None and move.card == CARD_IDS[card]  # the colour is still to be asked
    else:
        expected = card_actions(CARD_IDS[card])
        assert move.action == (expected[colour] if colour is not None else expected[0])


@pytest.mark.parametrize(("text", "reply"), [
    ("red 3", "You have no red:3"), ("9", "There is no move 9"), ("draw", "you must play one"),
    ("purple", "I do not know 'purple'"), ("7", "There is no move 7"), ("skip", "Which colour?"),
    ("wild 7", "A wild has no number"),
])
def test_moves_that_are_not_legal_get_a_plain_answer(text, reply):
    move = parse_move(text, _view(["red:7", "blue:skip", "wild"]))
    assert isinstance(move, Reply) and reply in move.message


def test_a_card_that_does_not_fit_and_the_colour_prompt():
    view = _view(["red:7", "blue:3"])  # top card green:7: blue:3 does not fit
    assert "does not fit" in parse_move("b3", view).message
    assert [parse_colour(t) for t in ("r", "GREEN", "blu", "yelow", "3", "purple", "")] == [0, 1, 2, 3, 2, None, None]


def _view(hand: list[str]) -> PublicView:
    """A view of seat 0 to move holding ``hand``, the top card green:7."""
    counts = [0] * 54
    for name in hand:
        counts[CARD_IDS[name]] += 1
    game = Game([counts, [0] * 53 + [1]], [], [CARD_IDS["green:7"]], 1, 0, 0, np.random.default_rng(0))
    return game.observe(0)
