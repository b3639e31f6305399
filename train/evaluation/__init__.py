"""Evaluation: paired, seat-balanced games (``matches``), their confidence intervals (``statistics``), round-robin
ratings (``tournament``), how well belief trackers predict the opponent's hand (``belief_quality``), and games
spread over a Ray cluster (``distributed``)."""
