"""The per-opponent table of ``python -m train.cli.belief_quality --opponent A B ...`` (docs/beliefs.md): each
belief's log-loss against each opponent and its paired difference with the plain filter."""

from __future__ import annotations

import numpy as np
import pytest

from train.cli.belief_quality import main as belief_quality_main
from train.evaluation.belief_quality import METRICS, QualityResult, opponents_table

NAMES = ["counting", "particles N=10", "learned N=10"]


def _result(opponent: str, log_losses: list[list[float]], decisions: list[int]) -> QualityResult:
    """A measurement of three beliefs over games with the given summed log-losses (games x beliefs)."""
    sums = np.zeros((len(decisions), len(NAMES), len(METRICS)))
    sums[:, :, 0] = log_losses
    empty = np.zeros((0, 2), np.int64)
    return QualityResult(NAMES, sums, np.array(decisions), np.zeros((len(decisions), len(NAMES), 2), np.int64),
                         empty, np.zeros((0, len(NAMES))), meta={"opponent": opponent})


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_each_row_gives_the_means_and_the_paired_difference_with_the_plain_filter():
    # Two games of 10 and 30 decisions: the learned filter is 0.01 a decision below the plain one in the first and
    # 0.03 in the second, so the pooled difference is (0.1 + 0.9) / 40 = -0.025.
    first = _result("rule", [[3.0, 2.8, 2.7], [9.0, 8.1, 7.2]], [10, 30])
    # Two games of 10: the learned filter level with the plain one, then 0.02 above it: +0.01, SE 0.2 / 20 = 0.01.
    second = _result("hold-wilds", [[4.0, 3.6, 3.6], [4.0, 3.6, 3.8]], [10, 10])
    lines = opponents_table([first, second], {"hold-wilds": "held out"}).splitlines()
    assert _cells(lines[0]) == ["opponent", *NAMES, "learned N=10 minus particles N=10 (95%)"]
    rule, held, mean = (_cells(line) for line in lines[2:])
    assert rule[:4] == ["`rule`", "0.3000", "0.2725", "0.2475"]
    # Games as clusters: residuals -0.1 + 0.25 and -0.9 + 0.75, so SE = sqrt(2 * 0.15**2 * 2 / 1) / 40 = 0.0075.
    assert rule[4] == "-0.0250 (-0.0397 .. -0.0103)"
    assert held == ["`hold-wilds` (held out)", "0.4000", "0.3600", "0.3700", "+0.0100 (-0.0096 .. +0.0296)"]
    # The mean row: the opponents' means, and an interval combining theirs as independent,
    # SE sqrt(0.0075**2 + 0.01**2) / 2 = 0.00625.
    assert mean == ["mean of the 2", "0.3500", "0.3162", "0.3087", "-0.0075 (-0.0197 .. +0.0047)"]


def test_a_table_of_results_that_measured_other_beliefs_is_refused():
    other = _result("rule", [[1.0, 1.0, 1.0]], [10])
    other.names = ["counting", "particles N=10", "policy-aware N=10"]
    with pytest.raises(ValueError, match="different beliefs"):
        opponents_table([_result("random", [[1.0, 1.0, 1.0]], [10]), other])
    other.names = ["counting", "learned N=10", "policy-aware N=10"]
    with pytest.raises(ValueError, match="no plain filter"):
        opponents_table([other])


@pytest.mark.parametrize(("argv", "message"), [
    (["--opponent", "rule", "search-q-none"], "'search-q-none' has no model to tell a policy-aware filter"),
    (["--opponent", "rule", "random", "--exact"], "not with --exact or --figure"),
    (["--opponent", "rule", "random", "--particles"], "give --particles"),
    (["--opponent", "rule", "no-such-player"], "--opponent 'no-such-player': unknown policy"),
])
def test_the_command_refuses_a_table_it_could_not_make_before_playing(argv: list[str], message: str,
                                                                       capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as stop:
        belief_quality_main([*argv, "--games", "1"])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
