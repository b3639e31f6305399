"""Evaluation: paired, seat-balanced games (``matches``), their confidence intervals (``statistics``), round-robin
ratings (``tournament``), and how well belief trackers predict the opponent's hand (``belief_quality``)."""
