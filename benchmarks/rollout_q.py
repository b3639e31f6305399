"""One step of policy improvement over the rule player, distilled into a network (docs/RESULTS.md).

    python benchmarks/rollout_q.py --games 6000 --deck-orders 4 --workers 2 --out runs/rollout-q

Rollout algorithms (Bertsekas; Tesauro's backgammon rollouts) improve a base policy by playing every legal
move and continuing with the base policy; acting on the best estimated value is at least as good as the base
policy. Here the base policy is ``rule`` on both seats, and the values are learned, not searched at play time:

1. **Labels.** ``rule`` plays ``rule``; at every decision of the recorded seat with a choice, each legal move is
   tried on copies of the *true* game (the opponent's real hand), continued by ``rule`` on both seats to the end.
   The deck's order is unknown to both players, so each move is scored on ``--deck-orders`` orders: the real one
   and reshuffles of it, the same orders for every move (common random numbers). The label of a move is its mean
   outcome (+1 win, -1 loss). The hidden hand is used for labels only, as a privileged critic uses it in
   training: since real play dealt it, it is a draw from the posterior given the public position, so a
   regression on the public observation learns the move values a player who sees only that position faces.
2. **Fit.** A MaskablePPO network's actor outputs (its logits) are fitted to the labels (scaled by
   ``SCALE``), squared error on the legal moves; 10% of the positions are held out.
3. **Play.** The network is evaluated as a greedy player (a saved checkpoint, argmax of its logits) and as a
   *conservative* one: ``rule``'s move unless the network values another move more than ``--margin`` above it.

The first value at play time is one estimate per move, so a network error anywhere changes the move; the
conservative player changes ``rule``'s move only where the estimated gain is large.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import PPOPolicy, save_model
from train.evaluation.matches import evaluate, format_table
from uno_env.cards import NUM_ACTIONS
from uno_env.core import RULE_POLICY, pack_state, simulate
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import Needs
from uno_env.view import PublicView

#: Label scale in the logits: a move worth 0.1 more than another gets a logit 1 higher.
SCALE = 10.0
_RULE = RulePolicy()
_MAX_ROLLOUT_ACTIONS = 5_000


def move_values(game: Game, deck_orders: int, rng: np.random.Generator) -> np.ndarray:
    """Mean outcome for the seat to move of each legal move, continued by ``rule`` on both seats (NaN: illegal).

    The playouts are the compiled ones of the search player (:func:`uno_env.core.simulate`).
    """
    seat = game.current
    decks = [game.deck] + [rng.permutation(game.deck) for _ in range(deck_orders - 1)]
    states = [pack_state(game.hands, deck, game.discard, game.active_colour, seat, game.pending_draw)
              for deck in decks]
    seeds = rng.integers(2**63, size=deck_orders).astype(np.uint64)
    values = np.full(NUM_ACTIONS, np.nan)
    for action in game.legal_actions():
        outcomes = [simulate(state, action, RULE_POLICY, seed, _MAX_ROLLOUT_ACTIONS)
                    for state, seed in zip(states, seeds, strict=True)]
        # +1 a win, -1 a loss, 0 a draw or a playout cut at the action cap
        values[action] = np.mean([(outcome == seat) - (outcome == 1 - seat) for outcome in outcomes])
    return values


class _Labeller:
    """Plays ``rule`` on its seat and records (observation, move values, rule's move) at each decision with a choice."""

    def __init__(self, deck_orders: int, belief: str) -> None:
        self.needs = Needs(belief)  # the observations recorded carry these belief features
        self.deck_orders = deck_orders
        self.game: Game | None = None
        self.rng = np.random.default_rng()
        self.records: list[tuple[np.ndarray, np.ndarray, int]] = []

    def deal(self, game: Game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, view: PublicView) -> int:
        move = _RULE.act(view)
        if len(view.legal_actions) > 1:
            values = move_values(self.game, self.deck_orders, self.rng)
            self.records.append((np.asarray(view.observation, np.float32), values.astype(np.float32), move))
        return move


def collect(games: int, seed: int, deck_orders: int, belief: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, move values and rule's moves from ``games`` games against ``rule``, seats alternating."""
    labeller = _Labeller(deck_orders, belief)
    rng = np.random.default_rng(seed)
    for game in range(games):
        seats = (labeller, RulePolicy()) if game % 2 == 0 else (RulePolicy(), labeller)
        play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)), on_deal=labeller.deal)
    observations, values, moves = zip(*labeller.records, strict=True)
    return np.array(observations), np.array(values), np.array(moves)


def fit(observations: np.ndarray, values: np.ndarray, rule_moves: torch.Tensor, epochs: int, seed: int,
        rule_bonus: float = 0.0, belief: str = "none") -> tuple[MaskablePPO, dict]:
    """A MaskablePPO network (256x256 tanh, ``belief`` features) whose logits regress ``SCALE`` x the values.

    ``rule_bonus`` is added to the value of rule's move in the targets, so the network alone plays as the
    conservative player does (:class:`ConservativePlayer` with that margin), as one checkpoint.

    Metrics on the held-out positions: the squared error, and the mean label of the network's move and of
    rule's move (the one-step gain the network finds, if the first is larger).
    """
    model = MaskablePPO("MlpPolicy", UnoEnv(belief=belief), seed=seed, device="cpu",
                        policy_kwargs={"net_arch": [256, 256], "activation_fn": torch.nn.Tanh})
    policy = model.policy
    legal = torch.from_numpy(np.isfinite(values))
    targets = torch.from_numpy(np.nan_to_num(values).astype(np.float32) * SCALE)
    bonus = torch.zeros_like(targets)
    bonus[torch.arange(len(bonus)), rule_moves] = rule_bonus * SCALE
    inputs = torch.from_numpy(observations)
    order = np.random.default_rng(seed).permutation(len(inputs))
    held, train = torch.from_numpy(order[:len(order) // 10]), torch.from_numpy(order[len(order) // 10:])
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)

    def logits(rows: torch.Tensor) -> torch.Tensor:
        return policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(inputs[rows])))

    def loss(rows: torch.Tensor) -> torch.Tensor:
        return ((logits(rows) - targets[rows] - bonus[rows]) ** 2)[legal[rows]].mean() / SCALE**2

    policy.train()
    for _ in range(epochs):
        shuffled = train[torch.randperm(len(train), generator=generator)]
        for start in range(0, len(shuffled), 512):
            batch_loss = loss(shuffled[start:start + 512])
            optimizer.zero_grad()
            batch_loss.backward()
            optimizer.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        chosen = logits(held).masked_fill(~legal[held], -torch.inf).argmax(dim=1)
        metrics = {"held_out_loss": float(loss(held)),
                   "held_out_value_of_network_move": float(targets[held, chosen].mean() / SCALE),
                   "held_out_value_of_rule_move": float(targets[held, rule_moves[held]].mean() / SCALE)}
    return model, metrics


class ConservativePlayer:
    """``rule``'s move unless the network values another legal move more than ``margin`` above it."""

    def __init__(self, network: PPOPolicy, margin: float) -> None:
        self.network = network
        self.needs = network.needs
        self.margin = margin

    def reset(self, seed: int | None = None) -> None:
        self.network.reset(seed)

    def act(self, view: PublicView) -> int:
        move = _RULE.act(view)
        if len(view.legal_actions) == 1:
            return move
        values = self.network.action_logits(view) / SCALE
        best = int(np.argmax(values))
        return best if values[best] - values[move] > self.margin else move


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6000, help="labelled games per worker")
    parser.add_argument("--deck-orders", type=int, default=4)
    parser.add_argument("--belief", choices=("none", "counting"), default="none", help="the network's belief features")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--margins", type=float, nargs="+", default=[0.1, 0.2])
    parser.add_argument("--rule-bonus", type=float, default=0.0, help="added to rule's move in the targets")
    parser.add_argument("--pairs", type=int, default=500, help="deal pairs per evaluation (seed 12346)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--labels", type=Path, help="the labels file to use or write (default: OUT/labels.npz)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    labels = args.labels or args.out / "labels.npz"
    started = time.perf_counter()
    if not labels.exists():  # labelling is the slow part: a rerun reuses it
        with ProcessPoolExecutor(args.workers) as pool:
            seeds = [args.seed + w for w in range(args.workers)]
            parts = list(pool.map(collect, [args.games] * args.workers, seeds, [args.deck_orders] * args.workers,
                                  [args.belief] * args.workers))
        arrays = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
        np.savez_compressed(labels, **dict(zip(("observations", "values", "rule_moves"), arrays, strict=True)))
    data = np.load(labels)
    label_seconds = time.perf_counter() - started
    model, metrics = fit(data["observations"], data["values"], torch.from_numpy(data["rule_moves"]), args.epochs,
                         args.seed, args.rule_bonus,
                         args.belief)
    checkpoint = save_model(model, args.out / "q-network.zip", {"belief": args.belief, "config": "rollout-q",
                                                                        "steps": 0})
    network = PPOPolicy.load(checkpoint)
    report = {"positions": len(data["values"]), "labels": int(np.isfinite(data["values"]).sum()),
              "label_seconds": round(label_seconds, 1),
              **metrics, "evaluations": {}}
    players = {"greedy": network, **{f"conservative {m}": ConservativePlayer(network, m) for m in args.margins}}
    for name, player in players.items():
        results = evaluate(player, ["rule", "random"], args.pairs, 12346, workers=args.workers)
        report["evaluations"][name] = [r.to_dict() for r in results]
        print(f"{name}:\n{format_table(results)}\n", flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "evaluations"}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
