"""The belief ladder on one set of labels: none, counting, particles, policy-aware, and the opponent's true hand.

    python benchmarks/belief_bound.py features runs/default-gen2/pretrain/round_1 --out runs/bound/features.npz
    python benchmarks/belief_bound.py fit runs/bound/features.npz --source particles --seed 1 \
        --out runs/bound/particles-s1
    python benchmarks/belief_bound.py table runs/bound/*-s*

``features`` replays the games of a labelled round (the shards of ``train.training.labelling``: ``rule`` as the base
player against ``rule``; their games depend on the shard seeds alone, not on the search that labelled them) and
records, at every labelled position, each source's 60 feature channels (:data:`true_hand_oracle.SOURCES`): card
counting, the particle filter, the particle filter told the opponent plays ``rule`` (true of every labelled game),
and the oracle, the opponent's true hand. It checks that each replayed position's base encoding is the shard's,
bit for bit, so the labels are the ones the search made on those very positions.

``fit`` fits the search-values recipe's network (:func:`train.training.rollout_values.fit`: logits regress the
labels, no bonus) on the base encoding plus one source's features, and evaluates it greedily on ``--pairs`` deal
pairs against ``rule`` and ``random`` in this process, its features computed by the same code as in the replay
(:class:`true_hand_oracle.LadderPlayer`; ``aware`` is told the opponent it meets). OUT/report.json holds the
metrics and the evaluations in ``benchmarks/fit_seeds.py``'s format, with each pair's scores.

``table`` prints, per source and opponent, the mean over fit seeds with a t-interval over seeds, an interval over
seeds and pairs (a bootstrap resampling both), and the share of the gap from ``none`` to the true hand each belief
closes, with its bootstrap interval.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from scipy import stats
from true_hand_oracle import (
    MEASUREMENT_ONLY,
    ORACLE,
    SOURCES,
    FeatureSource,
    LadderPlayer,
    fitted_policy,
    play_pairs,
    save_measurement_network,
)

from agents.files import file_digest
from agents.ppo import PPOPolicy, load_network, read_settings, save_model
from train.evaluation.matches import MatchResult, make_executor
from train.training.labelling import LabelJob
from train.training.rollout_values import ACTIVATIONS, BasePlayer, fit, fit_values
from uno_env.cards import NUM_ACTIONS
from uno_env.core import legal_actions_into, pack_state, seed_stream
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.observation import BASE_SIZE, encode_base
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Needs
from uno_env.view import PublicView

_OPPONENTS = {"rule": RulePolicy, "random": RandomPolicy}


class _Replayer:
    """The labelled seat's base player (``rule`` or a network) as the labeller played it
    (``train.training.rollout_values``), recording the base encoding and the chosen sources' features at each
    decision with a choice."""

    needs = Needs("none")

    def __init__(self, base: str, sources: tuple[str, ...], particles: dict[str, int], seed: int) -> None:
        self.base = BasePlayer(base)
        self.chosen = sources
        self.particles = particles
        self.rng = np.random.default_rng(seed)
        self.stream = seed_stream(0)
        self.legal = np.empty(NUM_ACTIONS, dtype=np.int64)
        self.game: Game | None = None
        self.sources: list[FeatureSource] = []
        self.records: list[tuple[np.ndarray, list[np.ndarray]]] = []

    def deal(self, game: Game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.sources = []

    def observe_start(self, view: PublicView) -> None:
        self.sources = [FeatureSource(source, self.rng, RulePolicy(), self.particles[source])
                        for source in self.chosen]
        for source in self.sources:
            source.start(view)

    def act(self, view: PublicView) -> int:
        for source in self.sources:
            source.update(view)
        game = self.game
        state = pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current, game.pending_draw)
        n = legal_actions_into(state, self.legal)
        if n == 1:
            return int(self.legal[0])
        self.records.append((encode_base(view), [source.features(view, game) for source in self.sources]))
        return self.base.move(state, self.legal, n, self.stream)


def replay_shard(job: LabelJob, shard: int, sources: tuple[str, ...], particles: dict[str, int],
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The base encodings and the sources' features at the labelled positions of one shard, replayed as
    ``rollout_values.collect`` played them (the same games from the shard's seed, the labelled seat alternating)."""
    replayer = _Replayer(job.base, sources, particles, job.shard_seed(shard))
    rng = np.random.default_rng(job.shard_seed(shard))
    for game in range(job.shard_size(shard)):
        seats = (replayer, RulePolicy()) if game % 2 == 0 else (RulePolicy(), replayer)
        play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)), on_deal=replayer.deal)
    base = np.array([record[0] for record in replayer.records])
    return base, {source: np.array([record[1][i] for record in replayer.records], np.float32)
                  for i, source in enumerate(sources)}


def features_command(args: argparse.Namespace) -> None:
    """Replay a labelled round's shards and write their labels with every source's features."""
    settings = json.loads((args.round / "labels.json").read_text())["settings"]
    if settings["env.belief"] != "none":
        raise SystemExit(f"{args.round}: only rounds labelled without belief features replay here, got belief "
                         f"{settings['env.belief']!r}")
    base = settings["base player"]
    if base != "rule":  # a network's round names its base by the checkpoint's digest: --base must be that file
        if args.base is None or file_digest(args.base) != base:
            raise SystemExit(f"{args.round}: its base player is the checkpoint {base}; pass that file as --base "
                             f"(got {args.base})")
        base = str(args.base)
    sources = tuple(source for source in args.sources if source != "none")
    job = LabelJob(settings["pretrain.games"], settings["pretrain.shard_games"], settings["seed"],
                   settings["round"], 0, "none", base)
    shards = range(job.shards if args.shards is None else min(args.shards, job.shards))
    parts: dict[str, list[np.ndarray]] = {"values": [], "moves": [], "base": [], **{source: [] for source in sources}}
    started = time.perf_counter()
    with make_executor(args.workers) as pool:
        replays = pool.map(replay_shard, [job] * len(shards), shards, [sources] * len(shards),
                           [particles_of(args)] * len(shards))
        for shard, (base, features) in zip(shards, replays, strict=True):
            _check_and_add(args.round, shard, base, features, parts)
            print(f"shard {shard}: {len(base)} positions, {time.perf_counter() - started:.0f} s", flush=True)
    arrays = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays, settings=np.array(json.dumps(
        {"round": str(args.round), "shards": len(shards), "particles": particles_of(args), **settings})))
    print(f"{len(arrays['values'])} positions from {len(shards)} shards in {time.perf_counter() - started:.0f} s "
          f"-> {args.out}")


def particles_of(args: argparse.Namespace) -> dict[str, int]:
    """Each source's particle count (the plain filter's N, the told filter's, unused by the others)."""
    return {source: args.aware_particles if source == "aware" else args.n_particles for source in SOURCES}


def _check_and_add(folder: Path, shard: int, base: np.ndarray, features: dict[str, np.ndarray],
                   parts: dict[str, list[np.ndarray]]) -> None:
    """Add a replayed shard to ``parts`` with its labels, after checking its positions are the labelled ones."""
    with np.load(folder / f"shard_{shard:05d}.npz", allow_pickle=False) as data:
        observations, values, moves = data["observations"], data["values"], data["moves"]
    if base.shape != observations[:, :BASE_SIZE].shape or not np.array_equal(base, observations[:, :BASE_SIZE]):
        raise SystemExit(f"shard {shard}: the replayed positions are not the labelled ones ({len(base)} against "
                         f"{len(observations)}); the labels cannot be paired with these features")
    for name, array in (("values", values), ("moves", moves), ("base", base), *features.items()):
        parts[name].append(array)


def fit_command(args: argparse.Namespace) -> None:
    """Fit one source's network on the shared labels (one or more replayed rounds, concatenated in order) and
    evaluate it."""
    torch.set_num_threads(1)
    parts = []
    for path in args.features:
        with np.load(path, allow_pickle=False) as data:
            base = data["base"]
            parts.append((base if args.source == "none" else np.concatenate((base, data[args.source]), axis=1),
                          data["values"], data["moves"]))
    observations, values, moves = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    # The env only shapes the network's input: 60 feature channels whatever their source.
    belief = "none" if args.source == "none" else "counting"
    if args.init is None:
        model, metrics = fit(observations, values, moves, args.epochs, args.seed, 0.0, belief, args.net_arch,
                             learning_rate=args.learning_rate, batch_size=args.batch_size)
    else:
        model = extended_model(args.init, belief, args.seed)
        metrics = fit_values(model.policy, observations, values, moves, args.epochs, args.seed, 0.0,
                             args.learning_rate, args.batch_size)
    args.out.mkdir(parents=True, exist_ok=True)
    provenance = {"config": "belief-bound", "steps": 0, "source": args.source, "seed": args.seed,
                  "init": None if args.init is None else file_digest(args.init)}
    if args.source in MEASUREMENT_ONLY:  # not settings a public loader may accept
        save_measurement_network(model, args.out / "q-network.zip", args.source, provenance)
    else:
        save_model(model, args.out / "q-network.zip", {**provenance, "belief": args.source})
    network = fitted_policy(model, args.source)
    report = {"source": args.source, "seed": args.seed, "features": [str(path) for path in args.features],
              "init": None if args.init is None else str(args.init), "net_arch": args.net_arch,
              "epochs": args.epochs, "learning_rate": args.learning_rate, "positions": len(values), **metrics,
              "evaluations": {"greedy": []}, "pair_scores": {}}
    print(json.dumps({key: report[key] for key in ("positions", *metrics)}), flush=True)
    for opponent in args.opponents:
        started = time.perf_counter()
        result: MatchResult = play_pairs_for(network, args.source, opponent, args.pairs, args.eval_seed,
                                             particles_of(args)[args.source])
        report["evaluations"]["greedy"].append({**result.to_dict(), "seconds": round(time.perf_counter() - started)})
        report["pair_scores"][opponent] = result.pair_scores.tolist()
        low, high = result.ci
        print(f"{args.source} seed {args.seed} vs {opponent}: {100 * result.score:.1f}% "
              f"({100 * low:.1f}% - {100 * high:.1f}%), {time.perf_counter() - started:.0f} s", flush=True)
    (args.out / "report.json").write_text(json.dumps(report) + "\n")


def extended_model(init: Path, belief: str, seed: int) -> MaskablePPO:
    """A model whose network is ``init``'s (a featureless checkpoint) with the 60 feature inputs added at zero
    weight: it plays as ``init`` until a fit moves the new weights."""
    settings = read_settings(init)
    if settings["belief"] != "none":
        raise SystemExit(f"{init}: --init takes a network without belief features, got {settings['belief']!r}")
    record = settings["policy"]
    model = MaskablePPO("MlpPolicy", UnoEnv(belief=belief), seed=seed, device="cpu",
                        policy_kwargs={"net_arch": record["net_arch"],
                                       "activation_fn": ACTIVATIONS[record["activation"].lower()]})
    state = model.policy.state_dict()
    with torch.no_grad():
        for name, weights in load_network(init, settings).state_dict().items():
            if weights.ndim == 2 and weights.shape[1] != state[name].shape[1]:  # a first layer: the inputs grew
                state[name].zero_()
                state[name][:, :weights.shape[1]] = weights
            else:
                state[name].copy_(weights)
    model.policy.load_state_dict(state)
    return model


def play_pairs_for(network: PPOPolicy, source: str, opponent: str, pairs: int, seed: int,
                   n_particles: int) -> MatchResult:
    """The network with its source's features against a built-in opponent (``aware`` told that opponent)."""
    return play_pairs(lambda policy: LadderPlayer(network, source, policy, n_particles), _OPPONENTS[opponent](),
                      pairs, seed, source, opponent)


def table_command(args: argparse.Namespace) -> None:
    """Per source and opponent: mean over seeds, its intervals, and the share of the none-to-oracle gap closed."""
    runs: dict[str, list[dict]] = {}
    for run in args.runs:
        if not (run / "report.json").is_file():
            print(f"belief_bound.py table: {run} has no report.json (not a finished fit run)", file=sys.stderr)
            raise SystemExit(2)
        report = json.loads((run / "report.json").read_text())
        runs.setdefault(report["source"], []).append(report)
    print("| source | held-out loss by seed | held-out label of the network's move, of rule's |")
    print("| --- | --- | --- |")
    for source in [s for s in SOURCES if s in runs]:
        losses = " / ".join(f"{r['held_out_loss']:.4f}" for r in runs[source])
        print(f"| {source} | {losses} | "
              f"{np.mean([r['held_out_value_of_network_move'] for r in runs[source]]):.3f}, "
              f"{np.mean([r['held_out_value_of_base_move'] for r in runs[source]]):.3f} |")
    rng = np.random.default_rng(args.bootstrap_seed)
    opponents = [result["opponent"] for result in next(iter(runs.values()))[0]["evaluations"]["greedy"]]
    for opponent in opponents:
        scores = {source: np.array([r["pair_scores"][opponent] for r in reports]).mean(axis=2)  # seeds x pairs
                  for source, reports in runs.items()}
        pairs = next(iter(scores.values())).shape[1]
        draws = {source: [] for source in scores}
        for _ in range(args.bootstrap):
            pair_rows = rng.integers(pairs, size=pairs)  # the same deals for every source: resampled together
            for source, table in scores.items():
                seed_rows = rng.integers(len(table), size=len(table))
                draws[source].append(table[seed_rows][:, pair_rows].mean())
        draws = {source: np.array(values) for source, values in draws.items()}
        print(f"\nvs {opponent} ({pairs} deal pairs)")
        print("| source | seeds | by seed | mean | 95% CI over seeds (t) | 95% CI over seeds and pairs | "
              "minus none (95% CI over seeds and pairs) | gap closed (none to true hand) |")
        print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for source in [s for s in SOURCES if s in scores]:
            per_seed = scores[source].mean(axis=1)
            low, high = stats.t.interval(0.95, len(per_seed) - 1, loc=per_seed.mean(), scale=stats.sem(per_seed)) \
                if len(per_seed) > 1 else (np.nan, np.nan)  # one seed: no interval over seeds
            boot_low, boot_high = np.percentile(draws[source], [2.5, 97.5])
            gap = lift = ""
            if "none" in scores and source != "none":
                lifts = draws[source] - draws["none"]
                low_lift, high_lift = np.percentile(lifts, [2.5, 97.5])
                lift = f"{100 * (per_seed.mean() - scores['none'].mean()):+.1f} ({100 * low_lift:+.1f} .. " \
                       f"{100 * high_lift:+.1f})"
            if {"none", ORACLE} <= scores.keys() and source not in ("none", ORACLE):
                share = (per_seed.mean() - scores["none"].mean()) / (scores[ORACLE].mean() - scores["none"].mean())
                with np.errstate(divide="ignore", invalid="ignore"):  # a draw where the oracle adds nothing
                    boot = (draws[source] - draws["none"]) / (draws[ORACLE] - draws["none"])
                low_share, high_share = np.percentile(boot, [2.5, 97.5])
                gap = f"{100 * share:.0f}% ({100 * low_share:.0f}% .. {100 * high_share:.0f}%)"
            print(f"| {source} | {len(per_seed)} | {' / '.join(f'{100 * s:.1f}' for s in per_seed)} | "
                  f"{100 * per_seed.mean():.1f}% | {100 * low:.1f}% - {100 * high:.1f}% | "
                  f"{100 * boot_low:.1f}% - {100 * boot_high:.1f}% | {lift} | {gap} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    features = commands.add_parser("features", help="replay a labelled round, recording every source's features")
    features.add_argument("round", type=Path, help="a round folder of labels (labels.json and shard_NNNNN.npz)")
    features.add_argument("--shards", type=int, help="use the first SHARDS shards (default: all)")
    features.add_argument("--workers", type=int, default=1, help="processes replaying shards")
    features.add_argument("--base", type=Path, help="the round's base network (a generation's checkpoint), if not rule")
    features.add_argument("--sources", nargs="+", choices=SOURCES, default=list(SOURCES),
                          help="the sources to record (default: all)")
    features.add_argument("--out", type=Path, required=True)
    fitting = commands.add_parser("fit", help="fit and evaluate one source's network")
    fitting.add_argument("features", type=Path, nargs="+",
                         help="files written by the features command (several: a window of rounds, in order)")
    fitting.add_argument("--init", type=Path,
                         help="start from this featureless checkpoint, its first layers widened at zero weight")
    fitting.add_argument("--learning-rate", type=float, default=1e-3)
    fitting.add_argument("--batch-size", type=int, default=512)
    fitting.add_argument("--source", choices=SOURCES, required=True)
    fitting.add_argument("--seed", type=int, required=True, help="the fit's seed (initial weights, held-out rows)")
    fitting.add_argument("--net-arch", type=int, nargs="+", default=[512, 512, 256])
    fitting.add_argument("--epochs", type=int, default=20)
    fitting.add_argument("--pairs", type=int, default=2000)
    fitting.add_argument("--eval-seed", type=int, default=12346, help="the deals' seed (fixed, chosen beforehand)")
    fitting.add_argument("--opponents", nargs="+", choices=sorted(_OPPONENTS), default=["rule", "random"])
    fitting.add_argument("--out", type=Path, required=True)
    for command in (features, fitting):
        command.add_argument("--n-particles", type=int, default=1000, help="the plain particle filter's N")
        command.add_argument("--aware-particles", type=int, default=200,
                             help="the told-opponent filter's N (its update costs about 13 times the plain one's)")
    table = commands.add_parser("table", help="the ladder's table from finished fit runs")
    table.add_argument("runs", type=Path, nargs="+")
    table.add_argument("--bootstrap", type=int, default=2000)
    table.add_argument("--bootstrap-seed", type=int, default=0)
    args = parser.parse_args()
    {"features": features_command, "fit": fit_command, "table": table_command}[args.command](args)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
