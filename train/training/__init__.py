"""Training: the trainer (a run folder from a config), the warm start by imitation, the opponent mixes."""
