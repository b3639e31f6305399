"""Move values by rollouts from the true position: labels for a step of policy improvement over a base player.

A rollout algorithm (Bertsekas; Tesauro's backgammon rollouts) improves a base policy: play each legal move,
continue with the base policy, keep the move with the best result. Here the values are learned once, by a
network, instead of searched at every move; and the step can be repeated, the network of one step being the
base of the next (approximate policy iteration). ``benchmarks/rollout_q.py`` runs it end to end;
docs/RESULTS.md, "Rollout improvement distilled":

* :func:`move_values`: each legal move of the seat to move, played on copies of the *true* game and continued
  by the base player on that seat and ``rule`` on the other (the compiled playouts of :mod:`uno_env.core`), on
  the real deck order and reshuffles of it, the same orders for every move (common random numbers); a move's
  value is its mean outcome. The hidden hand serves the labels only: real play dealt it, so it is a draw from
  the posterior given the public position, and a regression on the public observation learns the values a
  player who sees only that position faces (as a privileged critic uses hidden state in training, never in
  play).
* :class:`SearchLabels`: the same labels from the search player instead (:mod:`agents.search`), its root values
  over hundreds of hidden hands drawn from its belief rather than the one true hand: far less noisy labels, which
  a larger network turns into a stronger player (docs/RESULTS.md, "Search values distilled").
* :func:`collect`: the base player against ``rule``, recording the observation, the move values and the base
  player's move at every decision with a choice. The base player is ``rule`` (the first step over the rule
  player), ``random`` (policy iteration from scratch) or a checkpoint, compiled into the playouts
  (:mod:`agents.compiled_actor`).
* :func:`fit`: a MaskablePPO network whose logits regress the values (plus an optional bonus on the base
  player's move), so that it plays alone as a deterministic checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from agents.actor_kernels import actor_choice, actor_simulate
from agents.afterstate import AfterstatePolicy
from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from train.evaluation.matches import make_executor
from train.training.opponent_mix import OpponentMix
from uno_env.belief import BeliefKind
from uno_env.cards import NUM_ACTIONS
from uno_env.core import (
    COMPILED_PLAYERS,
    CURRENT,
    RULE_POLICY,
    choose,
    legal_actions_into,
    pack_state,
    seed_stream,
    simulate,
)
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import Needs
from uno_env.view import PublicView

#: The labelling search's beliefs: a tracker of :mod:`uno_env.belief`, or the particle filter told the opponent.
SearchBelief = Literal["counting", "particles", "aware"]
SEARCH_BELIEFS: tuple[str, ...] = get_args(SearchBelief)
#: Label scale in the logits: a move worth 0.1 more than another gets a logit 1 higher.
SCALE = 10.0
_MAX_ROLLOUT_ACTIONS = 5_000
#: The base players built into the kernels (uno_env.core's compiled players), by name: their policy codes; any other
#: base is a checkpoint's path.
BUILT_IN_BASES = {name: code for code, name in enumerate(COMPILED_PLAYERS)}
#: The networks' hidden activations, by name (relu is the cheaper one inside compiled playouts).
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}


class BasePlayer:
    """The player a step of rollout improvement starts from, as compiled code: a built-in policy or an actor.

    ``base`` is ``"rule"``, ``"random"`` or the path of a checkpoint trained with belief ``none``
    (:mod:`agents.compiled_actor`). The same code chooses its moves in real play and in the playouts.
    """

    def __init__(self, base: str | Path = "rule") -> None:
        self.name = str(base)
        self.policy = BUILT_IN_BASES.get(self.name)
        network = None if self.policy is not None else PPOPolicy.load(base)
        self.params = None if network is None else actor_params(network)
        #: The network's critic, compiled: what a guided search's leaves are scored by (None for a built-in player).
        self.value = None if network is None else value_params(network)

    def move(self, state: np.ndarray, legal: np.ndarray, n: int, stream: np.ndarray) -> int:
        """Its choice among ``legal[:n]`` for the seat to move of a kernel state."""
        if self.params is None:
            return int(choose(state, legal, n, self.policy, stream))
        return int(actor_choice(state, legal, n, self.params))

    def outcome(self, state: np.ndarray, action: int, seed: np.uint64) -> int:
        """The outcome of ``action`` for the seat to move, that seat played on by this player, the other by rule."""
        seat = int(state[CURRENT])
        if self.params is None:
            policies = (self.policy, RULE_POLICY) if seat == 0 else (RULE_POLICY, self.policy)
            return simulate(state, action, *policies, seed, _MAX_ROLLOUT_ACTIONS)
        return actor_simulate(state, action, seat, RULE_POLICY, self.params, seed, _MAX_ROLLOUT_ACTIONS)


_RULE_BASE = BasePlayer()


def move_values(game: Game, deck_orders: int, rng: np.random.Generator, base: BasePlayer = _RULE_BASE) -> np.ndarray:
    """Mean outcome for the seat to move of each legal move (NaN: illegal), continued by ``base`` on that seat
    and ``rule`` on the other."""
    seat = game.current
    decks = [game.deck] + [rng.permutation(game.deck) for _ in range(deck_orders - 1)]
    states = [pack_state(game.hands, deck, game.discard, game.active_colour, seat, game.pending_draw)
              for deck in decks]
    seeds = rng.integers(2**63, size=deck_orders).astype(np.uint64)
    values = np.full(NUM_ACTIONS, np.nan)
    for action in game.legal_actions():
        outcomes = [base.outcome(state, action, seed) for state, seed in zip(states, seeds, strict=True)]
        # +1 a win, -1 a loss, 0 a draw or a playout cut at the action cap
        values[action] = np.mean([(outcome == seat) - (outcome == 1 - seat) for outcome in outcomes])
    return values


@dataclass(frozen=True)
class SearchLabels:
    """Label moves by the search player's root values instead of playouts from the true position.

    At each decision the search (:class:`~agents.search.SearchPolicy`, one tree level) runs ``simulations``
    simulations over worlds drawn from its own ``belief`` about the hidden hand, which has followed every view of
    the seat; a move's label is its mean simulated outcome on the +-1 scale. Its rollouts continue each move as
    :func:`move_values` does: the base player on the seat (the compiled network of a checkpoint, when the base is
    one) and ``rule`` on the other. With ``rule`` as the base that is the search player itself; with ``random``
    and then the rounds' networks it is policy iteration from scratch with the search as the improvement step. The
    values average over hundreds of hidden hands where :func:`move_values` sees one (the true one), so they are far
    less noisy, at the price of the belief's approximation.

    ``belief`` is ``counting``, ``particles`` or ``aware``: the particle filter told that the opponent plays
    ``rule`` (the policy-aware likelihood, docs/BELIEF.md), which is true of every labelled game, since the base
    player always meets ``rule``; as a player, that search wins 61.2% against ``rule`` where the plain filter's
    wins 58.5% (docs/RESULTS.md, "The belief table at 2,000 deal pairs"). Its labels did not make a stronger
    network, at 4.4 times the labelling cost (docs/RESULTS.md, "Labels from the policy-aware search").

    ``exploration`` is the search's UCB constant. The default is so large that UCB always picks a least-tried move:
    every move is played on the same worlds (common random numbers throughout), which is what labels want. A
    player's UCB (0.7) spends its simulations on the best moves, and the rest get noisy values: relabelling the
    same positions with other random streams, the centred labels correlate 0.61 with it and 0.83 with the uniform
    allocation (800 simulations, 1,056 moves).
    """

    simulations: int = 800
    belief: SearchBelief = "counting"
    exploration: float = 1e6
    leaf_moves: int | None = None

    def __post_init__(self) -> None:
        if self.belief not in SEARCH_BELIEFS:
            raise ValueError(f"search belief must be one of {', '.join(SEARCH_BELIEFS)}, got {self.belief!r}")

    def player(self, base: BasePlayer) -> SearchPolicy:
        """A fresh search player with these settings, whose rollouts continue with ``base`` on its own seat.

        With ``leaf_moves`` and a network as the base, each simulation stops after that many of the seat's decisions
        and the network's critic scores it (:class:`~agents.search.SearchPolicy`'s ``value``): the guided search of
        expert iteration. A built-in base has no critic, and its simulations play to the end.
        """
        aware = self.belief == "aware"
        guided = self.leaf_moves is not None and base.value is not None
        return SearchPolicy(simulations=self.simulations, belief="particles" if aware else self.belief,
                            rollout=base.name if base.params is None else base.params, opponent_rollout="rule",
                            exploration=self.exploration, opponent_policy=RulePolicy() if aware else None,
                            value=base.value if guided else None, leaf_moves=self.leaf_moves if guided else None)


class _Labeller:
    """Plays the base player on its seat and records (observation, move values, base move) at each decision
    with a choice."""

    def __init__(self, deck_orders: int, belief: BeliefKind, base: str | Path,
                 search: SearchLabels | None = None) -> None:
        self.needs = Needs(belief)  # the observations recorded carry these belief features
        self.deck_orders = deck_orders
        self.base = BasePlayer(base)
        self.search = None if search is None else search.player(self.base)
        self.game: Game | None = None
        self.rng = np.random.default_rng()
        self.stream = seed_stream(0)  # the random base player's draws in real play
        self.legal = np.empty(NUM_ACTIONS, dtype=np.int64)
        self.records: list[tuple[np.ndarray, np.ndarray, int]] = []

    def deal(self, game: Game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.stream = seed_stream(int(self.rng.integers(2**63)))
        if self.search is not None:
            self.search.reset(int(self.rng.integers(2**62)))

    def observe_start(self, view: PublicView) -> None:
        if self.search is not None:
            self.search.observe_start(view)

    def act(self, view: PublicView) -> int:
        if self.search is not None:
            self.search.act(view)  # every view, forced moves too: its belief follows the game
        game = self.game
        state = pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current, game.pending_draw)
        n = legal_actions_into(state, self.legal)
        if n == 1:
            return int(self.legal[0])
        move = self.base.move(state, self.legal, n, self.stream)
        values = move_values(game, self.deck_orders, self.rng, self.base) if self.search is None else \
            root_values(self.search)
        self.records.append((np.asarray(view.observation, np.float32), values.astype(np.float32), move))
        return move


def root_values(search: SearchPolicy) -> np.ndarray:
    """A search's last decision as labels: each root move's mean outcome on the +-1 scale (NaN: illegal, or never
    simulated, which a budget below the number of legal moves leaves some moves)."""
    values = np.full(NUM_ACTIONS, np.nan)
    for action, (visits, total) in search.last_root.items():
        if visits:
            values[action] = 2.0 * total / visits - 1.0
    return values


def collect(games: int, seed: int, deck_orders: int, belief: BeliefKind, base: str | Path = "rule",
            search: SearchLabels | None = None, opponent: dict[str, float] | None = None,
            pool: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, move values and the base player's moves from ``games`` games, seats alternating; the base
    player is ``"rule"``, ``"random"`` or the path of a checkpoint (belief ``none``). Each game's opponent is drawn
    from the ``opponent`` mix (default: ``rule`` alone; ``self``: one of ``pool``, :class:`OpponentMix`). The values
    are :func:`move_values`, or with ``search`` the search's root values (:class:`SearchLabels`)."""
    labeller = _Labeller(deck_orders, belief, base, search)
    rival = OpponentMix(opponent or {"rule": 1.0}, list(pool))
    rng = np.random.default_rng(seed)
    for game in range(games):
        seats = (labeller, rival) if game % 2 == 0 else (rival, labeller)
        play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)), on_deal=labeller.deal)
    observations, values, moves = zip(*labeller.records, strict=True)
    return np.array(observations), np.array(values), np.array(moves)


def collect_in_processes(games: Sequence[int], seeds: Sequence[int], deck_orders: int, belief: BeliefKind,
                         base: str | Path = "rule", search: SearchLabels | None = None,
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`collect` in one process per entry of ``games`` (with the matching seed), concatenated in order."""
    n = len(games)
    with make_executor(n) as pool:
        parts = list(pool.map(collect, games, seeds, [deck_orders] * n, [belief] * n, [base] * n, [search] * n))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def fit_values(policy: Any, observations: np.ndarray, values: np.ndarray, base_moves: np.ndarray, epochs: int,
               seed: int, base_bonus: float = 0.0, learning_rate: float = 1e-3, batch_size: int = 512,
               centred: bool = False, cosine: bool = False) -> dict:
    """Fit a MaskablePPO policy's logits to ``SCALE`` x the move values, its critic to the base move's value.

    ``base_bonus`` is added to the value of the base player's move in the targets: another move must look that
    much better to be played, so noise in the estimates does not replace a base move by an equal one. The
    critic learns the value of the position under the base player (the label of its move), a start for PPO.
    ``centred`` fits the logits to each position's values less their mean over its legal moves: the differences
    between moves, all a player acts on, without the position's level (the critic's target keeps it). ``cosine``
    anneals the learning rate from ``learning_rate`` to 0 along a half cosine over the epochs. A tenth of the
    positions is held out. Returns metrics on them: the squared error of the logits and of the
    critic, how often the network's move is the labels' best move (``held_out_agreement``), and the mean label of
    the network's move and of the base player's move (the one-step gain the network finds, if the first is larger).
    """
    legal = torch.from_numpy(np.isfinite(values))
    targets = torch.from_numpy(np.nan_to_num(values).astype(np.float32) * SCALE)
    level = torch.from_numpy(np.nanmean(values, axis=1).astype(np.float32) * SCALE * centred)[:, None]
    moves = torch.from_numpy(np.asarray(base_moves, dtype=np.int64))
    bonus = torch.zeros_like(targets)
    bonus[torch.arange(len(bonus)), moves] = base_bonus * SCALE
    inputs = torch.from_numpy(observations)
    order = np.random.default_rng(seed).permutation(len(inputs))
    held, train = torch.from_numpy(order[:len(order) // 10]), torch.from_numpy(order[len(order) // 10:])
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)

    def logits(rows: torch.Tensor) -> torch.Tensor:
        return policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(inputs[rows])))

    def loss(rows: torch.Tensor) -> torch.Tensor:
        return ((logits(rows) - targets[rows] - bonus[rows] + level[rows]) ** 2)[legal[rows]].mean() / SCALE**2

    def critic_loss(rows: torch.Tensor) -> torch.Tensor:
        value = policy.value_net(policy.mlp_extractor.forward_critic(policy.extract_features(inputs[rows])))
        return ((value.squeeze(-1) - targets[rows, moves[rows]] / SCALE) ** 2).mean()

    policy.train()
    for epoch in range(epochs):
        if cosine:
            for group in optimizer.param_groups:
                group["lr"] = learning_rate * 0.5 * (1 + math.cos(math.pi * epoch / epochs))
        shuffled = train[torch.randperm(len(train), generator=generator)]
        for start in range(0, len(shuffled), batch_size):
            rows = shuffled[start:start + batch_size]
            batch_loss = loss(rows) + critic_loss(rows)  # separate actor and critic networks: two fits in one
            optimizer.zero_grad()
            batch_loss.backward()
            optimizer.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        chosen = logits(held).masked_fill(~legal[held], -torch.inf).argmax(dim=1)
        best = targets[held].masked_fill(~legal[held], -torch.inf).argmax(dim=1)
        return {"held_out_loss": float(loss(held)), "held_out_critic_loss": float(critic_loss(held)),
                "held_out_agreement": float((chosen == best).float().mean()),
                "held_out_value_of_network_move": float(targets[held, chosen].mean() / SCALE),
                "held_out_value_of_base_move": float(targets[held, moves[held]].mean() / SCALE)}


def fit(observations: np.ndarray, values: np.ndarray, base_moves: np.ndarray, epochs: int, seed: int,
        base_bonus: float = 0.0, belief: BeliefKind = "none",
        net_arch: Sequence[int] = (256, 256), activation: str = "tanh", learning_rate: float = 1e-3,
        batch_size: int = 512, actor: str = "mlp", centred: bool = False,
        cosine: bool = False) -> tuple[MaskablePPO, dict]:
    """A new MaskablePPO network (``net_arch`` layers of ``activation``, tanh or relu; ``belief`` features; an
    output row per action, or with ``actor="afterstate"`` one scorer of the moves, :mod:`agents.afterstate`)
    fitted by :func:`fit_values`; its metrics."""
    kwargs = {"net_arch": list(net_arch), "activation_fn": ACTIVATIONS[activation]}
    if actor not in ("mlp", "afterstate"):
        raise ValueError(f"actor must be 'mlp' or 'afterstate', got {actor!r}")
    policy = "MlpPolicy" if actor == "mlp" else AfterstatePolicy
    if actor == "afterstate":
        kwargs["head_arch"] = list(net_arch)
    model = MaskablePPO(policy, UnoEnv(belief=belief), seed=seed, device="cpu", policy_kwargs=kwargs)
    return model, fit_values(model.policy, observations, values, base_moves, epochs, seed, base_bonus, learning_rate,
                             batch_size, centred, cosine)
