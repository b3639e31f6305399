"""The seat module (uno_env/seat.py): one seed derivation for every harness, the seat's needs and legality."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from uno_testlib import ScriptedPolicy, capped

from uno_env import seat as seat_module
from uno_env.env import UnoEnv
from uno_env.game import IllegalActionError
from uno_env.match import play_game
from uno_env.multiagent import UnoAECEnv
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Needs
from uno_env.seat import Seat, deal_game, game_seeds, start_game

BELIEFS = ("none", "counting", "particles")


def env_game(belief: str, seed: int) -> list[str]:
    """The public infos of one UnoEnv game with random legal actions from ``seed``."""
    env = UnoEnv(belief=belief, n_particles=16)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    infos = [repr(info)]
    for _ in capped():
        _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        infos.append(repr(info))
        if terminated:
            return infos
    return infos


def aec_game(belief: str, seed: int) -> list[str]:
    """The public infos of one PettingZoo game (both seats tracking with ``belief``), random legal actions."""
    aec = UnoAECEnv(belief=belief, n_particles=16)
    rng = np.random.default_rng(seed)
    aec.reset(seed=seed)
    infos = []
    for agent in aec.agent_iter():
        obs, _, terminated, truncated, info = aec.last()
        infos.append(f"{agent} {info!r}")
        aec.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return infos


# The last seed of each list plays a long game, long enough to reshuffle the discard pile (random play
# reshuffles in about one game in 40): the trackers draw while the deck is rebuilt, the case that once differed.
@pytest.mark.parametrize(("play", "seeds"), [(env_game, (0, 1, 10)), (aec_game, (0, 1, 37))],
                         ids=["UnoEnv", "PettingZoo"])
def test_same_seed_plays_the_same_game_with_every_belief_setting(play: Any, seeds: tuple[int, ...]):
    reshuffled = False
    for seed in seeds:
        games = [play(belief, seed) for belief in BELIEFS]
        assert games[0] == games[1] == games[2], f"seed {seed}: the belief setting changed the game"
        reshuffled |= any("'reshuffle'" in info for info in games[0])
    assert reshuffled, "no game reshuffled: the check would not cover reshuffles"


def test_game_seeds_are_a_function_of_the_seed():
    a, b, other = game_seeds(5), game_seeds(5), game_seeds(6)
    assert a.seats == b.seats != other.seats
    assert a.deal.integers(2**62) == b.deal.integers(2**62) and a.reshuffle.random() == b.reshuffle.random()


def test_the_deal_and_reshuffle_streams_are_the_spawned_children():
    """The deal and reshuffle generators, seeded by uno_env.seeding (for speed), are
    SeedSequence(seed).spawn(3)'s first and second children's generators draw for draw, also across a pickle."""
    for seed in (0, 7, 2**40):
        children = np.random.SeedSequence(seed).spawn(3)
        seeds = game_seeds(seed)
        assert seeds.deal.integers(2**62) == np.random.default_rng(children[0]).integers(2**62)
        child = np.random.default_rng(children[1])
        deck = list(range(40))
        seeds.reshuffle.shuffle(deck)
        expected = list(range(40))
        child.shuffle(expected)
        assert deck == expected
        copy = pickle.loads(pickle.dumps(seeds.reshuffle))
        assert copy.random() == seeds.reshuffle.random() == child.random(), "a pickle keeps the stream's position"


def test_start_game_resets_each_policy_from_its_seat_seed():
    seen: list[int | None] = []

    class Remembers(RandomPolicy):
        def reset(self, seed: int | None = None) -> None:
            seen.append(seed)
            super().reset(seed)

    seats = [Seat(0, Remembers()), Seat(1, Remembers())]
    game = start_game(seats, 3, first_player=1)
    assert seen == list(game_seeds(3).seats) and game.current == 1


def test_the_seats_seeds_are_the_third_spawned_childs_draws():
    """The seats' seeds, derived only when read and from the bit generator's words (for speed), are the
    integers(0, 2**62, size=2) of SeedSequence(seed).spawn(3)'s third child, as when game_seeds drew them at once."""
    for seed in [*range(300), 2**40, 2**62 - 1]:
        child = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
        assert game_seeds(seed).seats == tuple(int(s) for s in child.integers(0, 2**62, size=2)), seed


def test_seat_seeds_are_derived_only_for_a_seat_that_reads_its_seed(monkeypatch):
    """A learner's seat without a tracker and the rule player read no seed: start_game derives none, and resets the
    rule player with None; a random player or a tracker reads its seat's seed."""
    derived: list[int] = []
    real = seat_module.GameSeeds.seats
    monkeypatch.setattr(seat_module.GameSeeds, "seats", property(lambda seeds: derived.append(seeds.seed)
                                                                 or real.fget(seeds)))
    reset_with: list[int | None] = []
    monkeypatch.setattr(RulePolicy, "reset", lambda self, seed=None: reset_with.append(seed))
    assert not Seat(0).reads_seed and not Seat(1, RulePolicy()).reads_seed
    start_game([Seat(0), Seat(1, RulePolicy())], 3)
    assert derived == [] and reset_with == [None]

    class SubclassedRule(RulePolicy):  # not the class named compiled_player "rule": it may draw, so it reads its seed
        pass

    for seats in ([Seat(0, belief="counting"), Seat(1, RulePolicy())], [Seat(0), Seat(1, RandomPolicy())],
                  [Seat(0), Seat(1, SubclassedRule())]):
        derived.clear()
        reset_with.clear()
        start_game(seats, 3)
        assert derived == [3], "one derivation, for the seat that reads it"
    assert reset_with == [game_seeds(3).seats[1]], "the subclass got its seat's seed"
    game = start_game([Seat(0, RulePolicy()), Seat(1, RandomPolicy())], 3)
    assert reset_with[-1] is None and game.current in (0, 1), "the rule player gets None beside a seat that reads"


@pytest.mark.parametrize("first_player", [0, 1, None])
def test_deal_game_is_the_deal_start_game_makes(first_player):
    for seed in (0, 5, 2**40):
        dealt, started = deal_game(seed, first_player), start_game([Seat(0), Seat(1)], seed, first_player)
        assert (dealt.hands, dealt.deck, dealt.discard, dealt.current) == \
               (started.hands, started.deck, started.discard, started.current)
        assert dealt.rng.random() == started.rng.random(), "the same reshuffle stream"
    assert {deal_game(seed).current for seed in range(20)} == {0, 1}, "None draws the first player"


def test_a_seat_builds_the_observer_its_policy_needs():
    class Counting(RandomPolicy):
        needs = Needs(belief="particles", n_particles=7)

    seat = Seat(0, Counting(), n_particles=1000)
    assert seat.observer.belief_kind == "particles" and seat.observer.n_particles == 7
    assert Seat(0, RandomPolicy(), n_particles=9).observer.belief_kind == "none"
    assert Seat(1, belief="counting").observer.belief_kind == "counting"


def test_needs_are_checked():
    with pytest.raises(ValueError, match="belief"):
        Needs(belief="particle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_particles"):
        Needs(belief="particles", n_particles=0)


def test_an_illegal_action_names_the_policy_and_its_seat():
    with pytest.raises(IllegalActionError, match="ScriptedPolicy on seat 0"):
        play_game((ScriptedPolicy([59]), RandomPolicy()), seed=0)
