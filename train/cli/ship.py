"""Turn a finished training run into a shipped agent: the folder models/NAME with its model card.

example:
  python -m train.cli.ship runs/default-20261123-031500 my-agent

It copies from the run folder the best model (as model.zip), the resolved config, the evaluation history, the
run record and the final evaluation, then writes README.md, the model card: what the agent is, how it was trained
(config, steps, wall time, machine), and its final evaluation table with 95% confidence intervals. The agent is
then a player everywhere, by its name (my-agent) or its folder (models/my-agent).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from agents.ppo import read_settings
from agents.shipped import MODELS_DIR

#: Files copied from the run folder (source name -> shipped name); the first two must exist.
_COPIED = {"best_model.zip": "model.zip", "config.yaml": "config.yaml", "run_info.json": "run_info.json",
           "final_eval.json": "final_eval.json", "final_eval.md": "final_eval.md",
           "evaluations.jsonl": "evaluations.jsonl"}


def model_card(name: str, run_dir: Path) -> str:
    """The Markdown model card of the run in ``run_dir`` shipped as ``name``."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    settings = read_settings(run_dir / "best_model.zip")
    info = json.loads((run_dir / "run_info.json").read_text())
    final = json.loads((run_dir / "final_eval.json").read_text())
    env, policy = config["env"], config["policy"]
    belief = env["belief"] + (f" (N = {env['n_particles']})" if env["belief"] == "particles" else "")
    minutes = info["total_train_seconds"] / 60
    lines = [
        f"# {name}",
        "",
        f"A network for `Uno-v0` with belief features **{belief}**, made by {_algorithm(config)}. "
        "Use it anywhere a player is named:",
        "",
        "```bash",
        f".venv/bin/uno-evaluate {name} --opponents random rule",
        f".venv/bin/uno-play --opponent {name}",
        "```",
        "",
        "```python",
        "from agents.ppo import PPOPolicy",
        "import gymnasium as gym, uno_env",
        f'env = gym.make("Uno-v0", opponent=PPOPolicy.load("models/{name}/model.zip"))',
        "```",
        "",
        "## Training",
        "",
        f"* config: [`config.yaml`](config.yaml) (`{config['name']}`, seed {config['seed']}); "
        f"reproduce with `.venv/bin/uno-train configs/{config['name']}.yaml`",
        f"* network: {policy['actor']} actor, MLP {policy['net_arch']} ({policy['activation']})",
        *_stages(config, info),
        f"* shipped checkpoint: step {settings['steps']:,} (evaluations in [`evaluations.jsonl`](evaluations.jsonl) "
        "when the run had PPO steps)",
        f"* time: {minutes:.1f} minutes in all, on {info['machine']} ({len(info['sessions'])} session(s): "
        "[`run_info.json`](run_info.json))",
        *(f"* note on session {i + 1}: {session['note']}" for i, session in enumerate(info["sessions"])
          if "note" in session),
        "",
        "## Evaluation",
        "",
        f"{final['pairs']} deal pairs per opponent (each deal played twice, seats swapped; deals not used to pick",
        f"the checkpoint; seed {final['seed']}). Win rate counts a draw as half; 95% CI: paired t-interval over",
        "deal pairs.",
        "",
        (run_dir / "final_eval.md").read_text().strip(),
        "",
    ]
    return "\n".join(lines)


def _algorithm(config: dict) -> str:
    """What made the network, in a few words, from the run's resolved config."""
    if (config.get("expert_iteration") or {}).get("start") is not None:
        return "expert iteration"
    if (config.get("distil") or {}).get("labels"):
        return "distillation of expert iteration's labels"
    return "MaskablePPO"


def _stages(config: dict, info: dict) -> list[str]:
    """The card's lines for each stage the run went through: expert iteration or distillation, then PPO."""
    lines = []
    expert = config.get("expert_iteration") or {}
    if expert.get("start") is not None:
        lines.append(f"* expert iteration: {expert['generations']} generations of {expert['games']:,} games from "
                     f"`{expert['start']}`, the search at {expert['simulations']} simulations over its "
                     f"{expert['belief']} belief")
    distil = config.get("distil") or {}
    if distil.get("labels"):
        lines.append(f"* distillation: {len(distil['labels'])} label folders, {distil['epochs']} epochs")
    if config["total_timesteps"]:
        ppo = config["ppo"]
        phases = "; ".join(f"until {p['until']:.0%} of the run: {p['mix']}" for p in config["opponents"])
        lines.append(f"* MaskablePPO: {config['total_timesteps']:,} steps over {config['n_envs']} envs, learning rate "
                     f"{ppo['learning_rate']} ({ppo['lr_schedule']}), n_steps {ppo['n_steps']}, batch "
                     f"{ppo['batch_size']}, {ppo['n_epochs']} epochs, gamma {ppo['gamma']}, entropy {ppo['ent_coef']}; "
                     f"opponents: {phases}")
    return lines


def ship(run_dir: str | Path, name: str, models_dir: Path = MODELS_DIR) -> Path:
    """Copy a finished run into ``models_dir / name`` with its model card; returns the folder.

    Raises ``ValueError`` naming the missing file when the run has not finished (no best model or
    final evaluation).
    """
    run_dir = Path(run_dir)
    for needed in ("best_model.zip", "config.yaml", "run_info.json", "final_eval.json", "final_eval.md"):
        if not (run_dir / needed).is_file():
            raise ValueError(f"{run_dir} has no {needed}: ship a run that finished (with eval.final_pairs > 0)")
    target = models_dir / name
    target.mkdir(parents=True, exist_ok=True)
    for source, shipped in _COPIED.items():
        if (run_dir / source).is_file():
            shutil.copyfile(run_dir / source, target / shipped)
    (target / "README.md").write_text(model_card(name, run_dir))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m train.cli.ship RUN_DIR NAME``."""
    description, epilog = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(prog="python -m train.cli.ship", description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="a finished training run folder")
    parser.add_argument("name", help="the agent's name: its folder under models/")
    args = parser.parse_args(argv)
    try:
        print(ship(args.run_dir, args.name))
    except ValueError as error:
        print(f"ship: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
