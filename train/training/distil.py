"""Distillation: the run's network fitted on the labels of finished expert-iteration generations.

A run with ``distil.labels`` (:class:`~train.config.DistilConfig`) reads the label shards of those generation folders
(``RUN/expert_iteration/generation_K``, any player, any run), concatenated in the order given, and fits the run's
network on them in one go (:func:`train.training.fit.fit_values`): what made the shipped ``search-q-afterstate``
from the generations of an expert-iteration run (``configs/distil.yaml``). The run then saves and evaluates that
network like any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from train.config import ConfigError, TrainConfig
from train.training import labelling
from train.training.fit import EpochLog, fit_values


def read_labels(folders: list[str], observation_size: int) -> labelling.Labels:
    """Observations, move values and base moves of every finished shard of ``folders``, in order; a ``ConfigError``
    naming the ``distil.labels`` entry that is not a generation of labels or whose observations are not
    ``observation_size`` wide (labels made with other belief features than the run's ``env.belief``)."""
    parts = []
    for i, folder in enumerate(folders):
        try:
            labels = labelling.read_generation(Path(folder))
        except ValueError as error:
            raise ConfigError(f"distil.labels[{i}]: {error}") from None
        width = labels[0].shape[1]
        if width != observation_size:
            raise ConfigError(f"distil.labels[{i}]: {folder} holds observations of {width} channels, the run's network "
                              f"reads {observation_size} (env.belief): labels made with other belief features")
        parts.append(labels)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def distil(model: Any, config: TrainConfig, labels: labelling.Labels, log: EpochLog | None = None) -> dict[str, float]:
    """Fit ``model``'s network on ``labels`` (:func:`read_labels`) with ``distil``'s settings and the run's seed; the
    fit's held-out metrics and the number of ``positions``."""
    settings = config.distil
    observations, values, moves = labels
    metrics = fit_values(model.policy, observations, values, moves, settings.epochs, config.seed,
                         settings.learning_rate, settings.batch_size, settings.centred, settings.cosine, log)
    return {**metrics, "positions": len(moves)}
