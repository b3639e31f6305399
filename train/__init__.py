"""Training, evaluation and the command-line programs, each in its own subpackage.

* :mod:`train.config`: the YAML experiment config (parsing it loads no torch); :mod:`train.specs` and
  :mod:`train.policies`: player specs (names, checkpoints, ``module:attribute``) and the policies they name;
  :mod:`train.shipped`: where the shipped configs are.
* :mod:`train.training`: the trainer: expert iteration, distillation, PPO, the opponent mixes.
* :mod:`train.evaluation`: paired games, statistics, tournaments, belief quality, games on Ray.
* :mod:`train.sweeps`: hyperparameter sweeps and multi-seed ablations on Ray Tune.
* :mod:`train.cli`: ``uno-train``, ``uno-evaluate``, ``uno-play``, ``uno-tune``, ``python -m train.cli.ship``.
"""
