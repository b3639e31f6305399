"""Label quality against labelling speed: several search settings label the very same positions, side by side.

    python benchmarks/label_quality.py --base runs/ei/pretrain/round_4.zip --games 60 --seed 5 \
        --reference sims=8000 --candidates sims=800 sims=200,leaf=0 sims=200,leaf=2 sims=100,leaf=0

The base player (``rule``, ``random`` or a belief-``none`` checkpoint) plays ``--games`` games against ``rule``, seats
alternating, as a labelling worker does (:func:`train.training.rollout_values.collect`). At each of its decisions
with a choice, the reference search and every candidate search (each with its own belief, following every view)
value the legal moves (:class:`~train.training.rollout_values.SearchLabels`: ``sims=N`` simulations, ``leaf=K``: the
base network's critic scores each simulation after K of the seat's decisions; ``critic=PATH``: another checkpoint's
critic does, the base network still rolling out; ``world=PATH``: a world critic does, :mod:`agents.world_critic`). One
game is played first and not
counted: numba compiles each search's kernels on its first call. Per candidate it prints:

* **positions per second**: on one core, the candidate's own time per labelled position (its belief updates on
  every view included);
* **centred correlation** with the reference: each position's labels minus their mean over the legal moves (a
  label's level does not move a fitted network's choice, its differences between moves do), correlated over all
  moves of all positions;
* **best-move agreement**: how often its best move is the reference's;
* **RMSE** of the centred labels from the reference's.

The reference is a large budget of the same search, so this measures noise plus the bias that the critic's leaves
add, against the values of full rollouts. It cannot tell whether a bias helps a network: the strength of networks
fitted on the labels can (docs/RESULTS.md).
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np
import torch

from agents import world_critic
from agents.compiled_actor import value_params
from agents.ppo import PPOPolicy
from train.training.rollout_values import SEARCH_BELIEFS, BasePlayer, SearchLabels, root_values
from uno_env.cards import NUM_ACTIONS
from uno_env.core import legal_actions_into, pack_state, seed_stream
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.view import PublicView


def parse_setting(text: str, belief: str, base: BasePlayer) -> tuple[SearchLabels, BasePlayer]:
    """``sims=N[,leaf=K][,critic=PATH|world=PATH]`` as search labels and the player whose network they run: ``base``,
    or with ``critic=PATH`` the same actor with the critic of the checkpoint at PATH scoring the leaves (``world=PATH``:
    the world critic at PATH)."""
    fields = dict(part.split("=", 1) for part in text.split(","))
    unknown = set(fields) - {"sims", "leaf", "critic", "world"}
    if unknown or "sims" not in fields or {"critic", "world"} <= set(fields):
        raise SystemExit(f"label_quality: a setting is sims=N[,leaf=K][,critic=PATH|world=PATH], got {text!r}")
    leaf = fields.get("leaf")
    labels = SearchLabels(int(fields["sims"]), belief, leaf_moves=None if leaf is None else int(leaf))
    if "critic" not in fields and "world" not in fields:
        return labels, base
    if base.params is None:
        raise SystemExit(f"label_quality: critic= and world= need a network as the base, got {base.name!r}")
    player = copy.copy(base)
    player.value = (value_params(PPOPolicy.load(fields["critic"])) if "critic" in fields
                    else world_critic.load(fields["world"]).params())
    return labels, player


class SideBySide:
    """Plays the base player's moves; every search labels each decision with a choice, each timed on its own."""

    def __init__(self, base: BasePlayer, settings: list[tuple[SearchLabels, BasePlayer]]) -> None:
        self.base = base
        self.searches = [labels.player(player) for labels, player in settings]
        self.seconds = np.zeros(len(settings))
        self.labels: list[np.ndarray] = []  # per decision: (searches, NUM_ACTIONS)
        self.game: Game | None = None
        self.rng = np.random.default_rng()
        self.stream = seed_stream(0)
        self.legal = np.empty(NUM_ACTIONS, dtype=np.int64)

    def deal(self, game: Game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.stream = seed_stream(int(self.rng.integers(2**63)))
        for search in self.searches:
            search.reset(int(self.rng.integers(2**62)))

    def observe_start(self, view: PublicView) -> None:
        for search in self.searches:
            search.observe_start(view)

    def act(self, view: PublicView) -> int:
        for i, search in enumerate(self.searches):
            started = time.perf_counter()
            search.act(view)
            self.seconds[i] += time.perf_counter() - started
        game = self.game
        state = pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current, game.pending_draw)
        n = legal_actions_into(state, self.legal)
        if n > 1:
            self.labels.append(np.stack([root_values(search) for search in self.searches]))
        return int(self.legal[0]) if n == 1 else self.base.move(state, self.legal, n, self.stream)


def compare(labels: np.ndarray, reference: int) -> list[dict[str, float]]:
    """Each search's labels (axis 1) against the reference's: the module docstring's figures."""
    legal = np.isfinite(labels[:, reference])
    centred = labels - np.nanmean(labels, axis=2, keepdims=True)
    truth = centred[:, reference][legal]
    best = np.nanargmax(labels[:, reference], axis=1)
    rows = []
    for i in range(labels.shape[1]):
        mine = centred[:, i][legal]
        rows.append({"correlation": float(np.corrcoef(mine, truth)[0, 1]),
                     "rmse": float(np.sqrt(np.mean((mine - truth) ** 2))),
                     "agreement": float(np.mean(np.nanargmax(labels[:, i], axis=1) == best))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="rule", help="rule, random or a belief-none checkpoint")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--belief", default="particles", choices=SEARCH_BELIEFS)
    parser.add_argument("--reference", default="sims=8000")
    parser.add_argument("--candidates", nargs="+", default=["sims=800", "sims=200,leaf=0"])
    parser.add_argument("--json", help="also write the table here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = BasePlayer(args.base)
    settings = [parse_setting(text, args.belief, base) for text in [args.reference, *args.candidates]]
    player = SideBySide(base, settings)
    rng = np.random.default_rng(args.seed)
    # One game first, not counted (the module docstring).
    play_game((player, RulePolicy()), int(rng.integers(2**62)), on_deal=player.deal)
    player.seconds[:], player.labels = 0.0, []
    for game in range(args.games):
        seats = (player, RulePolicy()) if game % 2 == 0 else (RulePolicy(), player)
        play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)), on_deal=player.deal)
    labels = np.stack(player.labels)
    positions = len(labels)
    rows = compare(labels, reference=0)
    print(f"base {args.base}, {args.games} games (seed {args.seed}), {positions} positions with a choice; belief "
          f"{args.belief}; reference {args.reference}")
    print("| labels | positions/s (one core) | centred correlation | best-move agreement | centred RMSE |")
    print("| --- | ---: | ---: | ---: | ---: |")
    table = []
    for text, seconds, row in zip([args.reference, *args.candidates], player.seconds, rows, strict=True):
        table.append({"labels": text, "positions_per_second": positions / seconds, **row})
        print(f"| {text} | {positions / seconds:,.0f} | {row['correlation']:.3f} | {row['agreement']:.1%} | "
              f"{row['rmse']:.3f} |")
    # Candidates against the first, on the same moves: the difference of their centred squared errors, with a 95%
    # interval over positions (a position's moves share their labels' noise).
    legal = np.isfinite(labels[:, 0])
    centred = labels - np.nanmean(labels, axis=2, keepdims=True)
    errors = np.where(legal[:, None], (centred - centred[:, :1]) ** 2, 0.0).sum(axis=2)  # (positions, searches)
    moves = legal.sum(axis=1)
    for text, squared in zip(args.candidates[1:], errors[:, 2:].T, strict=True):
        per_position = squared - errors[:, 1]
        mean = per_position.sum() / moves.sum()
        spread = np.sqrt(positions * np.sum((per_position - mean * moves) ** 2) / (positions - 1)) / moves.sum()
        print(f"{text} minus {args.candidates[0]}: centred squared error {mean:+.5f} "
              f"({mean - 1.96 * spread:+.5f} .. {mean + 1.96 * spread:+.5f})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"args": vars(args), "positions": positions, "rows": table}, out, indent=1)


if __name__ == "__main__":
    main()
