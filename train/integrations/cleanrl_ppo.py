"""Masked PPO in one file, in the style of CleanRL, on the native vector env (``Uno-v0``'s ``vector_entry_point``).

Everything a run does is in :func:`train`, top to bottom: N games stepped by one compiled call, an actor and a
critic (two MLPs), a rollout of ``num_steps`` steps per game, generalised advantage estimates, and
``update_epochs`` passes of clipped-surrogate minibatch updates in which illegal actions get probability 0. It
shows what a lean learner gets from the env's own batch: the native env deals, steps the opponent and encodes
observations for all N games in one numba kernel, so the time goes to the network.

Two additions over the textbook loop, both off by default:

* ``--init CHECKPOINT`` starts from a trained network (a ``belief: none`` checkpoint, e.g. a distilled
  expert-iteration network) instead of a fresh one: actor, critic and architecture come from the file, whether
  its actor has per-action rows or is an afterstate scorer (:mod:`agents.afterstate`).
* ``--kl-coef C`` adds ``C * KL(pi || pi_0)`` to the loss, pi_0 being the starting actor, so PPO improves on a
  distilled policy without first forgetting it (on the strongest network it added nothing against ``rule``:
  docs/results.md).

The network is Stable-Baselines3's ``MaskableActorCriticPolicy`` (its actor ``mlp_extractor.policy_net`` +
``action_net``, its critic ``mlp_extractor.value_net`` + ``value_net``): the loop uses the modules, not SB3's
training code, so every checkpoint it writes is a MaskablePPO zip that ``uno-evaluate``, ``uno-play``, the search
(as its prior) and the vector env (as a compiled opponent) load like any other.

Every ``eval_every`` updates the run writes ``OUT/latest.zip`` and evaluates it against ``rule`` (and ``random``)
on ``eval_pairs`` paired deals; TensorBoard (``OUT/tb``) gets the win rates with their 95% intervals, the losses,
the KL to pi_0 and samples per second. ``OUT/state.pt`` (written atomically with each checkpoint) lets
``--resume`` continue a killed run from its last checkpoint: the networks, the optimizer, the update count and
the sampling generator are restored, and the games restart from fresh deals seeded by (seed, update).

Run::

    python -m train.integrations.cleanrl_ppo --total-steps 20_000_000 --out runs/lean-ppo
    python -m train.integrations.cleanrl_ppo --init runs/ei/best_model.zip --kl-coef 0.1 --out runs/ppo-phase

Tested with gymnasium 1.4.0, torch 2.13.0 (CPU), numba 0.68.1, stable-baselines3 / sb3-contrib 2.9.2.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import signal
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from torch import nn
from torch.utils.tensorboard import SummaryWriter

import uno_env  # noqa: F401  (registers Uno-v0)
from agents.files import atomic_path
from agents.ppo import architecture, load_network, policy_metadata, read_settings, save_model
from train.evaluation.matches import evaluate
from train.evaluation.statistics import score_interval
from train.training.fit import ACTIVATIONS
from uno_env.cards import NUM_ACTIONS
from uno_env.env import UnoEnv


@dataclass
class Args:
    """The run's settings (each is a ``--flag`` of the same name with dashes)."""

    out: str = "runs/cleanrl-ppo"
    seed: int = 0
    total_steps: int = 2_000_000
    num_envs: int = 256
    num_steps: int = 32                 # rollout length per game and update: a batch is num_envs * num_steps
    opponent: str = "rule"              # the native env's opponent: random, rule, or a mix "rule=0.5,random=0.5"
    net_arch: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    init: str | None = None             # a belief-none checkpoint to start from (its architecture wins)
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    gamma: float = 0.995
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    kl_coef: float = 0.0                # weight of KL(pi || pi_0), pi_0 the starting actor
    max_grad_norm: float = 0.5
    eval_every: int = 50                # updates between checkpoints and evaluations (0: only at the end)
    eval_pairs: int = 200
    eval_seed: int = 12345
    eval_workers: int = 1
    threads: int = 1
    tb: str = ""                        # TensorBoard folder ("": OUT/tb)


def parse_args(argv: list[str] | None = None) -> tuple[Args, bool]:
    """The command line as :class:`Args` and the ``--resume`` flag; exit 2 with one line on a bad value."""
    parser = argparse.ArgumentParser(prog="python -m train.integrations.cleanrl_ppo",
                                     description=__doc__.split("\n\n")[0])
    for spec in fields(Args):
        flag, default = "--" + spec.name.replace("_", "-"), spec.default
        if isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        elif isinstance(default, tuple):
            parser.add_argument(flag, type=int, nargs="+", default=default)
        else:
            parser.add_argument(flag, type=float if isinstance(default, float) else
                                int if isinstance(default, int) else str, default=default)
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    namespace = vars(parser.parse_args(argv))
    resume = namespace.pop("resume")
    args = Args(**{key: tuple(value) if isinstance(value, list) else value for key, value in namespace.items()})
    problem = check_args(args)
    if problem:
        parser.error(problem)
    return args, resume


def check_args(args: Args) -> str | None:
    """What is wrong with ``args``, or None."""
    positive = ("total_steps", "num_envs", "num_steps", "num_minibatches", "update_epochs", "eval_pairs",
                "eval_workers", "threads")
    for name in positive:
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}"
    if args.num_envs * args.num_steps % args.num_minibatches:
        return f"--num-minibatches ({args.num_minibatches}) must divide num_envs * num_steps"
    for name in ("learning_rate", "gamma", "gae_lambda", "clip_coef", "ent_coef", "vf_coef", "kl_coef",
                 "max_grad_norm"):
        value = getattr(args, name)
        if not math.isfinite(value) or value < 0 or (name in ("gamma", "gae_lambda") and value > 1):
            return f"--{name.replace('_', '-')} must be a finite number >= 0{' and <= 1' * (name[0] == 'g')}, " \
                   f"got {value}"
    if args.eval_every < 0:
        return f"--eval-every must be >= 0, got {args.eval_every}"
    if args.activation not in ACTIVATIONS:
        return f"--activation must be one of {sorted(ACTIVATIONS)}, got {args.activation!r}"
    if not args.net_arch or min(args.net_arch) < 1:
        return f"--net-arch needs positive layer widths, got {list(args.net_arch)}"
    if args.init is not None:
        try:
            settings = read_settings(args.init)
        except (OSError, ValueError) as error:
            return f"--init {args.init}: {error}"
        if settings.get("belief") != "none":
            return f"--init {args.init} reads belief {settings.get('belief')!r} features; the native vector env " \
                   "encodes belief 'none' only"
    try:
        opponent_mix(args.opponent)
    except ValueError as error:
        return f"--opponent: {error}"
    return None


def opponent_mix(text: str) -> dict[str, float]:
    """``"rule"`` or ``"rule=0.7,random=0.3"`` as the native env's opponent mix."""
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        try:
            mix[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"weight of {name.strip()!r} must be a number, got {weight!r}") from None
    gym.make_vec("Uno-v0", num_envs=1, vectorization_mode="vector_entry_point", opponent=mix)  # its checks
    return mix


def make_model(args: Args) -> MaskablePPO:
    """A MaskablePPO container for the network: fresh, or the ``--init`` checkpoint's weights and architecture."""
    start = load_network(args.init) if args.init is not None else None
    if start is None:
        policy_class, kwargs = "MlpPolicy", {"net_arch": list(args.net_arch),
                                             "activation_fn": ACTIVATIONS[args.activation]}
    else:  # the checkpoint's own class and architecture (per-action rows or an afterstate scorer)
        record = policy_metadata(start)
        if record is None:
            raise ValueError(f"--init {args.init}: its network is not a kind this loop can rebuild")
        policy_class, kwargs = architecture(record)
    model = MaskablePPO(policy_class, UnoEnv(belief="none"), seed=args.seed, device="cpu", policy_kwargs=kwargs)
    if start is not None:
        model.policy.load_state_dict(start.state_dict())
    return model


def masked_logits(actor: nn.Module, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The actor's log-probabilities, illegal actions pushed to probability 0 (a legal action always exists).

    A large finite logit rather than -inf keeps entropy and KL sums free of 0 * inf."""
    return torch.log_softmax(actor(obs).masked_fill(~mask, -1e9), dim=-1)


def write_checkpoint(out: Path, model: MaskablePPO, state: dict, steps: int) -> Path:
    """``OUT/latest.zip`` (a MaskablePPO checkpoint) and ``OUT/state.pt`` (what ``--resume`` needs), atomically."""
    path = save_model(model, out / "latest.zip", {"belief": "none", "config": "cleanrl-ppo", "steps": steps})
    with atomic_path(out / "state.pt") as temporary:
        torch.save(state, temporary)
    return path


def evaluation(path: Path, args: Args) -> dict[str, float]:
    """Win rates of the checkpoint against rule and random on ``eval_pairs`` paired deals, with 95% intervals."""
    record = {}
    for result in evaluate(str(path), ["rule", "random"], args.eval_pairs, args.eval_seed, args.eval_workers):
        low, high, _ = score_interval(result.pair_scores)
        record |= {f"eval/{result.opponent}": result.score, f"eval/{result.opponent}_low": low,
                   f"eval/{result.opponent}_high": high}
    return record


def train(args: Args, resume: bool = False, log=print) -> dict[str, float]:
    """Run masked PPO as ``args`` say; the last evaluation's win rates (``eval/rule``, ``eval/random``, ...)."""
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_updates = max(1, args.total_steps // batch_size)

    model = make_model(args)
    policy = model.policy
    actor = nn.Sequential(policy.mlp_extractor.policy_net, policy.action_net)
    critic = nn.Sequential(policy.mlp_extractor.value_net, policy.value_net)
    reference = copy.deepcopy(actor).requires_grad_(False)  # pi_0, the KL penalty's anchor
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, eps=1e-5)
    generator = torch.Generator().manual_seed(args.seed)
    first_update = 0
    if resume:
        saved = torch.load(out / "state.pt", weights_only=True)
        policy.load_state_dict(saved["policy"])
        reference.load_state_dict(saved["reference"])
        optimizer.load_state_dict(saved["optimizer"])
        generator.set_state(saved["generator"])
        first_update = int(saved["update"])
    (out / "args.json").write_text(json.dumps(asdict(args), indent=1) + "\n")
    writer = SummaryWriter(args.tb or str(out / "tb"))

    envs = gym.make_vec("Uno-v0", num_envs=args.num_envs, vectorization_mode="vector_entry_point",
                        opponent=opponent_mix(args.opponent), autoreset_mode="SameStep", max_episode_steps=None)
    size = envs.single_observation_space.shape[0]
    obs_buf = torch.zeros((args.num_steps, args.num_envs, size))
    mask_buf = torch.zeros((args.num_steps, args.num_envs, NUM_ACTIONS), dtype=torch.bool)
    action_buf = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprob_buf = torch.zeros((args.num_steps, args.num_envs))
    reward_buf = torch.zeros((args.num_steps, args.num_envs))
    done_buf = torch.zeros((args.num_steps, args.num_envs))
    value_buf = torch.zeros((args.num_steps, args.num_envs))

    obs, info = envs.reset(seed=args.seed * 1_000_003 + first_update)
    next_obs, next_mask = torch.from_numpy(obs), torch.from_numpy(info["action_mask"].astype(bool))
    next_done = torch.zeros(args.num_envs)
    games = wins = 0
    metrics: dict[str, float] = {}
    started = time.perf_counter()
    for update in range(first_update, num_updates):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - update / num_updates)

        # Rollout: num_steps steps of every game, sampling from the masked policy (Gumbel-max on the seeded
        # generator, so a seed gives the same run).
        for step in range(args.num_steps):
            obs_buf[step], mask_buf[step], done_buf[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                logp = masked_logits(actor, next_obs, next_mask)
                gumbel = -torch.log(-torch.log(torch.rand(logp.shape, generator=generator).clamp(1e-20, 1 - 1e-7)))
                action = torch.argmax(logp + gumbel, dim=-1)
                value_buf[step] = critic(next_obs).squeeze(-1)
            action_buf[step], logprob_buf[step] = action, logp.gather(1, action[:, None]).squeeze(1)
            obs, reward, terminated, truncated, info = envs.step(action.numpy())
            reward_buf[step] = torch.from_numpy(reward.astype(np.float32))
            ended = terminated | truncated
            next_obs, next_done = torch.from_numpy(obs), torch.from_numpy(ended.astype(np.float32))
            next_mask = torch.from_numpy(info["action_mask"].astype(bool))
            games += int(terminated.sum())
            wins += int((reward > 0).sum())

        # Generalised advantage estimates, cut at each game's end (the reward is the game's outcome).
        with torch.no_grad():
            next_value = critic(next_obs).squeeze(-1)
            advantages = torch.zeros_like(reward_buf)
            last = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                following_done = next_done if t == args.num_steps - 1 else done_buf[t + 1]
                following_value = next_value if t == args.num_steps - 1 else value_buf[t + 1]
                delta = reward_buf[t] + args.gamma * following_value * (1 - following_done) - value_buf[t]
                last = delta + args.gamma * args.gae_lambda * (1 - following_done) * last
                advantages[t] = last
            returns = advantages + value_buf

        # Clipped-surrogate updates on shuffled minibatches.
        b_obs, b_mask = obs_buf.reshape(batch_size, size), mask_buf.reshape(batch_size, NUM_ACTIONS)
        b_actions, b_logprobs = action_buf.reshape(-1), logprob_buf.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        for _ in range(args.update_epochs):
            order = torch.randperm(batch_size, generator=generator)
            for start in range(0, batch_size, minibatch_size):
                rows = order[start:start + minibatch_size]
                logp = masked_logits(actor, b_obs[rows], b_mask[rows])
                new_logprob = logp.gather(1, b_actions[rows, None]).squeeze(1)
                probs = logp.exp()
                entropy = -(probs * logp).sum(-1).mean()
                ratio = (new_logprob - b_logprobs[rows]).exp()
                advantage = b_advantages[rows]
                advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                policy_loss = torch.max(-advantage * ratio,
                                        -advantage * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                value_loss = 0.5 * ((critic(b_obs[rows]).squeeze(-1) - b_returns[rows]) ** 2).mean()
                loss = policy_loss - args.ent_coef * entropy + args.vf_coef * value_loss
                if args.kl_coef:
                    anchor = masked_logits(reference, b_obs[rows], b_mask[rows])
                    kl = (probs * (logp - anchor)).sum(-1).mean()
                    loss = loss + args.kl_coef * kl
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
                optimizer.step()

        steps = (update + 1) * batch_size
        with torch.no_grad():
            kl_to_start = (probs * (logp - masked_logits(reference, b_obs[rows], b_mask[rows]))).sum(-1).mean()
        # How much of the returns' variance the critic explained before this update (CleanRL's diagnostic).
        explained = 1.0 - float((b_returns - value_buf.reshape(-1)).var() / b_returns.var().clamp_min(1e-8))
        metrics = {"losses/policy": policy_loss.item(), "losses/value": value_loss.item(),
                   "losses/explained_variance": explained,
                   "losses/entropy": entropy.item(), "losses/kl_to_start": kl_to_start.item(),
                   "charts/train_win_rate": wins / max(games, 1),
                   "charts/samples_per_second": (steps - first_update * batch_size) / (time.perf_counter() - started)}
        games = wins = 0
        last_update = update == num_updates - 1
        if last_update or (args.eval_every and (update + 1) % args.eval_every == 0):
            state = {"policy": policy.state_dict(), "reference": reference.state_dict(),
                     "optimizer": optimizer.state_dict(), "generator": generator.get_state(), "update": update + 1}
            path = write_checkpoint(out, model, state, steps)
            metrics |= evaluation(path, args)
            log(f"update {update + 1}/{num_updates}  steps {steps:,}  " +
                "  ".join(f"{key} {value:.3f}" for key, value in metrics.items()))
        for key, value in metrics.items():
            writer.add_scalar(key, value, steps)
    writer.close()
    envs.close()
    return metrics


def main(argv: list[str] | None = None) -> None:
    """``python -m train.integrations.cleanrl_ppo [flags]``: train, print progress, write ``OUT``."""
    args, resume = parse_args(argv)
    if resume and not (Path(args.out) / "state.pt").exists():
        print(f"error: --resume: {args.out} holds no state.pt (no checkpoint was written yet); run without --resume",
              file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops like Ctrl-C
    try:
        train(args, resume)
    except KeyboardInterrupt:  # the last checkpoint is on disk (written atomically): say how to continue
        flags = " ".join(sys.argv[1:] if argv is None else argv) + ("" if resume else " --resume")
        print(f"\nstopped; continue with: python -m train.integrations.cleanrl_ppo {flags}", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
