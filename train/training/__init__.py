"""Training: a run folder from a config (:mod:`train.training.trainer`): expert iteration, distillation, PPO."""
