"""What the integrations share: their networks' shape, and a trained network seated as a project Policy.

``NetworkPolicy`` lets ``train.evaluation`` play an actor trained by another library; :func:`before_and_after` plays
each trained actor and its untrained twin on the same paired deals; :func:`check_arguments` refuses what the scripts
cannot run, before any library starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from train.evaluation.matches import MatchResult, evaluate
from train.specs import validate_spec
from uno_env.view import PublicView

#: Any torch callable from a float32 batch of flat ``belief="none"`` observations to 61 action logits per row.
Actor = Callable[[torch.Tensor], torch.Tensor]


class NetworkPolicy:
    """The Policy protocol over an actor network: the most probable legal action of the view's observation.

    The actor sees the base encoding (``belief="none"``, what ``Uno-v0`` gives by default), so the policy declares
    no needs. Illegal actions are masked out before the argmax, as the libraries' masked policies do when sampling.

    Args:
        actor: maps ``(batch, observation)`` float32 tensors to ``(batch, 61)`` logits.
        name: a label for evaluation tables.
    """

    def __init__(self, actor: Actor, name: str = "network") -> None:
        self.actor = actor
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: PublicView) -> int:
        """The legal action with the highest logit."""
        legal = view.legal_actions
        if len(legal) == 1:  # forced draws need no network call
            return legal[0]
        with torch.inference_mode():
            logits = self.actor(torch.as_tensor(np.asarray(view.observation, dtype=np.float32))[None])[0].numpy()
        return int(np.argmax(np.where(view.action_mask.astype(bool), logits, -np.inf)))


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    """The integrations' actor and critic: two tanh layers of ``hidden`` units (MaskablePPO's default shape)."""
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, outputs))


def before_and_after(players: Sequence[tuple[NetworkPolicy, NetworkPolicy]], opponents: Sequence[str], pairs: int,
                     seed: int) -> list[MatchResult]:
    """Each (untrained, trained) actor against each opponent, on the same ``pairs`` deal pairs, in this process."""
    return [result for twins in players for player in twins
            for result in evaluate(player, opponents, pairs=pairs, seed=seed, workers=1)]


def add_learner_flags(parser: argparse.ArgumentParser, defaults: object) -> None:
    """The flags both library scripts share: the update's shape, the network's width, the seed and the evaluation;
    ``defaults`` is the script's settings dataclass."""
    parser.add_argument("--minibatch", type=int, default=defaults.minibatch)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument("--hidden", type=int, default=defaults.hidden, help="width of the two hidden layers")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--eval-opponents", nargs="+", default=["random", "rule"])
    parser.add_argument("--pairs", type=int, default=200, help="deal pairs per evaluation matchup (default 200)")
    parser.add_argument("--json", type=Path, help="also write the evaluation and the learning curve here")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, positive: Sequence[str]) -> None:
    """``parser.error`` (exit status 2) unless the ``positive`` options are >= 1, the minibatch fits in the batch
    and every player named (``--opponent``, ``--eval-opponents``) exists."""
    for name in positive:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.minibatch > args.batch:
        parser.error(f"--minibatch {args.minibatch} is larger than --batch {args.batch}")
    for option, name in [("--opponent", args.opponent)] + [("--eval-opponents", n) for n in args.eval_opponents]:
        problem = validate_spec(name)
        if problem:
            parser.error(f"{option} {name}: {problem}")
