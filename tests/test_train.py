"""Training runs end to end (train.training.trainer, train.cli.train) on tiny configs, and the potential-based reward
shaping.

Every run here is a few hundred steps of a 16-unit network, or a few games of expert iteration: the tests check the
run folder, the TensorBoard scalars, resuming, self-play, expert iteration and belief runs, not that the agent
learns.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from sb3_contrib import MaskablePPO
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.ppo import PPOPolicy, read_settings
from train.cli.train import main
from train.config import ConfigError, TrainConfig, config_to_dict, load_config, parse_config
from train.training import expert_iteration
from train.training.expert_iteration import run_expert_iteration
from train.training.sb3_ppo import CardCountShaping, belief_log_loss
from train.training.tensorboard import ResumedTensorBoard
from train.training.trainer import train
from uno_env.env import UnoEnv
from uno_env.opponents import RulePolicy
from uno_env.policy import Needs

TINY: dict[str, Any] = {
    "name": "tiny", "seed": 0, "total_timesteps": 256, "n_envs": 2, "vec_env": "dummy", "checkpoint_every": 128,
    "progress_bar": False,
    "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 1},
    "policy": {"net_arch": [16]},
    "opponents": [{"mix": {"random": 1}}],
    "eval": {"every": 128, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0},
}


def tiny(**changes: Any) -> dict[str, Any]:
    """The TINY config with top-level keys replaced and sections merged: ``tiny(env={"belief": "counting"})``."""
    data = copy.deepcopy(TINY)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


def scalars(run: Path) -> dict[str, list[tuple[int, float]]]:
    """Every TensorBoard scalar of a run folder (all sessions): tag -> [(step, value)]."""
    events = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run, trained through the uno-train command line."""
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    config = folder.parent / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    assert main([str(config), "--run-dir", str(folder), "--quiet"]) == 0
    return folder


@pytest.fixture(scope="module")
def belief_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run with card-counting belief features and the belief-quality scalars on."""
    folder = tmp_path_factory.mktemp("runs") / "counting"
    train(parse_config(tiny(name="counting", env={"belief": "counting"}, eval={"belief_games": 3})), folder,
          quiet=True)
    return folder


# ------------------------------------------------------------------------------------ one run
def test_run_folder_layout(run: Path):
    assert load_config(run / "config.yaml") == parse_config(TINY)  # resume reads it back
    assert set(yaml.safe_load((run / "config.yaml").read_text())) == set(config_to_dict(parse_config(TINY)))
    command = (run / "command.txt").read_text().splitlines()
    assert len(command) == 1 and command[0].endswith(f"uno-train {run.parent / 'tiny.yaml'} --run-dir {run} --quiet")
    assert [p.name for p in sorted((run / "checkpoints").glob("step_*.zip"))] == \
        ["step_000000128.zip", "step_000000256.zip"]
    assert (run / "best_model.zip").is_file()
    evaluations = jsonl(run / "evaluations.jsonl")
    assert [e["step"] for e in evaluations] == [128, 256]
    assert all(e["results"][0]["opponent"] == "random" and e["results"][0]["games"] == 4 for e in evaluations)
    best = max(evaluations, key=lambda e: e["mean_win_rate"])  # the first of equals
    assert (run / "best_model.zip").read_bytes() == (run / "checkpoints" / best["checkpoint"]).read_bytes()

    final = json.loads((run / "final_eval.json").read_text())
    assert final["model"] == "best_model.zip" and final["model_steps"] == best["step"]
    assert final["pairs"] == 2 and final["seed"] == parse_config(TINY).eval.seed + 1  # fresh deals
    assert [r["opponent"] for r in final["results"]] == ["random"] and final["results"][0]["games"] == 4
    assert (run / "final_eval.md").read_text().startswith("| agent | opponent |")

    info = json.loads((run / "run_info.json").read_text())
    assert info["machine"] and "expert_iteration" not in info
    assert len(info["sessions"]) == 1 and info["sessions"][0]["from_step"] == 0
    assert info["sessions"][0]["to_step"] == 256


def test_checkpoints_record_the_env_settings(run: Path):
    settings = read_settings(run / "checkpoints" / "step_000000128.zip")
    assert settings["belief"] == "none" and settings["steps"] == 128 and settings["config"] == "tiny"
    assert settings["n_particles"] == 200 and settings["first_player"] == "random"
    assert read_settings(run / "checkpoints" / "step_000000256.zip")["steps"] == 256


def test_tensorboard_scalars(run: Path):
    tags = scalars(run)
    for tag in ("eval/win_rate/random", "eval/mean_win_rate", "eval/game_length", "final/win_rate/random",
                "train/win_rate/random", "rollout/ep_rew_mean"):
        assert tag in tags, f"{tag} not in {sorted(tags)}"
    assert [step for step, _ in tags["eval/mean_win_rate"]] == [128, 256]
    evaluations = jsonl(run / "evaluations.jsonl")
    assert [value for _, value in tags["eval/win_rate/random"]] == pytest.approx(
        [e["results"][0]["win_rate"] for e in evaluations])
    assert all(length > 1 for _, length in tags["eval/game_length"])
    assert not any(tag.startswith("belief/") for tag in tags)  # belief="none": nothing to measure


def test_resume_continues_from_the_last_checkpoint(run: Path, tmp_path: Path):
    resumed = tmp_path / "tiny"
    shutil.copytree(run, resumed)
    assert main(["--resume", str(resumed), "--set", "total_timesteps=512", "--quiet"]) == 0

    assert [p.name for p in sorted((resumed / "checkpoints").glob("step_*.zip"))] == \
        [f"step_{step:09d}.zip" for step in (128, 256, 384, 512)]
    assert read_settings(resumed / "checkpoints" / "step_000000512.zip")["steps"] == 512
    command = (resumed / "command.txt").read_text().splitlines()
    assert len(command) == 2 and command[1].endswith(f"--resume {resumed} --set total_timesteps=512 --quiet")
    info = json.loads((resumed / "run_info.json").read_text())
    assert [(s["from_step"], s["to_step"]) for s in info["sessions"]] == [(0, 256), (256, 512)]
    assert info["total_train_seconds"] == pytest.approx(sum(s["train_seconds"] for s in info["sessions"]), abs=0.11)
    assert [e["step"] for e in jsonl(resumed / "evaluations.jsonl")] == [128, 256, 384, 512]
    # Learning curves against wall time: training time counts on across sessions, never restarting from 0.
    seconds = [e["train_seconds"] for e in jsonl(resumed / "evaluations.jsonl")]
    assert seconds == sorted(seconds) and seconds[2] >= info["sessions"][0]["train_seconds"]
    assert load_config(resumed / "config.yaml").total_timesteps == 512  # the override is recorded
    # TensorBoard continues in the same folder, so the curves of both sessions line up.
    assert [step for step, _ in scalars(resumed)["eval/mean_win_rate"]] == [128, 256, 384, 512]


def test_a_resumed_sessions_event_files_sort_after_the_earlier_ones(tmp_path: Path):
    # A session resumed within the second of the last one: its files must not sort first (the counter at the
    # end of the names sorts as text, ".10" before ".9"), or TensorBoard drops the new steps (a CI run did).
    now = int(time.time())
    (tmp_path / f"events.out.tfevents.{now}.host.1.9").write_bytes(b"")
    ResumedTensorBoard(str(tmp_path), 257).close()
    names = sorted(p.name for p in tmp_path.glob("events.out.tfevents.*"))
    assert names[0].endswith(".host.1.9") and all(int(n.split(".")[3]) > now for n in names[1:])


def test_resume_when_already_done_does_nothing(run: Path, tmp_path: Path):
    resumed = tmp_path / "tiny"
    shutil.copytree(run, resumed)
    train(load_config(resumed / "config.yaml"), resumed, resume=True, command="again", quiet=True)
    info = json.loads((resumed / "run_info.json").read_text())
    assert [(s["from_step"], s["to_step"]) for s in info["sessions"]] == [(0, 256)]  # no repeated session
    assert len(list((resumed / "checkpoints").glob("step_*.zip"))) == 2
    assert len(jsonl(resumed / "evaluations.jsonl")) == 2  # the last checkpoint was evaluated already


@pytest.mark.parametrize(("override", "named"), [
    ("env.belief=counting", ["belief='none'", "belief='counting'"]),
    ("policy.net_arch=[32]", ["policy kwargs", "[16]", "[32]"]),
])
def test_resume_refuses_settings_unlike_the_checkpoints(run: Path, tmp_path: Path, override: str, named: list[str],
                                                        capsys: pytest.CaptureFixture[str]):
    resumed = tmp_path / "tiny"
    shutil.copytree(run, resumed)
    before = {name: (resumed / name).read_bytes() for name in ("config.yaml", "command.txt", "run_info.json")}
    assert main(["--resume", str(resumed), "--set", override, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"config error: cannot resume {resumed}" in err and all(part in err for part in named), err
    # The failed command left the run as it was, so a plain --resume still works.
    assert {name: (resumed / name).read_bytes() for name in before} == before
    assert len(list((resumed / "checkpoints").glob("step_*.zip"))) == 2


# ------------------------------------------------------------------------------------ other run kinds
def test_self_play_with_reward_shaping(tmp_path: Path):
    """Self-play, with the options no other run here uses: shaping, a linear learning rate, target_kl, relu."""
    folder = tmp_path / "self"
    config = parse_config(tiny(name="self", opponents=[{"mix": {"random": 1, "self": 1}}],
                               self_play={"pool_size": 2}, env={"reward_shaping": 0.05, "first_player": "agent"},
                               ppo={"lr_schedule": "linear", "target_kl": 0.05}, policy={"activation": "relu"}))
    assert config.uses_self_play()
    train(config, folder, quiet=True)
    # The pool starts with the untrained model, so the first games can already draw "self".
    assert [p.name for p in sorted((folder / "checkpoints").glob("step_*.zip"))] == \
        ["step_000000000.zip", "step_000000128.zip", "step_000000256.zip"]
    tags = scalars(folder)
    assert "train/win_rate/self" in tags and "train/win_rate/random" in tags
    learning_rates = [rate for _, rate in tags["train/learning_rate"]]
    assert learning_rates == sorted(learning_rates, reverse=True) and learning_rates[-1] < 3e-4  # decaying
    assert read_settings(folder / "best_model.zip")["first_player"] == "agent"
    assert json.loads((folder / "run_info.json").read_text())["sessions"][0]["to_step"] == 256


def test_policy_init_starts_the_run_from_a_checkpoints_weights(run: Path, tmp_path: Path):
    """policy.init: the new run's network starts from the checkpoint's weights (with a learning rate of 1e-12 PPO
    keeps them to 1e-6, so every checkpoint of the run holds them, where fresh weights differ by tenths); a checkpoint
    of another network is refused, naming the key."""
    start = run / "checkpoints" / "step_000000128.zip"
    folder = tmp_path / "init"
    train(parse_config(tiny(name="init", policy={"net_arch": [16], "init": str(start)}, ppo={"learning_rate": 1e-12},
                            eval={"every": 0})), folder, quiet=True)
    expected = MaskablePPO.load(start, device="cpu").policy.state_dict()
    for checkpoint in sorted((folder / "checkpoints").glob("step_*.zip")):
        weights = MaskablePPO.load(checkpoint, device="cpu").policy.state_dict()
        assert all(torch.allclose(weights[key], expected[key], atol=1e-6) for key in expected), checkpoint.name
    with pytest.raises(ConfigError, match=r"policy.init: .* is not this config's network: .*net_arch \[16\]"):
        train(parse_config(tiny(name="other", policy={"net_arch": [32], "init": str(start)})), tmp_path / "other",
              quiet=True)
    with pytest.raises(ConfigError, match="policy.init must name a checkpoint"):
        parse_config(tiny(policy={"init": "no-such-agent"}))


def test_a_run_killed_as_it_began_starts_over_in_its_folder(tmp_path: Path):
    # What a kill -9 between the lock and the run's config.yaml leaves: a stale lock file and an empty folder.
    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / ".lock").touch()
    train(parse_config(tiny()), folder, quiet=True)
    assert (folder / "config.yaml").is_file() and any((folder / "checkpoints").glob("step_*.zip"))
    with pytest.raises(ConfigError, match="not empty"):
        train(parse_config(tiny()), folder, quiet=True)


def test_expert_iteration_labels_with_the_search_and_trains_end_to_end(tmp_path: Path):
    folder = tmp_path / "search-values"
    config = parse_config(tiny(name="search-values", total_timesteps=0, policy={"net_arch": [32]},
                               eval={"every": 0}, expert_iteration={"start": "rule", "games": 4, "simulations": 40,
                                                                   "epochs": 2, "batch_size": 64}))
    train(config, folder, quiet=True)
    info = json.loads((folder / "run_info.json").read_text())
    metrics = info["expert_iteration"]
    assert metrics["examples"] > 10 and "generation_1/gain" in metrics
    # total_timesteps 0: expert iteration's network is the run's model, evaluated at the end like any other
    assert [p.name for p in (folder / "checkpoints").iterdir()] == ["step_000000000.zip"]
    assert json.loads((folder / "final_eval.json").read_text())
    assert "expert_iteration/generation_1/gain" in scalars(folder) and "final/win_rate/random" in scalars(folder)
    # the run's time is its whole wall time: expert iteration and the final evaluation, not PPO's alone (none here)
    assert info["total_train_seconds"] >= metrics["seconds"] > 0


def test_expert_iteration_asks_the_search_the_config_names(tmp_path: Path):
    config = parse_config(tiny(total_timesteps=0, policy={"net_arch": [16]},
                               expert_iteration={"start": "rule", "games": 2, "simulations": 30,
                                                 "belief": "particles", "epochs": 1, "batch_size": 64}))
    model = MaskablePPO("MlpPolicy", UnoEnv(), device="cpu", policy_kwargs={"net_arch": [16]})
    run_expert_iteration(model, config, seed=0, workdir=tmp_path)
    # The shard's job is what the labelling workers ran (labelling.label_shard); each shard records it.
    with np.load(tmp_path / "generation_1" / "shard_00000.npz") as shard:
        settings = json.loads(str(shard["settings"]))
    assert (settings["expert_iteration.simulations"], settings["expert_iteration.belief"]) == (30, "particles")
    assert settings["generation"] == 1 and settings["base player"] == "rule"


def test_generations_from_scratch_fit_small_relu_networks_before_the_runs_own(tmp_path: Path):
    # From random: generation 1's search rolls out random on its seat, generation 2's the compiled generation-1
    # network, a featureless ReLU network of generation_net_arch; the last generation fits the run's network (here
    # with features).
    config = parse_config(tiny(total_timesteps=0, env={"belief": "counting"}, policy={"net_arch": [16]},
                               expert_iteration={"start": "random", "games": 4, "generations": 2,
                                         "generation_net_arch": [8, 8], "simulations": 30, "epochs": 1,
                                         "batch_size": 64}))
    model = MaskablePPO("MlpPolicy", UnoEnv(belief="counting"), device="cpu", policy_kwargs={"net_arch": [16]})
    before = [p.detach().clone() for p in model.policy.parameters()]
    metrics = run_expert_iteration(model, config, seed=0, workdir=tmp_path)
    assert "generation_1/gain" in metrics and "generation_2/gain" in metrics
    network = PPOPolicy.load(tmp_path / "generation_1.zip")
    assert network.belief == "none" and network.network.net_arch == {"pi": [8, 8], "vf": [8, 8]}
    assert isinstance(network.network.activation_fn(), torch.nn.ReLU)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))


# ------------------------------------------------------------------------------------ beliefs
def test_belief_run_records_its_belief(belief_run: Path):
    for checkpoint in (*sorted((belief_run / "checkpoints").glob("step_*.zip")), belief_run / "best_model.zip"):
        settings = read_settings(checkpoint)
        assert settings["belief"] == "counting" and settings["observation_size"] > 294


def test_belief_quality_scalars(belief_run: Path):
    tags = scalars(belief_run)
    assert [step for step, _ in tags["belief/log_loss"]] == [128, 256]
    assert [step for step, _ in tags["belief/log_loss_counting"]] == [128, 256]
    for (_, loss), (_, counting) in zip(tags["belief/log_loss"], tags["belief/log_loss_counting"], strict=True):
        assert 0 < loss < 2 and loss == pytest.approx(counting)  # the belief *is* counting here
    evaluations = jsonl(belief_run / "evaluations.jsonl")
    assert [e["belief"]["log_loss"] for e in evaluations] == pytest.approx([v for _, v in tags["belief/log_loss"]])


class ParticleRule(RulePolicy):
    """The rule player declaring particle-filter belief features (it ignores them)."""

    needs = Needs(belief="particles")


def test_belief_log_loss_of_particles_beats_counting():
    result = belief_log_loss(ParticleRule(), "rule", games=5, seed=0, n_particles=100)
    # The filter also learns from the opponent's draws and plays, so it predicts its hand better.
    assert 0 < result["log_loss"] < result["log_loss_counting"]
    assert belief_log_loss(ParticleRule(), "rule", games=5, seed=0, n_particles=100) == result  # seeded


def test_belief_log_loss_needs_a_belief():
    with pytest.raises(ValueError, match="belief='none'"):
        belief_log_loss("rule", "random", games=1, seed=0)


# ------------------------------------------------------------------------------------ reward shaping
class RawReward(gym.Wrapper):
    """Keeps the unshaped reward of each step."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.raw = reward
        return obs, reward, terminated, truncated, info


def shaped_episode(seed: int, weight: float, gamma: float) -> dict[str, Any]:
    """One episode of random legal play: shaped and raw rewards, potentials, the final info."""
    raw_env = RawReward(UnoEnv(opponent="random"))
    env = CardCountShaping(raw_env, weight, gamma)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    potentials = [weight * (info["opponent_hand_size"] - len(info["hand"]))]
    shaped, raw = [], []
    terminated = truncated = False
    while not (terminated or truncated):
        action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        _, reward, terminated, truncated, info = env.step(action)
        shaped.append(reward)
        raw.append(raw_env.raw)
        potentials.append(0.0 if terminated else weight * (info["opponent_hand_size"] - len(info["hand"])))
    return {"shaped": np.array(shaped), "raw": np.array(raw), "phi": np.array(potentials), "info": info}


@pytest.mark.parametrize("seed", range(6))
def test_shaping_telescopes_with_gamma_one(seed: int):
    episode = shaped_episode(seed, weight=0.1, gamma=1.0)
    # sum of (phi(next) - phi(now)) = phi(end) - phi(start), and phi(end) = 0 once the game is over.
    assert episode["shaped"].sum() == pytest.approx(episode["raw"].sum() - episode["phi"][0])
    assert episode["phi"][-1] == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_shaping_with_discounting(seed: int):
    gamma = 0.9
    episode = shaped_episode(seed, weight=0.1, gamma=gamma)
    terms, phi = episode["shaped"] - episode["raw"], episode["phi"]
    # Undiscounted, the sum is -phi(start) plus a gamma-dependent term; discounted, it is exactly -phi(start).
    assert terms.sum() == pytest.approx(-phi[0] - (1 - gamma) * phi[1:-1].sum())
    assert (gamma ** np.arange(len(terms)) * terms).sum() == pytest.approx(-phi[0])


def test_shaping_pays_per_card_and_leaves_the_outcome_alone():
    starts, outcomes = [], []
    for seed in range(6):
        episode = shaped_episode(seed, weight=0.1, gamma=1.0)
        info = episode["info"]
        raw_final = episode["raw"][-1]
        assert info["is_success"] == (raw_final == 1.0) and info["is_success"] == (info["winner"] == "agent")
        assert set(np.unique(episode["raw"])) <= {-1.0, 0.0, 1.0} and np.abs(episode["raw"][:-1]).sum() == 0
        # Each card shed or inflicted moves the potential by the weight.
        assert np.allclose(np.round(np.diff(episode["phi"][:-1]) / 0.1), np.diff(episode["phi"][:-1]) / 0.1)
        starts.append(episode["phi"][0])
        outcomes.append(info["winner"])
    assert any(start != 0 for start in starts)  # the opponent sometimes moves first, so phi(start) varies
    assert {"agent", "opponent"} <= set(outcomes)


def test_training_env_applies_shaping_only_when_asked():
    from train.training.sb3_ppo import make_env

    options: dict[str, Any] = config_to_dict(TrainConfig(total_timesteps=1))["env"]
    plain = make_env(options, {"random": 1.0}, "none")
    shaped = make_env(dict(options, reward_shaping=0.1), {"random": 1.0}, "none", gamma=0.95)

    def wrappers(env: gym.Env) -> list[type]:
        kinds = []
        while isinstance(env, gym.Wrapper):
            kinds.append(type(env))
            env = env.env
        return kinds

    assert CardCountShaping not in wrappers(plain)
    layer = next(env for env in [shaped, shaped.env, shaped.env.env] if isinstance(env, CardCountShaping))
    assert layer.weight == 0.1 and layer.gamma == 0.95


def test_a_killed_run_keeps_its_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """run_info.json is written at every checkpoint, so a run that dies keeps its steps and time (unfinished)."""
    import train.training.trainer as trainer

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "final_evaluation", killed)
    with pytest.raises(KeyboardInterrupt):
        train(parse_config(tiny()), tmp_path / "killed", quiet=True)
    session, = json.loads((tmp_path / "killed" / "run_info.json").read_text())["sessions"]
    assert (session["from_step"], session["to_step"], session["finished"]) == (0, 256, False)
    assert session["train_seconds"] > 0


def test_a_finished_run_says_so(run: Path):
    assert [s["finished"] for s in json.loads((run / "run_info.json").read_text())["sessions"]] == [True]


# ------------------------------------------------------------------------------------ shipping
def test_ship_makes_a_model_folder_with_its_card(run: Path, tmp_path: Path):
    """train.cli.ship copies the best model and the run's records, and the card shows the final evaluation table."""
    from train.cli.ship import ship
    from train.policies import resolve_policy

    folder = ship(run, "tiny-agent", models_dir=tmp_path)
    assert folder == tmp_path / "tiny-agent"
    assert (folder / "model.zip").read_bytes() == (run / "best_model.zip").read_bytes()
    for name in ("config.yaml", "run_info.json", "final_eval.json", "final_eval.md", "evaluations.jsonl"):
        assert (folder / name).read_bytes() == (run / name).read_bytes()
    card = (folder / "README.md").read_text()
    assert card.startswith("# tiny-agent\n")
    assert (run / "final_eval.md").read_text().strip() in card
    assert "belief features **none**, made by MaskablePPO" in card and "* MaskablePPO: " in card
    assert "expert iteration" not in card and "warm start" not in card
    assert f"step {read_settings(run / 'best_model.zip')['steps']:,}" in card
    player = resolve_policy(str(folder))
    assert player.belief == "none" and player.name == "tiny-agent"


def test_ship_refuses_an_unfinished_run(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A run without its final evaluation is refused with the missing file named, and nothing is written."""
    from train.cli.ship import main as ship_main
    from train.cli.ship import ship

    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished)
    (unfinished / "final_eval.json").unlink()
    with pytest.raises(ValueError, match="has no final_eval.json"):
        ship(unfinished, "x", models_dir=tmp_path / "models")
    assert not (tmp_path / "models").exists()
    assert ship_main([str(unfinished), "x"]) == 2
    assert "has no final_eval.json" in capsys.readouterr().err


def test_a_run_folder_in_use_is_refused(tmp_path: Path):
    """While one process trains a folder (holding RUN_DIR/.lock), another train() of that folder is refused."""
    import fcntl

    folder = tmp_path / "busy"
    folder.mkdir()
    with open(folder / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ConfigError, match="in use by another training process"):
            train(parse_config(tiny()), folder, quiet=True)
    assert [p.name for p in folder.iterdir()] == [".lock"]  # the holder's lock, untouched
    train(parse_config(tiny(eval={"every": 0, "final_pairs": 0})), folder, quiet=True)  # free again: it trains
    assert (folder / "best_model.zip").exists() and not (folder / ".lock").exists()


def test_generations_are_gated_logged_and_fitted_on_a_window_of_generations(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    # Three generations from random; each gated on 3 deal pairs. Generation 2's network loses every game to
    # generation 1's (the evaluation is rigged), so generation 3 keeps improving on generation 1's network. Each fit
    # sees two generations' labels,
    # the last (the run's network) three (last_window).
    config = parse_config(tiny(total_timesteps=0, policy={"net_arch": [16]}, eval={"workers": 1},
                               expert_iteration={"start": "random", "games": 4, "shard_games": 2,
                                         "generations": 3, "generation_net_arch": [8], "simulations": 20, "epochs": 1,
                                         "batch_size": 64, "gate_pairs": 3, "window": 2, "last_window": 3,
                                         "generation_simulations": [20, 10, 30]}))
    real_evaluate = expert_iteration.evaluate
    asked: dict[str, list[str]] = {}

    def rigged(network, opponents, *args, **kwargs):
        asked[Path(network).name] = [Path(opponent).name for opponent in opponents]
        results = real_evaluate(network, opponents, *args, **kwargs)
        if network.endswith("generation_2.zip"):
            results[-1].pair_scores[:] = 0.0  # lost every game to generation 1's network
        return results

    monkeypatch.setattr(expert_iteration, "evaluate", rigged)
    fitted: list[int] = []  # how many positions each generation's fit saw
    real_fit = expert_iteration._fit

    def counted(model, config, own_network, observations, *args):
        fitted.append(len(observations))
        return real_fit(model, config, own_network, observations, *args)

    monkeypatch.setattr(expert_iteration, "_fit", counted)
    logged: dict[int, dict[str, float]] = {}
    model = MaskablePPO("MlpPolicy", UnoEnv(), device="cpu", policy_kwargs={"net_arch": [16]})
    metrics = run_expert_iteration(model, config, seed=0, workdir=tmp_path, log=logged.__setitem__)
    assert sorted(logged) == [1, 2, 3]
    assert {"win_rate/rule", "win_rate/random", "held_out_loss", "held_out_agreement", "positions_per_second",
            "seconds"} <= set(logged[1]) and "win_rate/previous" not in logged[1]
    assert logged[2]["win_rate/previous"] == 0.0 and logged[2]["kept"] == 0 and logged[3]["kept"] == 1
    # each generation plays the network it improved on: generation 3 improved on generation 1's, not the rejected 2's
    assert asked == {"generation_1.zip": ["rule", "random"],
                     "generation_2.zip": ["rule", "random", "generation_1.zip"],
                     "generation_3.zip": ["rule", "random", "generation_1.zip"]}
    bases = [json.loads((tmp_path / f"generation_{r}" / "labels.json").read_text())["settings"]["base player"]
             for r in (2, 3)]
    digest = hashlib.sha256((tmp_path / "generation_1.zip").read_bytes()).hexdigest()
    assert bases[0] == bases[1] == "sha256:" + digest
    # each generation's search ran its own simulations (generation_simulations), and its labels say so
    assert [json.loads((tmp_path / f"generation_{r}" / "labels.json").read_text())["settings"]
            ["expert_iteration.simulations"] for r in (1, 2, 3)] == [20, 10, 30]
    positions = [sum(s["positions"] for s in json.loads((tmp_path / f"generation_{r}" / "labels.json").read_text())
                     ["shards"].values()) for r in (1, 2, 3)]
    assert fitted == [positions[0], positions[0] + positions[1], sum(positions)] == [*fitted[:2], metrics["examples"]]


def tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of one TensorBoard folder (tag -> [(step, value)]), as TensorBoard's own reader reads it."""
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_a_run_logs_its_generations_and_every_fits_losses_to_tensorboard(tmp_path: Path):
    folder = tmp_path / "run"
    config = parse_config(tiny(name="generations", total_timesteps=0, policy={"net_arch": [16]},
                               eval={"every": 0, "final_pairs": 0},
                               expert_iteration={"start": "rule", "games": 4, "shard_games": 2, "generations": 3,
                                                 "simulations": 20, "epochs": 2, "batch_size": 64, "gate_pairs": 2}))
    train(config, folder, quiet=True)
    generations = tensorboard_scalars(folder / "tb" / "generations")
    assert {"generation/win_rate/previous", "generation/held_out_loss"} <= set(generations)
    for tag in ("generation/win_rate/rule", "generation/win_rate/rule/low", "generation/win_rate/rule/high"):
        assert [step for step, _ in generations[tag]] == [1, 2, 3], tag
    assert all(0 <= low <= rate <= high <= 1 for (_, low), (_, rate), (_, high) in zip(
        generations["generation/win_rate/rule/low"], generations["generation/win_rate/rule"],
        generations["generation/win_rate/rule/high"], strict=True))
    # every epoch of every generation's fit, on one step axis that keeps increasing over the run
    fits = tensorboard_scalars(folder / "tb" / "fit")
    for tag in ("fit/actor_loss", "fit/value_loss", "fit/held_out_loss"):
        assert [step for step, _ in fits[tag]] == [1, 2, 3, 4, 5, 6], tag
        assert all(value >= 0 for _, value in fits[tag])


def test_a_run_of_the_earlier_layout_is_refused_on_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A run folder of the earlier schema (its config's ``pretrain`` section, its pretrain/round_K folders) is refused
    with what changed, and left as it was."""
    run = tmp_path / "old"
    (run / "pretrain" / "round_1").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(tiny(total_timesteps=0, pretrain={"teacher": "rule"})))
    assert main(["--resume", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'pretrain'" in err and "'expert_iteration'" in err and "start a new run" in err
    # its config converted by hand: the folder's layout is still refused, naming it
    (run / "config.yaml").write_text(yaml.safe_dump(tiny(total_timesteps=0, expert_iteration={"start": "rule"})))
    assert main(["--resume", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"cannot resume {run}" in err and "pretrain/round_K" in err and "expert_iteration/generation_K" in err
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "pretrain"]


def test_search_leaf_moves_guide_the_labels_once_a_network_is_the_base(tmp_path: Path):
    # Generation 1's player is random (no critic): its labels are the unguided ones. Generation 2's is generation 1's
    # network,
    # whose critic then scores the search's leaves: other labels for the same positions.
    labels = {}
    for leaf_moves in (None, 0):
        config = parse_config(tiny(total_timesteps=0, policy={"net_arch": [16]}, eval={"workers": 1},
                                   expert_iteration={"start": "random", "games": 4,
                                             "shard_games": 2, "generations": 2, "generation_net_arch": [8],
                                             "simulations": 20, "leaf_moves": leaf_moves,
                                             "epochs": 1, "batch_size": 64}))
        folder = tmp_path / str(leaf_moves)
        model = MaskablePPO("MlpPolicy", UnoEnv(), device="cpu", policy_kwargs={"net_arch": [16]})
        run_expert_iteration(model, config, seed=0, workdir=folder)
        labels[leaf_moves] = [np.load(folder / f"generation_{r}" / "shard_00000.npz")["values"] for r in (1, 2)]
    assert np.array_equal(labels[None][0], labels[0][0], equal_nan=True)
    assert labels[None][1].shape == labels[0][1].shape  # the same positions (the base's moves do not change)...
    assert not np.array_equal(labels[None][1], labels[0][1], equal_nan=True)  # ...valued otherwise


def test_a_model_card_names_the_algorithm_that_made_the_network():
    """The card says expert iteration, distillation or MaskablePPO by what the run's config switched on."""
    from train.cli.ship import _algorithm, _stages

    expert = {"start": "rule", "generations": 5, "games": 1600, "simulations": 400, "belief": "particles"}
    config = {"expert_iteration": expert, "distil": {"labels": []}, "total_timesteps": 0}
    assert _algorithm(config) == "expert iteration"
    assert _stages(config, {}) == ["* expert iteration: 5 generations of 1,600 games from `rule`, the search at 400 "
                                   "simulations over its particles belief"]
    config = {"expert_iteration": {"start": None}, "distil": {"labels": ["a", "b"], "epochs": 30}, "total_timesteps": 0}
    assert _algorithm(config) == "distillation of expert iteration's labels"
    assert _stages(config, {}) == ["* distillation: 2 label folders, 30 epochs"]
    assert _algorithm({"expert_iteration": {"start": None}, "distil": {"labels": []}}) == "MaskablePPO"
