"""Masked PPO with TorchRL on ``Uno-v0``: TorchRL's own env wrapper, mask transform, masked distribution and PPO loss.

    python -m train.integrations.torchrl_ppo --frames 200000                  # against random, then evaluated
    python -m train.integrations.torchrl_ppo --opponent rule --frames 1000000 --eval-opponents random rule

Read top to bottom: ``GymWrapper`` over ``uno_env.wrappers.ActionMaskObservation(gym.make("Uno-v0"))`` gives
tensordicts with ``observation`` and ``action_mask``; a ``DTypeCastTransform`` makes the mask boolean and TorchRL's
``ActionMask`` transform keeps the env's action spec masked (so random actions are legal too). The actor is a
``ProbabilisticActor`` whose ``MaskedCategorical`` reads the logits and the mask, so only legal moves are sampled
and scored; ``Collector`` gathers batches, ``GAE`` computes advantages and ``ClipPPOLoss`` the loss, over
minibatches from a ``ReplayBuffer``. At the end the trained actor and its untrained twin (the same initial weights)
play ``train.evaluation`` matches on the same paired deals.

Only the single-agent env: TorchRL's ``PettingZooWrapper`` targets parallel or AEC games whose agents act in a fixed
order, and a player of UNO may move several times in a row; self-play with another library is in
:mod:`train.integrations.rllib_ppo` (``--self-play``).

Tested with torchrl 0.14.1, tensordict 0.14.3, gymnasium 1.4.0, torch 2.13.0+cpu on Python 3.11.7.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import gymnasium as gym
import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs import ActionMask, Compose, DTypeCastTransform, GymWrapper, TransformedEnv
from torchrl.modules import MaskedCategorical, ProbabilisticActor, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

import uno_env  # noqa: F401  (registers Uno-v0)
from train.evaluation.matches import format_table
from train.integrations.network_policy import (
    NetworkPolicy,
    add_learner_flags,
    before_and_after,
    check_arguments,
    mlp,
)
from uno_env.wrappers import ActionMaskObservation


@dataclass
class Settings:
    """One run's settings (the command line's options)."""

    frames: int = 200_000
    opponent: str = "random"
    envs: int = 16
    batch: int = 2048
    minibatch: int = 250
    epochs: int = 6
    lr: float = 1e-3
    hidden: int = 128
    gamma: float = 0.99
    seed: int = 0


@dataclass
class Run:
    """What a run gives back: the actor before and after training, and its learning curve."""

    trained: NetworkPolicy
    untrained: NetworkPolicy
    returns: list[float] = field(default_factory=list)  # mean return of the games that ended in each batch
    losses: list[float] = field(default_factory=list)  # summed PPO objective (actor + critic + entropy), per batch
    #: How much of each batch's value targets the critic explains after its update on that batch (1 - Var(error) /
    #: Var(target), as RLlib's vf_explained_var, which is measured during the update): the critic's fit, not yet its
    #: accuracy on new games.
    explained_variance: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0


def make_env(opponent: str, envs: int, seed: int) -> TransformedEnv:
    """``envs`` copies of ``Uno-v0`` as one batched TorchRL env: a boolean mask entry, the action spec masked by it.

    Gymnasium's ``SyncVectorEnv`` steps the copies; TorchRL resets finished ones itself, so Gymnasium's autoreset is
    off (TorchRL refuses the default next-step mode). An illegal action raises: the masked actor never makes one, and
    if masking broke the run should stop rather than learn from silent losses. Batching matters: TorchRL's per-step
    overhead, about 3 ms on the project's 2-core machine, is paid once for all copies.
    """
    def one() -> gym.Env:
        return ActionMaskObservation(gym.make("Uno-v0", opponent=opponent, illegal_action="raise"))

    vector = gym.vector.SyncVectorEnv([one] * envs, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    env = GymWrapper(vector, categorical_action_encoding=True)
    env = TransformedEnv(env, Compose(DTypeCastTransform(torch.int8, torch.bool, in_keys=["action_mask"]),
                                      ActionMask()))
    env.set_seed(seed)
    return env


def train(settings: Settings) -> Run:
    """Train a masked PPO actor-critic for ``settings.frames`` env steps in this process (one torch thread)."""
    torch.set_num_threads(1)
    torch.manual_seed(settings.seed)
    env = make_env(settings.opponent, settings.envs, settings.seed)
    size = env.observation_spec["observation"].shape[-1]
    actions = env.action_spec.space.n
    actor_net = mlp(size, settings.hidden, actions)
    actor = ProbabilisticActor(TensorDictModule(actor_net, in_keys=["observation"], out_keys=["logits"]),
                               in_keys={"logits": "logits", "mask": "action_mask"}, out_keys=["action"],
                               distribution_class=MaskedCategorical, return_log_prob=True, spec=env.action_spec)
    critic = ValueOperator(mlp(size, settings.hidden, 1), in_keys=["observation"])
    untrained = NetworkPolicy(copy.deepcopy(actor_net), "torchrl-untrained")

    collector = Collector(env, actor, frames_per_batch=settings.batch, total_frames=settings.frames,
                          auto_register_policy_transforms=False)  # the MLP needs no recurrent-state transforms
    advantage = GAE(gamma=settings.gamma, lmbda=0.95, value_network=critic, average_gae=True)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.01)
    optimizer = torch.optim.Adam(loss.parameters(), lr=settings.lr)
    buffer = ReplayBuffer(storage=LazyTensorStorage(settings.batch), sampler=SamplerWithoutReplacement(),
                          batch_size=settings.minibatch)

    run = Run(trained=NetworkPolicy(actor_net, "torchrl"), untrained=untrained)
    start = time.perf_counter()
    for batch in collector:
        ended = batch["next", "done"]
        run.returns.append(float(batch["next", "reward"][ended].mean()) if ended.any() else float("nan"))
        run.steps += batch.numel()
        total = 0.0
        for _ in range(settings.epochs):
            with torch.no_grad():
                advantage(batch)  # recomputed each epoch with the critic as it is now
            buffer.extend(batch.reshape(-1))
            for minibatch in buffer:
                terms = loss(minibatch)
                objective = terms["loss_objective"] + terms["loss_critic"] + terms["loss_entropy"]
                optimizer.zero_grad()
                objective.backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                optimizer.step()
                total += float(objective.detach())
        run.losses.append(total)
        with torch.no_grad():
            critic(batch)  # the updated critic's values, against the targets it was fitted to
        run.explained_variance.append(explained_variance(batch["state_value"], batch["value_target"]))
    run.seconds = time.perf_counter() - start
    collector.shutdown()
    env.close()
    return run


def explained_variance(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """1 - Var(target - predicted) / Var(target): 1 for a perfect critic, 0 for one that only knows the mean."""
    return float(1.0 - (target - predicted).var() / target.var())


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="python -m train.integrations.torchrl_ppo",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=defaults.frames, help="env steps to train (default 200000)")
    parser.add_argument("--opponent", default=defaults.opponent, help="Uno-v0's opponent while training (random)")
    parser.add_argument("--envs", type=int, default=defaults.envs, help="games stepped side by side (default 16)")
    parser.add_argument("--batch", type=int, default=defaults.batch,
                        help="env steps per PPO update, a multiple of --envs (default 2048)")
    add_learner_flags(parser, defaults)
    args = parser.parse_args(argv)
    check_arguments(parser, args, ("frames", "envs", "batch", "minibatch", "epochs", "hidden", "pairs"))
    if args.batch % args.envs:
        parser.error(f"--batch {args.batch} is not a multiple of --envs {args.envs}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: train, then print the evaluation table (exit status 2 on bad arguments)."""
    args = parse_args(argv)
    run = train(Settings(frames=args.frames, opponent=args.opponent, envs=args.envs, batch=args.batch,
                         minibatch=args.minibatch, epochs=args.epochs, lr=args.lr, hidden=args.hidden, seed=args.seed))
    print(f"{run.steps} env steps in {run.seconds:.0f} s ({run.steps / max(run.seconds, 1e-9):.0f} steps/s); "
          f"mean return by batch: {' '.join(f'{r:+.2f}' for r in run.returns)}")
    results = before_and_after([(run.untrained, run.trained)], args.eval_opponents, args.pairs, args.seed + 1)
    print(format_table(results))
    if args.json:
        args.json.write_text(json.dumps({"returns": run.returns, "losses": run.losses,
                                         "explained_variance": run.explained_variance, "steps": run.steps,
                                         "seconds": run.seconds, "results": [r.to_dict() for r in results]},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
