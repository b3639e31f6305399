"""MaskablePPO training steps per second with each ``vec_env`` of the training config (dummy, subproc, native).

    .venv/bin/python benchmarks/train_speed.py                 # about two minutes
    .venv/bin/python benchmarks/train_speed.py --steps 8192 --repeats 1

Each setting builds its envs and its model with the trainer's own ``build_vec_env`` and ``new_model`` and the PPO
settings of ``configs/default.yaml`` (``n_steps * n_envs`` kept at 2,048 samples a rollout, so every setting does the
same learning work per sample), opponent ``random``, then times ``model.learn(--steps)`` after one uncounted rollout
(process start-up, worker start-up and kernel loading stay out). Reported: environment steps per wall second and
per CPU second of this process (SubprocVecEnv's workers are other processes: their CPU is not in that column, which
is why wall time is the figure to compare). Torch runs on one thread.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from train.config import load_config, parse_config
from train.training.sb3_ppo import build_vec_env, new_model

_DEFAULT = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"
#: (vec_env, n_envs) settings measured; n_steps = 2048 / n_envs.
SETTINGS = (("dummy", 8), ("subproc", 8), ("native", 8), ("native", 64))


def steps_per_second(vec_env: str, n_envs: int, steps: int, seed: int) -> tuple[float, float]:
    """(env steps per wall second, per CPU second of this process) of ``model.learn(steps)``."""
    base = load_config(_DEFAULT)
    data = {"name": "speed", "seed": seed, "total_timesteps": steps, "n_envs": n_envs, "vec_env": vec_env,
            "opponents": [{"mix": {"random": 1}}], "env": {"belief": base.env.belief},
            "ppo": {"n_steps": 2048 // n_envs, "batch_size": base.ppo.batch_size, "n_epochs": base.ppo.n_epochs,
                    "learning_rate": base.ppo.learning_rate},
            "policy": {"net_arch": list(base.policy.net_arch), "activation": base.policy.activation}}
    config = parse_config(data)
    venv = build_vec_env(config, seed)
    try:
        model = new_model(config, venv)
        model.learn(2048)  # one rollout and update, not counted
        wall, cpu = time.perf_counter(), time.process_time()
        model.learn(steps, reset_num_timesteps=False)
        return steps / (time.perf_counter() - wall), steps / (time.process_time() - cpu)
    finally:
        venv.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16384, help="timed training steps per setting and round")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of every setting; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.steps < 2048 or args.repeats < 1:
        parser.error("--steps must be at least 2048 (one rollout) and --repeats positive")
    torch.set_num_threads(1)
    best = {setting: (0.0, 0.0) for setting in SETTINGS}
    for _ in range(args.repeats):  # rounds in turn, so drifting load hits every setting alike
        for setting in SETTINGS:
            best[setting] = max(best[setting], steps_per_second(*setting, args.steps, args.seed))
    reference = best[("dummy", 8)][0]
    print(f"best of {args.repeats} x {args.steps:,} steps, seed {args.seed}")
    print("| vec_env | n_envs | steps / wall s | steps / CPU s (main process) | x dummy |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for (vec_env, n_envs), (wall, cpu) in best.items():
        print(f"| {vec_env} | {n_envs} | {wall:,.0f} | {cpu:,.0f} | {wall / reference:.1f} |")


if __name__ == "__main__":
    main()
