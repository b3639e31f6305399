"""Expert iteration's generations: the curve of each run, and the last generation against the first on fresh deals.

    python benchmarks/generations.py runs/ei-a runs/ei-b --labels unguided guided --out docs/figures/generations.png \
        --pairs 2000 --seed 12346

Reads the generation records of each run folder (``expert_iteration/generation_K.json``, written by
:func:`train.training.expert_iteration.run_expert_iteration` as each generation ends: win rates against ``rule``,
``random`` and the generation before on the gate's deal pairs, with 95% bounds, the fit's held-out metrics, positions
per second and seconds), prints them as a Markdown table and draws the win rates against ``rule`` and ``random`` by
generation, each with its interval as a band. Those win rates are measured on the gate's deals (``eval.seed``), which
chose the kept generations.

With ``--pairs``, the first and the last generation's networks (``expert_iteration/generation_1.zip``,
``expert_iteration/generation_N.zip``) of each run play ``rule`` again on that many fresh deal pairs of ``--seed``,
and the table gets the paired difference last minus first with its 95% interval
(:func:`train.evaluation.statistics.difference_interval`): whether the run climbed, on deals that chose nothing. With
``--every``, every generation plays them, in a table per run and in the figure: beside the gate's curve against
``rule`` (the curve of a run without a gate), and in a panel of its own as each generation minus the first, paired.
``--start SPEC`` also plays the network the runs started from (a run with ``policy.init``, e.g. a shipped agent) on
the same deals, adds each run's last generation minus it, and draws it as a line. The ``random`` panel is drawn only
for runs with a gate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a CI machine
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from train.evaluation.matches import MatchResult, evaluate  # noqa: E402
from train.evaluation.statistics import difference_interval, score_interval  # noqa: E402

_RECORD = re.compile(r"generation_(\d+)\.json")
#: A run's expert-iteration folder (train.training.expert_iteration.FOLDER; not imported: it would load torch's
#: training stack for a folder name).
FOLDER = "expert_iteration"


def read_generations(run: Path) -> list[dict]:
    """A run's generation records, in order, each with its ``generation`` number."""
    found = sorted((int(m.group(1)), path) for path in (run / FOLDER).glob("generation_*.json")
                   if (m := _RECORD.fullmatch(path.name)))
    if not found:
        raise SystemExit(f"generations: {run} has no {FOLDER}/generation_*.json (is it an expert-iteration run?)")
    return [{"generation": number, **json.loads(path.read_text())} for number, path in found]


def _cell(record: dict, key: str) -> str:
    if key not in record:
        return "-"
    return f"{record[key]:.1%} ({record[key + '/low']:.1%}-{record[key + '/high']:.1%})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="training run folders")
    parser.add_argument("--labels", nargs="+", help="one label per run (default: the folder names)")
    parser.add_argument("--out", type=Path, help="the figure to write (.png or .svg)")
    parser.add_argument("--pairs", type=int, default=0, help="fresh deal pairs for last minus first (0: none)")
    parser.add_argument("--seed", type=int, default=12346, help="the fresh deals' seed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--start", help="with --pairs: the player the runs started from, compared with each last")
    parser.add_argument("--every", action="store_true",
                        help="with --pairs: every generation on the fresh deals, not only the first and the last")
    args = parser.parse_args(argv)
    labels = args.labels or [run.name for run in args.runs]
    if len(labels) != len(args.runs):
        parser.error(f"--labels needs one label per run: {len(args.runs)} runs, {len(labels)} labels")
    curves = [read_generations(run) for run in args.runs]
    runs_scores: list[list[MatchResult]] = []  # with --pairs: each run's networks on the fresh deals
    start: MatchResult | None = None  # with --pairs and --start: the start's result on the fresh deals
    for label, records in zip(labels, curves, strict=True):
        print(f"\n{label}\n")
        print("| generation | vs rule | vs random | vs previous | kept | held-out agreement | positions/s | seconds |")
        print("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
        for r in records:
            rate = r.get("positions_per_second")
            print(f"| {r['generation']} | {_cell(r, 'win_rate/rule')} | {_cell(r, 'win_rate/random')} | "
                  f"{_cell(r, 'win_rate/previous')} | {'yes' if r.get('kept', True) else 'no'} | "
                  f"{r['metrics']['held_out_agreement']:.1%} | {'-' if rate is None else f'{rate:,.0f}'} | "
                  f"{r['seconds']:,.0f} |")
    if args.pairs:
        if args.start:
            start = evaluate(args.start, ["rule"], args.pairs, args.seed, workers=args.workers)[0]
        for label, run, records in zip(labels, args.runs, curves, strict=True):
            networks = [run / FOLDER / f"generation_{r['generation']}.zip" for r in records] if args.every else \
                [run / FOLDER / f"generation_{records[n]['generation']}.zip" for n in (0, -1)]
            scores = [evaluate(str(path), ["rule"], args.pairs, args.seed, workers=args.workers)[0]
                      for path in networks]
            runs_scores.append(scores)
            if args.every:
                print(f"\n{label}: every generation against rule, {args.pairs} deal pairs of seed {args.seed}:\n")
                print("| generation | vs rule | minus the first (95% CI) |" + (" minus the start (95% CI) |"
                                                                             if start else ""))
                print("| ---: | ---: | ---: |" + (" ---: |" if start else ""))
                for n, (record, score) in enumerate(zip(records, scores, strict=True)):
                    print(f"| {record['generation']} | {score.score:.1%} | "
                          + ("- |" if n == 0 else _difference(score.pair_scores, scores[0].pair_scores))
                          + (" " + _difference(score.pair_scores, start.pair_scores) if start else ""))
        print(f"\nlast minus first generation against rule, {args.pairs} deal pairs of seed {args.seed}:\n")
        print("| run | first | last | last minus first (95% CI) |" + (" start | last minus start (95% CI) |"
                                                                      if start else ""))
        print("| --- | ---: | ---: | ---: |" + (" ---: | ---: |" if start else ""))
        for label, scores in zip(labels, runs_scores, strict=True):
            row = f"| {label} | {scores[0].score:.1%} | {scores[-1].score:.1%} | " + \
                _difference(scores[-1].pair_scores, scores[0].pair_scores)
            if start is not None:
                row += f" {start.score:.1%} | " + _difference(scores[-1].pair_scores, start.pair_scores)
            print(row)
    if args.out:
        _draw(args.out, labels, curves, runs_scores if args.every else None, start, args.pairs)
        print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


def _draw(out: Path, labels: list[str], curves: list[list[dict]], every: list[list[MatchResult]] | None,
          start: MatchResult | None, pairs: int) -> None:
    """The figure: win rates against ``rule`` by generation (the gate's and, with ``every``, the fresh deals'), against
    ``random`` when a gate measured it, and with ``every`` each generation minus the first, paired, on the fresh
    deals (the climb the noise of the absolute rates hides). Every curve has its 95% interval as a band."""
    gated_random = any("win_rate/random" in r for records in curves for r in records)
    panels = ["rule"] + (["random"] if gated_random else []) + (["gain"] if every else [])
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), sharex=True, squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel == "gain":
            for label, records, scores in zip(labels, curves, every, strict=True):
                x = [r["generation"] for r in records]
                bounds = [difference_interval(score.pair_scores, scores[0].pair_scores) for score in scores]
                _band(ax, x, *zip(*bounds, strict=True), label=label, marker="s", linestyle="--")
            ax.axhline(0.0, color="grey", linewidth=0.8)
            ax.set_title(f"against rule, minus generation 1 (paired, {pairs} fresh pairs)", fontsize=10)
            ax.set_ylabel("win-rate difference (95% CI)")
        else:
            key = f"win_rate/{panel}"
            for label, records in zip(labels, curves, strict=True):
                rows = [r for r in records if key in r]
                if rows:  # a run without a gate has none
                    _band(ax, [r["generation"] for r in rows], [r[key] for r in rows], [r[key + "/low"] for r in rows],
                          [r[key + "/high"] for r in rows], label=f"{label} (gate)", marker="o")
            if panel == "rule" and every:
                for label, records, scores in zip(labels, curves, every, strict=True):
                    x = [r["generation"] for r in records]
                    low, high, _ = zip(*(score_interval(score.pair_scores) for score in scores), strict=True)
                    _band(ax, x, [score.score for score in scores], low, high, label=f"{label}, {pairs} fresh pairs",
                          marker="s", linestyle="--")
            if panel == "rule" and start is not None:
                ax.axhline(start.score, color="black", linestyle=":", linewidth=1, label="the start, fresh pairs")
            ax.axhline(0.5, color="grey", linewidth=0.8)
            ax.set_title(f"against {panel}")
            ax.set_ylabel("win rate (95% CI)")
            ax.legend(fontsize=8)
        ax.set_xlabel("generation")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def _band(ax: Any, x: list[int], centre: Sequence[float], low: Sequence[float], high: Sequence[float],
          **style: Any) -> None:
    """One curve with its 95% interval as a shaded band."""
    ax.plot(x, centre, **style)
    ax.fill_between(x, low, high, alpha=0.2)


def _difference(after: list[float], before: list[float]) -> str:
    """A table cell: the paired difference of two players' deal-pair scores and its 95% interval."""
    difference, low, high = difference_interval(after, before)
    return f"{difference:+.1%} ({low:+.1%} .. {high:+.1%}) |"


if __name__ == "__main__":
    sys.exit(main())
