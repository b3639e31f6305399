"""Positions for the compiled-network tests (tests/test_guided_search.py, tests/test_world_critic.py): every decision of
seeded random games, as the game, its packed state and the seat to move's view."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from uno_testlib import capped

from uno_env import core
from uno_env.game import Game
from uno_env.observation import SeatObserver
from uno_env.opponents import RandomPolicy
from uno_env.view import PublicView


def decisions(games: int) -> Iterator[tuple[Game, np.ndarray, PublicView]]:
    """(game, packed state, view of the seat to move) at every decision of ``games`` random games (deal ``seed``
    from seed 0 on, the first player alternating), before the move is played."""
    observer, player = SeatObserver(), RandomPolicy()
    player.reset(0)
    for seed in range(games):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in capped():
            if game.done:
                break
            view = observer.observe(game, game.current)
            yield game, core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                        game.pending_draw), view
            game.step(player.act(view))
