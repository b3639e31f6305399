"""A run's TensorBoard writers, each a run of its own under ``RUN_DIR/tb``.

* ``tb/`` (SB3's scalars, :class:`ResumedTensorBoard`): PPO's losses and evaluations by step, and the final win rates.
* ``tb/generations`` (:class:`GenerationWriter`): each expert-iteration generation's gate (win rates against
  ``rule``, ``random`` and the previous generation, with their 95% bounds), positions a second and seconds, with the
  generation as the step.
* ``tb/fit`` (:class:`FitWriter`): every fit's per-epoch losses (actor, value, held-out), on one step axis that
  increases over the run: generation K's epochs follow generation K-1's, and a distillation's its own.

A resumed session writes again the steps an earlier one may have logged past where it resumed; each writer opens
its folder with a purge step so TensorBoard shows only the new points.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import TensorBoardOutputFormat
from torch.utils.tensorboard import SummaryWriter

from train.training.fit import EpochLog


def wait_past_event_files(folder: Path) -> None:
    """Sleep until the clock is past the second in which the folder's newest event file was created.

    TensorBoard reads a folder's event files in name order. A name starts with its creation second and ends
    with a per-process counter that sorts as text (``.10`` before ``.9``), so a session resumed within the same
    second could be read before the one it continues, whose older steps would then purge the new ones.
    """
    seconds = [int(path.name.split(".")[3]) for path in folder.glob("events.out.tfevents.*")]
    while seconds and time.time() < max(seconds) + 1:
        time.sleep(0.05)


class ResumedTensorBoard(TensorBoardOutputFormat):
    """SB3's TensorBoard output, hiding what an earlier session logged at or after ``purge_step``.

    A killed session may have logged past its last checkpoint; the resumed session logs those steps
    again, and TensorBoard (through the purge marker of ``SummaryWriter``) shows only the new ones.
    """

    def __init__(self, folder: str, purge_step: int) -> None:
        wait_past_event_files(Path(folder))
        super().__init__(folder)
        self.writer.close()  # SB3 opens a writer without a purge step; replace it with one that has one
        self.writer = SummaryWriter(log_dir=folder, purge_step=purge_step)


class _LazyWriter:
    """A SummaryWriter opened at its first scalar (a run without generations or fits leaves no folder), with the
    purge step of that first scalar; a context manager that closes it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.writer: SummaryWriter | None = None

    def add(self, tag: str, value: float, step: int) -> None:
        if self.writer is None:
            wait_past_event_files(self.folder)
            self.writer = SummaryWriter(log_dir=str(self.folder), purge_step=step)
        self.writer.add_scalar(tag, value, step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exception: Any) -> None:
        if self.writer is not None:
            self.writer.close()


class GenerationWriter(_LazyWriter):
    """Expert iteration's curve per generation: a :data:`~train.training.expert_iteration.GenerationLog` writing
    ``generation/<tag>`` with the generation as the step."""

    def __call__(self, generation: int, scalars: dict[str, float]) -> None:
        for tag, value in scalars.items():
            self.add(f"generation/{tag}", value, generation)
        self.flush()


class FitWriter(_LazyWriter):
    """Every fit's per-epoch losses as ``fit/<loss>`` on one increasing step axis.

    ``writer.fit(first)`` gives the :data:`~train.training.fit.EpochLog` of a fit whose epochs are steps ``first + 1``,
    ``first + 2``, ...: a generation's first step is the epochs of the generations before it, so the axis is the same
    whether the run was resumed or not.
    """

    def fit(self, first: int) -> EpochLog:
        step = first

        def log(losses: dict[str, float]) -> None:
            nonlocal step
            step += 1
            for tag, value in losses.items():
                self.add(f"fit/{tag}", value, step)
            self.flush()

        return log
