"""Masked PPO with RLlib: Uno-v0 against a built-in opponent or self-play on the PettingZoo env; local or a cluster.

    python -m train.integrations.rllib_ppo --iterations 30                    # Uno-v0 against random, local Ray
    python -m train.integrations.rllib_ppo --self-play --iterations 30        # two policies, one per seat
    ray start --head --port 6379                                               # then, on any machine of the cluster:
    python -m train.integrations.rllib_ppo --address 127.0.0.1:6379 --env-runners 4

RLlib's new API stack (RLModule and Learner). :class:`MaskedPPOModule` is a small actor-critic RLModule that reads
the ``{"observation", "action_mask"}`` observations both envs give (``uno_env.wrappers.ActionMaskObservation`` for
``Uno-v0``; the PettingZoo env has them natively) and sets the logits of illegal actions to a large negative number,
so PPO's sampling, log-probabilities and entropy only ever see legal moves (the way RLlib's action-masking example
does it). Self-play wraps ``uno_env.multiagent.env()`` in RLlib's ``PettingZooEnv`` and trains one policy per seat.
At the end both the trained and the untrained actor (the same initial weights) play ``train.evaluation`` matches on
the same paired deals, so the table shows what training bought.

Tested with ray 2.60.0 (RLlib), gymnasium 1.4.0, pettingzoo 1.27.0, torch 2.13.0+cpu on Python 3.11.7. RLlib's
``ray[rllib]`` extra pins gymnasium 1.2.2; the project's ``rllib`` extra installs RLlib's other dependencies instead
and keeps gymnasium 1.4, with which this module's tests pass. On a cluster every machine needs uno-rl installed (the
env runners build the env from this module).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.tune.registry import register_env

import uno_env  # noqa: F401  (registers Uno-v0)
from train.config import ConfigError
from train.evaluation.distributed import connect
from train.evaluation.matches import format_table
from train.integrations.network_policy import (
    NetworkPolicy,
    add_learner_flags,
    before_and_after,
    check_arguments,
    mlp,
)
from uno_env.multiagent import env as pettingzoo_env
from uno_env.wrappers import ActionMaskObservation

SINGLE_ENV = "uno-rllib-masked"
SELF_PLAY_ENV = "uno-rllib-self-play"
SEATS = ("player_0", "player_1")
#: The module id of a single-agent run (RLlib's default).
SINGLE_MODULE = "default_policy"
#: Logit of an illegal action: finite (log-probabilities and the entropy stay finite), yet never sampled.
MASKED_LOGIT = -1e9


class MaskedPPOModule(TorchRLModule, ValueFunctionAPI):
    """Actor and critic MLPs over ``obs["observation"]``; illegal actions (``obs["action_mask"] == 0``) masked.

    ``model_config``: ``{"hidden": width}`` (two tanh layers each, default 128).
    """

    def setup(self) -> None:
        """Build the actor ``pi`` and the critic ``vf`` for the flat observation inside the Dict space."""
        size = self.observation_space["observation"].shape[0]
        hidden = int(self.model_config.get("hidden", 128))
        self.pi = mlp(size, hidden, self.action_space.n)
        self.vf = mlp(size, hidden, 1)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        logits = self.pi(obs["observation"])
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(obs["action_mask"] == 0, MASKED_LOGIT)}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """The critic's value of each observation (PPO's GAE and value loss)."""
        return self.vf(batch[Columns.OBS]["observation"]).squeeze(-1)


def make_single_env(config: dict[str, Any]) -> gym.Env:
    """``Uno-v0`` against ``config["opponent"]`` with the mask in the observation (RLlib's env creator).

    An illegal action raises instead of losing the game: a masked learner never makes one, and if masking broke,
    the run should stop rather than learn from silent losses (the same in self-play).
    """
    return ActionMaskObservation(gym.make("Uno-v0", opponent=config.get("opponent", "random"), illegal_action="raise"))


def make_self_play_env(config: dict[str, Any]) -> PettingZooEnv:
    """The PettingZoo env as an RLlib ``MultiAgentEnv`` (RLlib's env creator)."""
    return PettingZooEnv(pettingzoo_env(illegal_action="raise"))


def seat_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """Self-play's policy mapping: each seat has its own policy, named after it."""
    return agent_id


@dataclass
class Settings:
    """One run's settings (the command line's options)."""

    iterations: int = 30
    self_play: bool = False
    opponent: str = "random"
    address: str | None = None
    env_runners: int = 1
    envs_per_runner: int = 4
    batch: int = 2000
    minibatch: int = 250
    epochs: int = 6
    lr: float = 1e-3
    hidden: int = 128
    seed: int = 0


@dataclass
class Run:
    """What a run gives back: the actors before and after training, and its learning curve."""

    trained: dict[str, NetworkPolicy]
    untrained: dict[str, NetworkPolicy]
    returns: list[float] = field(default_factory=list)  # mean episode return of the first module, per iteration
    #: How much of the value targets' variance the first module's critic explains, per iteration (RLlib's
    #: vf_explained_var, measured on the batch during the update: the critic's fit, not its accuracy on new games).
    explained_variance: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0


def build_config(settings: Settings) -> PPOConfig:
    """RLlib's PPO config for ``settings``: the env, the masked module(s), the batch sizes, the seed."""
    module = RLModuleSpec(module_class=MaskedPPOModule, model_config={"hidden": settings.hidden})
    config = (PPOConfig()
              .env_runners(num_env_runners=settings.env_runners, num_envs_per_env_runner=settings.envs_per_runner)
              .training(train_batch_size_per_learner=settings.batch, minibatch_size=settings.minibatch,
                        num_epochs=settings.epochs, lr=settings.lr, entropy_coeff=0.01)
              .debugging(seed=settings.seed)
              # An env runner that fails (an illegal move raises) stops the run instead of being restarted forever.
              .fault_tolerance(restart_failed_env_runners=False))
    # RLlib's env check steps the env with unmasked random actions, which the envs here refuse (illegal_action="raise").
    if settings.self_play:
        return (config.environment(SELF_PLAY_ENV, disable_env_checking=True)
                .multi_agent(policies=set(SEATS), policy_mapping_fn=seat_policy)
                .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=dict.fromkeys(SEATS, module))))
    return config.environment(SINGLE_ENV, env_config={"opponent": settings.opponent},
                              disable_env_checking=True).rl_module(rl_module_spec=module)


def train(settings: Settings) -> Run:
    """Train with RLlib's PPO for ``settings.iterations`` iterations on Ray (joined or started here).

    Ray is joined at ``settings.address`` or started here (:func:`train.evaluation.distributed.connect`, which raises
    ``ConfigError`` naming an unreachable address), unless this process already runs it; Ray gives its workers one
    thread each (``OMP_NUM_THREADS=1``), and this process gets one torch thread.
    """
    torch.set_num_threads(1)
    register_env(SINGLE_ENV, make_single_env)
    register_env(SELF_PLAY_ENV, make_self_play_env)
    started = connect(settings.address)
    try:
        algo = build_config(settings).build_algo()
        try:
            modules = SEATS if settings.self_play else (SINGLE_MODULE,)
            untrained = {m: NetworkPolicy(copy.deepcopy(algo.get_module(m).pi), f"{m}-untrained") for m in modules}
            run = Run(trained={}, untrained=untrained)
            start = time.perf_counter()
            for _ in range(settings.iterations):
                result = algo.train()
                run.returns.append(_first_module_return(result["env_runners"], modules[0]))
                run.explained_variance.append(float(result["learners"][modules[0]]["vf_explained_var"]))
            run.seconds = time.perf_counter() - start
            run.steps = int(result["env_runners"].get("num_env_steps_sampled_lifetime", 0)) if run.returns else 0
            run.trained = {m: NetworkPolicy(copy.deepcopy(algo.get_module(m).pi), f"{m}-rllib") for m in modules}
            return run
        finally:
            algo.stop()
    finally:
        if started:
            ray.shutdown()


def _first_module_return(metrics: dict[str, Any], module: str) -> float:
    if module == SINGLE_MODULE:
        return float(metrics.get("episode_return_mean", float("nan")))
    return float(metrics.get("module_episode_returns_mean", {}).get(module, float("nan")))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="python -m train.integrations.rllib_ppo", description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=defaults.iterations, help="PPO iterations (default 30)")
    parser.add_argument("--self-play", action="store_true",
                        help="train on the PettingZoo env, one policy per seat, instead of Uno-v0")
    parser.add_argument("--opponent", default=defaults.opponent,
                        help="Uno-v0's built-in opponent while training (default random)")
    parser.add_argument("--address", default=None, help="a running Ray cluster (HEAD_IP:6379); default: Ray here")
    parser.add_argument("--env-runners", type=int, default=defaults.env_runners,
                        help="RLlib env runners (one CPU each; default 1)")
    parser.add_argument("--envs-per-runner", type=int, default=defaults.envs_per_runner)
    parser.add_argument("--batch", type=int, default=defaults.batch, help="env steps per iteration (default 2000)")
    add_learner_flags(parser, defaults)
    args = parser.parse_args(argv)
    check_arguments(parser, args, ("iterations", "envs_per_runner", "batch", "minibatch", "epochs", "hidden", "pairs"))
    if args.env_runners < 0:
        parser.error(f"--env-runners must be at least 0 (0 samples in this process), got {args.env_runners}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: train, then print the evaluation table (exit status 2 on bad arguments)."""
    args = parse_args(argv)
    settings = Settings(iterations=args.iterations, self_play=args.self_play, opponent=args.opponent,
                        address=args.address, env_runners=args.env_runners, envs_per_runner=args.envs_per_runner,
                        batch=args.batch, minibatch=args.minibatch, epochs=args.epochs, lr=args.lr,
                        hidden=args.hidden, seed=args.seed)
    try:
        run = train(settings)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    print(f"{run.steps} env steps in {run.seconds:.0f} s ({run.steps / max(run.seconds, 1e-9):.0f} steps/s); "
          f"mean return by iteration: {' '.join(f'{r:+.2f}' for r in run.returns)}")
    results = before_and_after([(run.untrained[m], run.trained[m]) for m in run.trained], args.eval_opponents,
                               args.pairs, args.seed + 1)
    print(format_table(results))
    if args.json:
        args.json.write_text(json.dumps({"returns": run.returns, "explained_variance": run.explained_variance,
                                         "steps": run.steps, "seconds": run.seconds,
                                         "results": [r.to_dict() for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
