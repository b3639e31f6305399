"""The sequential test: its log-likelihood ratio, its decisions on known differences, resuming, bad bounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from train.cli.evaluate import main
from train.evaluation.sprt import SprtBounds, decide, elo_to_score, llr, run_sprt
from uno_env.opponents import RulePolicy


class WeakenedRule:
    """``rule`` weakened: a uniformly random legal action on a share of its moves."""

    def __init__(self, share: float = 0.6) -> None:
        self.share = share
        self.rule = RulePolicy()
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, view) -> int:
        legal = view.legal_actions
        if self.rng.random() < self.share:
            return legal[int(self.rng.integers(len(legal)))]
        return self.rule.act(view)


def test_elo_bounds_become_scores_and_the_llr_follows_the_normal_approximation():
    assert elo_to_score(0) == 0.5 and elo_to_score(400) == pytest.approx(10 / 11)
    bounds = SprtBounds.from_elo(0, 20)
    assert bounds.upper == pytest.approx(math.log(19)) and bounds.lower == pytest.approx(-math.log(19))
    scores = np.array([0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 1.0])
    s0, s1 = bounds.score0, bounds.score1
    expected = len(scores) * (s1 - s0) * (2 * scores.mean() - s0 - s1) / (2 * scores.var(ddof=1))
    assert llr(scores, bounds) == pytest.approx(expected)
    assert llr(np.full(5, 0.5), bounds) == 0.0  # no spread: no information


def test_decisions_come_only_at_whole_batches():
    bounds = SprtBounds(0.4, 0.6)
    high = np.tile([1.0, 0.5], 200)  # mean 0.75: H1 soon
    outcome = decide(high, bounds, batch=10, most=1000)
    assert outcome.decision == "H1" and outcome.pairs % 10 == 0 and outcome.llr >= bounds.upper
    assert decide(high[:outcome.pairs - 1], bounds, 10, 1000).decision is None
    assert decide(1.0 - high, bounds, 10, 1000).decision == "H0"


@pytest.mark.parametrize(("bounds", "decision"), [(SprtBounds(0.5, 0.56), "H1"), (SprtBounds(0.8, 0.86), "H0")])
def test_rule_against_a_weakened_copy_of_itself_is_decided_right(bounds: SprtBounds, decision: str):
    # rule scores 62.9% (61.7% - 64.1%) against itself playing randomly on 60% of its moves (3,000 pairs, seed 5).
    outcome, played = run_sprt("rule", WeakenedRule(), bounds, most=2000, seed=21, batch=25, workers=1)
    assert outcome.decision == decision and outcome.pairs < 2000 and played.pairs == outcome.pairs


def test_a_resumed_test_decides_as_an_uninterrupted_one_and_replays_nothing(tmp_path: Path):
    bounds = SprtBounds(0.5, 0.6)
    first = run_sprt("rule", "random", bounds, most=400, seed=3, batch=20, workers=1, checkpoint=tmp_path / "c")
    kept = sorted((tmp_path / "c").glob("*.npz"))
    again = run_sprt("rule", "random", bounds, most=400, seed=3, batch=20, workers=1, checkpoint=tmp_path / "c")
    assert first[0] == again[0] and sorted((tmp_path / "c").glob("*.npz")) == kept
    assert first[0].decision == "H1" and len(kept) * 20 == first[0].pairs
    in_pool = run_sprt("rule", "random", bounds, most=400, seed=3, batch=20, workers=2)
    assert in_pool[0] == first[0]


@pytest.mark.parametrize(("args", "message"), [
    (["--sprt", "5"], "expected 2 arguments"),
    (["--sprt", "20", "0"], "increasing order"),
    (["--sprt", "55%", "10"], "both as win rates"),
    (["--sprt", "50%", "120%"], "0 < lower < upper < 1"),
    (["--sprt", "0", "x"], "must be numbers"),
    (["--sprt", "0", "20", "--sprt-alpha", "0.7"], "alpha must be in"),
    (["--sprt", "0", "20", "--opponents", "rule", "random"], "one opponent"),
    (["--value-net", "missing.npz"], "no such file"),
])
def test_bad_sprt_and_value_options_exit_2_with_one_line(args: list[str], message: str,
                                                        capsys: pytest.CaptureFixture[str]):
    argv = ["rule", "--pairs", "10", "--workers", "1", *args]
    if "--opponents" not in args:
        argv += ["--opponents", "random"]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("uno-evaluate: error")]
    assert len(error) == 1 and message in error[0]


def test_the_cli_prints_the_decision_and_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "sprt.json"
    assert main(["rule", "--opponents", "random", "--sprt", "50%", "60%", "--pairs", "400", "--sprt-batch", "20",
                 "--workers", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("SPRT: H1 accepted (score >= 60.0%) after ") and "adjusted pair scores" in printed
    row, = json.loads(out.read_text())
    assert row["sprt"]["decision"] == "H1" and row["pairs"] == row["sprt"]["pairs"] and "adjusted" in row
