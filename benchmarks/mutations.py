"""Mutation check: do the tests notice small, plausible bugs?

Each :class:`Mutation` is a hand-written bug: one or more exact text replacements in a source file, and the
test files that ought to catch it. For each one this program copies the project (``git archive HEAD`` by
default, or the working tree with ``--worktree``) to a temporary folder once, applies the mutation there,
runs those tests with ``pytest -x`` and a per-test timeout, restores the file, and reports the mutation as
*caught* (a test failed), *survived* (every test passed) or *broken* (the mutation no longer applies, or
pytest could not run). Before any mutation, the tests run once unmutated and must pass.

    python benchmarks/mutations.py                  # every mutation, a table per area
    python benchmarks/mutations.py --area stats     # one area (observation, stats, config, search, ...)
    python benchmarks/mutations.py --write          # also put the result table into docs/testing.md
    python benchmarks/mutations.py --name "deck ran out" --tests tests/test_single.py   # other tests than its own
    python benchmarks/mutations.py --list

Exit status: 0 when nothing survived, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "testing.md"
BEGIN, END = "<!-- mutations:begin -->", "<!-- mutations:end -->"

OBS = ("tests/test_observation.py",)
STATS = ("tests/test_statistics.py",)
CONFIG = ("tests/test_config_checks.py", "tests/test_config.py")
SEARCH = ("tests/test_search_invariants.py", "tests/test_search.py")
SEEDING = ("tests/test_seeding.py", "tests/test_env_api.py", "tests/test_seat.py")
RULES = ("tests/test_rules.py", "tests/test_invariants.py", "tests/test_opponents.py")
ENDINGS = ("tests/test_endings.py",)
LABELS = ("tests/test_labels_properties.py",)
LIKELIHOOD = ("tests/test_opponent_likelihood.py",)
ENSEMBLE = ("tests/test_ensemble.py",)
GUIDED = ("tests/test_guided_search.py",)
GUARD = ("tests/test_guided_search.py::test_the_networks_move_is_the_default",)
RESUME = ("tests/test_evaluation_checkpoint.py",)
SPECS = ("tests/test_specs_names.py",)
CONSISTENCY = ("tests/test_consistency.py",)
GENERATIONS = ("tests/test_train.py::test_generations_are_gated_logged_and_fitted_on_a_window_of_generations",)
LABELLER, GENERATION = "train/training/search_labels.py", "train/training/expert_iteration.py"
BELIEF = ("tests/test_observation.py", "tests/test_belief_filters.py", "tests/test_belief_lazy.py",
          "tests/test_belief_tracker.py", "tests/test_belief_env.py")


@dataclass(frozen=True)
class Mutation:
    """A hand-written bug: ``edits`` are (old, new) exact replacements in ``path``, each matching once."""

    area: str
    name: str
    path: str
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]


def _config_check(field: str, line: str, plain: str) -> Mutation:
    """Remove the value check of one config field (``line`` becomes ``plain``)."""
    return Mutation("config", f"no check on {field}", "train/config.py", ((line, plain),), CONFIG)


MUTATIONS: tuple[Mutation, ...] = (
    # --- the observation encoder (uno_env.observation.encode_into, the compiled encoder every path calls)
    Mutation("observation", "opponent size one-hot shifted by one", "uno_env/observation.py",
             (("min(view.opponent_hand_size, 7) - 1] = 1.0", "min(view.opponent_hand_size, 7)] = 1.0"),), OBS),
    Mutation("observation", "opponent size one-hot capped at 8", "uno_env/observation.py",
             (("min(view.opponent_hand_size, 7) - 1] = 1.0", "min(view.opponent_hand_size, 8) - 1] = 1.0"),), OBS),
    Mutation("observation", "pending-draw channel inverted", "uno_env/observation.py",
             (("out[_PENDING + (view.pending_draw >> 2)] = 1.0",
               "out[_PENDING + 1 - (view.pending_draw >> 2)] = 1.0"),), OBS),
    Mutation("observation", "discard not removed from the unseen cards", "uno_env/observation.py",
             (("_COPY_COUNTS[card] - held - discarded", "_COPY_COUNTS[card] - held"),), OBS),
    Mutation("observation", "deck and discard sizes swapped", "uno_env/observation.py",
             (("out[_SIZES + 2] = view.deck_size / DECK_SIZE\n    out[_SIZES + 3] = view.discard_size / DECK_SIZE",
               "out[_SIZES + 2] = view.discard_size / DECK_SIZE\n    out[_SIZES + 3] = view.deck_size / DECK_SIZE"),),
             OBS),
    Mutation("observation", "top card index clipped at 52", "uno_env/observation.py",
             (("out[_TOP + view.top] = 1.0", "out[_TOP + min(view.top, 52)] = 1.0"),), OBS),
    Mutation("observation", "colour one-hot rotated", "uno_env/observation.py",
             (("out[_COLOUR + view.colour] = 1.0", "out[_COLOUR + (view.colour + 1) % 4] = 1.0"),), OBS),
    Mutation("observation", "own hand size scaled by 54", "uno_env/observation.py",
             (("out[_SIZES] = view.hand_size / DECK_SIZE", "out[_SIZES] = view.hand_size / 54"),), OBS),
    # --- evaluation statistics
    Mutation("stats", "paired interval over games, not pairs", "train/evaluation/statistics.py",
             (("half = t_quantile_975(n - 1) * spread / math.sqrt(n)",
               "half = t_quantile_975(n - 1) * spread / math.sqrt(pair_scores.size)"),), STATS),
    Mutation("stats", "a drawn game scores 0", "train/evaluation/matches.py",
             (("scores[i, game] = 0.5 if result.winner == -1", "scores[i, game] = 0.0 if result.winner == -1"),),
             STATS),
    Mutation("stats", "t quantile with n degrees of freedom", "train/evaluation/statistics.py",
             (("half = t_quantile_975(n - 1) * spread", "half = t_quantile_975(n) * spread"),), STATS),
    Mutation("stats", "Wilson fallback over pairs", "train/evaluation/statistics.py",
             (("wilson_interval(float(pair_scores.sum()), pair_scores.size)",
               "wilson_interval(float(means.sum()), n)"),), STATS),
    Mutation("stats", "Bradley-Terry without the virtual draw's points", "train/evaluation/tournament.py",
             (("points = points + 0.5 * (games.T + games > 0)", "points = points + 0.0 * (games.T + games > 0)"),),
             STATS),
    Mutation("stats", "ratings on the natural-log scale", "train/evaluation/tournament.py",
             (("ratings = 400 * np.log10(strength)", "ratings = 400 * np.log(strength)"),), STATS),
    # --- config checks
    _config_check("ppo.n_steps", "n_steps: int = field(default=256, metadata=_check(_bounded(1, 1_000_000)))",
                  "n_steps: int = 256"),
    _config_check("ppo.batch_size", "batch_size: int = field(default=512, metadata=_check(_bounded(1, 10_000_000)))",
                  "batch_size: int = 512"),
    _config_check("ppo.n_epochs", "n_epochs: int = field(default=4, metadata=_check(_positive))", "n_epochs: int = 4"),
    _config_check("ppo.clip_range", "clip_range: float = field(default=0.2, metadata=_check(_positive))",
                  "clip_range: float = 0.2"),
    _config_check("ppo.vf_coef", "vf_coef: float = field(default=0.5, metadata=_check(_non_negative))",
                  "vf_coef: float = 0.5"),
    _config_check("ppo.max_grad_norm", "max_grad_norm: float = field(default=0.5, metadata=_check(_positive))",
                  "max_grad_norm: float = 0.5"),
    _config_check("expert_iteration.epochs", "    epochs: int = field(default=10, metadata=_check(_positive))",
                  "    epochs: int = 10"),
    _config_check("expert_iteration.learning_rate",
                  "_positive))\n    learning_rate: float = field(default=1e-3, metadata=_check(_at_most(1.0)))\n"
                  "    batch_size: int = field(default=256,",
                  "_positive))\n    learning_rate: float = 1e-3\n    batch_size: int = field(default=256,"),
    _config_check("expert_iteration.batch_size", "batch_size: int = field(default=256, metadata=_check(_positive))",
                  "batch_size: int = 256"),
    _config_check("eval.final_pairs", "final_pairs: int = field(default=500, metadata=_check(_non_negative))",
                  "final_pairs: int = 500"),
    Mutation("config", "unit range allows up to 2", "train/config.py",
             (("return None if 0 <= value <= 1 else", "return None if 0 <= value <= 2 else"),), CONFIG),
    Mutation("config", "no batch-within-rollout check", "train/config.py",
             (("if ppo.batch_size > rollout:", "if False:"),), CONFIG),
    # --- the search player
    Mutation("search", "k-th world by the simulation's number", "agents/search_kernels.py",
             (("picks[0, 0], picks[0, 1] = i, visits[i]", "picks[0, 0], picks[0, 1] = i, done % n_worlds"),), SEARCH),
    Mutation("search", "no default-move guard", "agents/search.py",
             (("if best != default and _beats(", "if best != default or _beats("),), SEARCH + GUARD),
    Mutation("search", "guard's comparison reversed", "agents/search.py",
             (("return float(diff.mean()) > z *", "return float(diff.mean()) < z *"),), SEARCH + GUARD),
    Mutation("search", "oracle determinizes with a shifted hand", "agents/search.py",
             (("np.tile(np.asarray(self.hidden_hand(), dtype=np.int64), (count, 1))",
               "np.tile(np.roll(np.asarray(self.hidden_hand(), dtype=np.int64), 1), (count, 1))"),), SEARCH),
    # --- rules, and a bug that stops games from ending (a test must fail, not hang)
    Mutation("rules", "no game can end", "uno_env/core.py",
             (("    if hand_size_after == 0:\n        return seat, 0, seat",
               "    if hand_size_after < 0:\n        return seat, 0, seat"),
              ("    if mine == theirs:\n        return DRAWN\n    return seat if mine < theirs else 1 - seat",
               "    return RUNNING")),
             ("tests/test_opponents.py",)),
    Mutation("rules", "skip does not skip", "uno_env/core.py",
             (("    if rank in (SKIP, REVERSE):\n        return seat, 0, RUNNING",
               "    if rank in (SKIP, REVERSE):\n        return 1 - seat, 0, RUNNING"),), RULES),
    Mutation("rules", "+2 makes the opponent draw 1", "uno_env/core.py",
             (("        return 1 - seat, 2, RUNNING", "        return 1 - seat, 1, RUNNING"),), RULES),
    # --- belief features
    Mutation("belief", "particle probability features inverted", "uno_env/belief/lazy_answers.py",
             (("out[_T + i] = min(max(1.0 - none[i], 0.0), 1.0)", "out[_T + i] = min(max(none[i], 0.0), 1.0)"),),
             BELIEF),
    Mutation("belief", "counting probability features inverted", "uno_env/belief/filters.py",
             (("min(max(1.0 - math.exp(LOG_COMB[outside, n + K_OFFSET] - log_all), 0.0), 1.0)",
               "min(max(math.exp(LOG_COMB[outside, n + K_OFFSET] - log_all), 0.0), 1.0)"),), BELIEF),
    Mutation("belief", "counting expects one card too many", "uno_env/belief/filters.py",
             (("out[card] = n * (_COPIES[card] - hand[card] - discard[card]) / total if total",
               "out[card] = (n + 1) * (_COPIES[card] - hand[card] - discard[card]) / total if total"),), BELIEF),
    # --- the labels of the learning pipeline (search values, their shards)
    Mutation("labels", "search labels on the 0..1 scale", LABELLER,
             (("values[action] = 2.0 * total / visits - 1.0", "values[action] = total / visits"),), LABELS),
    Mutation("labels", "guided labels never guided by the critic", LABELLER,
             (("guided = self.leaf_moves is not None and base.value is not None", "guided = False"),), LABELS),
    Mutation("labels", "the aware search not told the opponent", LABELLER,
             (("opponent_policy=RulePolicy() if aware else None", "opponent_policy=None"),),
             ("tests/test_search_labels.py::test_aware_search_labels_are_told_the_opponent_and_label_the_same_"
              "positions_differently",)),
    Mutation("labels", "every shard of a generation plays the same games", "train/training/labelling.py",
             (("SeedSequence([self.seed, self.generation, shard])", "SeedSequence([self.seed, self.generation])"),),
             LABELS),
    Mutation("labels", "every generation plays the same games", "train/training/labelling.py",
             (("SeedSequence([self.seed, self.generation, shard])", "SeedSequence([self.seed, shard])"),), LABELS),
    Mutation("labels", "the last shard plays a whole shard's games", "train/training/labelling.py",
             (("return min(self.shard_games, self.games - shard * self.shard_games)", "return self.shard_games"),),
             LABELS),
    Mutation("labels", "leaf moves not among the labels' settings", "train/training/labelling.py",
             (("            \"expert_iteration.leaf_moves\": self.search.leaf_moves,\n", ""),), LABELS),
    # --- the generations of expert iteration
    Mutation("generations", "the gate's verdict ignored", GENERATION,
             (("            if record.get(\"kept\", True):", "            if True:"),), GENERATIONS),
    Mutation("generations", "each fit sees its own generation only", GENERATION,
             (("zip(*history[-window:], strict=True)", "zip(*history[-1:], strict=True)"),), GENERATIONS),
    Mutation("generations", "generation_simulations ignored", GENERATION,
             (("settings.generation_simulations[generation - 1]", "settings.simulations"),), GENERATIONS),
    Mutation("labelling", "Ctrl-C not held while waiting on the workers", "train/interrupts.py",
             (("    if threading.current_thread() is not threading.main_thread():", "    if True:"),),
             ("tests/test_interrupts.py",)),
    # --- the ensemble of checkpoints (agents/ensemble.py)
    Mutation("ensemble", "critic summed, not averaged", "agents/ensemble.py",
             (("critics, head_scale=1.0 / len(members))", "critics, head_scale=1.0)"),), ENSEMBLE),
    Mutation("ensemble", "later layers read the first member's units", "agents/ensemble.py",
             (("            column += columns\n", ""),), ENSEMBLE),
    Mutation("ensemble", "members' biases dropped", "agents/ensemble.py",
             (("target.bias[row:row + rows] = layers[k].bias", "target.bias[row:row + rows] = 0.0"),), ENSEMBLE),
    Mutation("ensemble", "no activation check", "agents/ensemble.py",
             (("if any(m.activation_fn is not activation for m in members):", "if False:"),), ENSEMBLE),
    Mutation("ensemble", "the merged file stored, not deflated", "agents/ensemble.py",
             (("info.compress_type = zipfile.ZIP_DEFLATED", "info.compress_type = zipfile.ZIP_STORED"),), ENSEMBLE),
    # --- the guided search (agents/search_kernels.py, agents/actor_kernels.py): prior, value head, leaf moves
    Mutation("guided", "PUCT ignores the prior", "agents/search_kernels.py",
             (("scale * priors[i] / (1.0 + visits[i])", "scale / (1.0 + visits[i])"),), GUIDED),
    Mutation("guided", "leaf moves ignored", "agents/search_kernels.py",
             (("playouts.max_actions if value is None else playouts.leaf_moves,",
               "playouts.max_actions if value is None else 0,"),), GUIDED),
    Mutation("guided", "the critic ignored at the leaves", "agents/search_kernels.py",
             (("            out[j] = value_reward(values[r], games[j, CURRENT])\n",
               "            out[j] = 0.5\n"),), GUIDED),
    Mutation("guided", "a game over before the leaf scores 1/2", "agents/search_kernels.py",
             (("            out[j] = reward_of(games[j, OUTCOME])\n        else:",
               "            out[j] = 0.5\n        else:"),),
             GUIDED),
    Mutation("guided", "the critic's value not clipped", "agents/actor_kernels.py",
             (("out[r] = min(max(_unit(weights[-1], biases[-1], 0, hidden[r]), -1.0), 1.0)",
               "out[r] = _unit(weights[-1], biases[-1], 0, hidden[r])"),), GUIDED),
    Mutation("guided", "the network's rollouts play the first legal move", "agents/actor_kernels.py",
             (("            ctls[g, ACTION] = choices[r]\n", "            ctls[g, ACTION] = legal[g, 0]\n"),),
             GUIDED + ("tests/test_compiled_actor.py",)),
    Mutation("guided", "a batch's pending simulations not counted", "agents/search_kernels.py",
             (("        counted[i] += 1\n", ""),), GUIDED),
    Mutation("guided", "a batch's choices read the wrong rows", "agents/actor_kernels.py",
             (("        out[r] = _best_legal(weights[-1], biases[-1], hidden[r], legal[g], ctls[g, CHOICES])",
               "        out[r] = _best_legal(weights[-1], biases[-1], hidden[0], legal[g], ctls[g, CHOICES])"),),
             ("tests/test_compiled_actor.py",)),
    Mutation("guided", "the first layer's four-row pass drops its fourth row", "agents/actor_kernels.py",
             (("r0[i] * v0 + r1[i] * v1 + r2[i] * v2 + r3[i] * v3", "r0[i] * v0 + r1[i] * v1 + r2[i] * v2"),),
             ("tests/test_compiled_actor.py",)),
    Mutation("guided", "the first layer skips the inputs left after the four-row passes", "agents/actor_kernels.py",
             (("    for rest in range(k, m):", "    for rest in range(m, m):"),), ("tests/test_compiled_actor.py",)),
    Mutation("guided", "tanh clipped at 1 instead of 9", "agents/actor_kernels.py",
             (("_TANH_CLIP = np.float32(9.0)", "_TANH_CLIP = np.float32(1.0)"),), ("tests/test_compiled_actor.py",)),
    Mutation("guided", "a tanh coefficient rounded to 5 digits", "agents/actor_kernels.py",
             (("0.9999999323951679, -0.15887455476151935,", "0.9999999323951679, -0.15887,"),),
             ("tests/test_compiled_actor.py",)),
    # --- the opponent models' likelihood (uno_env/belief/models.py, trajectory.py, trajectory_kernels.py)
    Mutation("likelihood", "the filter's kernels log the mover's own hand size", "uno_env/belief/trajectory.py",
             (("row[OPP] = 0 if decision is None else decision.opponent_hand_size",
               "row[OPP] = 0 if decision is None else decision.hand_size"),), LIKELIHOOD),
    Mutation("likelihood", "the model reads the mover's own hand size", "uno_env/belief/models.py",
             (("card_rank(decision.top), decision.opponent_hand_size)",
               "card_rank(decision.top), decision.hand_size)"),), LIKELIHOOD),
    Mutation("likelihood", "the kernel's play likelihood with the mover's hand size",
             "uno_env/belief/trajectory_kernels.py",
             (("log[e, RANK], log[e, OPP], legal)\n    like = 0.0",
               "log[e, RANK], log[e, HAND], legal)\n    like = 0.0"),), LIKELIHOOD),
    Mutation("likelihood", "a draw does not rule out a playable hand",
             "uno_env/belief/trajectory_kernels.py",
             (("log[e, RANK]):\n            w[p] = 0.0", "log[e, RANK]):\n            w[p] *= 0.5"),), LIKELIHOOD),
    Mutation("likelihood", "random counts the playable ids not held", "uno_env/belief/models.py",
             (("        if hand[_ACTION_CARD[candidate]] > 0:\n", "        if True:\n"),), LIKELIHOOD),
    Mutation("likelihood", "rule attacks at three cards", "uno_env/belief/models.py",
             (("player_options(policy, hand, opponent_hand_size, legal, n)",
               "player_options(policy, hand, opponent_hand_size - 1, legal, n)"),), LIKELIHOOD),
    # --- the compiled players' move distributions (uno_env/style_kernels.py, core.choose_from)
    Mutation("styles", "hold-wilds plays its wilds first", "uno_env/style_kernels.py",
             (("_HOLD_WILDS_TIERS = _table(lambda card: 1 if card < WILD else 0)",
               "_HOLD_WILDS_TIERS = _table(lambda card: 0 if card < WILD else 1)"),), ("tests/test_style_kernels.py",)),
    Mutation("styles", "the compiled random() reads 52 bits of numpy's word", "uno_env/core.py",
             (("float(word >> np.uint64(11))", "float(word >> np.uint64(12))"),), ("tests/test_single.py",)),
    # --- the endings of a game on every env path
    Mutation("endings", "compiled single env: reward sign flipped when the deck ran out", "uno_env/env.py",
             (("outcome) - RUNNING]\n",
               "outcome) - RUNNING] * (-1 if min(table.to_game().hand_sizes) else 1)\n"),), ENDINGS),
    Mutation("endings", "compiled driver: deck-out winner swapped", "uno_env/core.py",
             (("            draw_planned(state, count, possible)\n",
               "            draw_planned(state, count, possible)\n            if state[OUTCOME] >= 0:\n"
               "                state[OUTCOME] = 1 - state[OUTCOME]\n"),), ENDINGS),
    # the single env's rule opponent is core.choose's rule branch (the one table of compiled players)
    Mutation("endings", "compiled single env: the rule opponent reads its own hand size", "uno_env/core.py",
             (("player_options(policy, hand, state[HAND_SIZES + 1 - seat], legal, n)",
               "player_options(policy, hand, state[HAND_SIZES + seat], legal, n)"),), ("tests/test_single.py",)),
    Mutation("endings", "outcome table: a draw pays like a loss", "uno_env/core.py",
             (("= np.array([[0.0, 0.0, 1.0, -1.0],", "= np.array([[0.0, -1.0, 1.0, -1.0],"),), ENDINGS),
    Mutation("endings", "vector env: success on any finished game", "uno_env/vector.py",
             (("success[i] = outcome == AGENT", "success[i] = outcome != OPPONENT"),), ENDINGS),
    Mutation("endings", "PettingZoo: the winner's reward to the other seat", "uno_env/multiagent.py",
             (("self.rewards[AGENTS[game.outcome]] = 1.0", "self.rewards[AGENTS[game.outcome]] = -1.0"),
              ("self.rewards[AGENTS[1 - game.outcome]] = -1.0", "self.rewards[AGENTS[1 - game.outcome]] = 1.0")),
             ENDINGS),
    # --- one driver's rule changed, the others not (each caught by tests/test_consistency.py)
    Mutation("consistency", "Python engine: reverse does not skip", "uno_env/game.py",
             (("after_play(card, seat, self.hand_sizes[seat])",
               "after_play(card - 2 if _RANK[card] == 11 else card, seat, self.hand_sizes[seat])"),), CONSISTENCY),
    Mutation("consistency", "Python engine: a +2 or +4 counts one card in the drawer's hand size", "uno_env/game.py",
             (("        self.hand_sizes[seat] += count", "        self.hand_sizes[seat] += 1"),), CONSISTENCY),
    Mutation("consistency", "Python engine: the agent's drawn cards logged in reverse order", "uno_env/game.py",
             (("        drawn.reverse()", "        pass"),), CONSISTENCY),
    Mutation("consistency", "single env: reward sign flipped", "uno_env/env.py",
             (("        reward = _REWARD[", "        reward = -_REWARD["),), CONSISTENCY),
    Mutation("consistency", "single env: action_masks() offers draw always", "uno_env/env.py",
             (("return self._table.action_mask().astype(bool)",
               "return (self._table.action_mask() + (np.arange(61) == 60)).astype(bool)"),), CONSISTENCY),
    Mutation("consistency", "Python single env: no new view after a forfeit", "uno_env/python_game.py",
             (("        self.game.forfeit(AGENT)\n        self._observe()", "        self.game.forfeit(AGENT)"),),
             CONSISTENCY),
    Mutation("consistency", "compiled driver: a forced move takes a random word", "uno_env/core.py",
             (("            if n == 1:  # a forced move", "            if n == 0:  # a forced move"),), CONSISTENCY),
    Mutation("consistency", "compiled driver: drawn cards logged in reverse order", "uno_env/core.py",
             (("state[DECK + deck_end - 1 - i]", "state[DECK + deck_end - count + i]"),), CONSISTENCY),
    Mutation("consistency", "compiled rules: reverse does not skip", "uno_env/core.py",
             (("_after_play(card, seat, state[HAND_SIZES + seat])",
               "_after_play(card - 2 if _RANK_OF[card] == REVERSE else card, seat, state[HAND_SIZES + seat])"),),
             CONSISTENCY),
    Mutation("consistency", "compiled rules: red 0 legal without holding it (a mask bit)", "uno_env/core.py",
             (("            if state[hand + _PLAYABLE_CARDS[colour, rank, k]] > 0:",
               "            if state[hand + _PLAYABLE_CARDS[colour, rank, k]] > 0 "
               "or _PLAYABLE_ACTIONS[colour, rank, k] == 0:"),), CONSISTENCY),
    Mutation("consistency", "compiled rules: a +2 or +4 counts one card in the drawer's hand size", "uno_env/core.py",
             (("    state[HAND_SIZES + seat] += count", "    state[HAND_SIZES + seat] += 1"),), CONSISTENCY),
    Mutation("consistency", "compiled driver: a player with two choices plays the first", "uno_env/core.py",
             (("            if n == 1:  # a forced move", "            if n <= 2:  # a forced move"),), CONSISTENCY),
    Mutation("consistency", "vector env: every sub-env steps with sub-env 0's random stream", "uno_env/vector.py",
             (("core.play_turn_inline(state, ctl, games.streams[i:i + 1]",
               "core.play_turn_inline(state, ctl, games.streams[0:1]"),),
             CONSISTENCY),
    Mutation("consistency", "vector env: a finished game's mask all zero", "uno_env/observation.py",
             (("    if n_legal == 0:\n        mask[DRAW_ACTION] = 1",
               "    if n_legal < 0:\n        mask[DRAW_ACTION] = 1"),),
             CONSISTENCY),
    # --- names of checkpoints, and shipped agents built from a spec
    Mutation("specs", "a run's best model labelled best_model", "train/specs.py",
             (("path.stem not in (\"model\", \"best_model\")", "path.stem != \"model\""),), SPECS),
    Mutation("specs", "a folder stands for its best model first", "train/specs.py",
             (("CHECKPOINT_NAMES = (\"model.zip\", \"best_model.zip\")",
               "CHECKPOINT_NAMES = (\"best_model.zip\", \"model.zip\")"),), SPECS),
    Mutation("specs", "shipped factories bound late: every name loads the last agent", "agents/shipped.py",
             (("{name: partial(load_shipped, name) for name", "{name: lambda: load_shipped(name) for name"),), SPECS),
    Mutation("specs", "a shipped agent by name ignores deterministic", "train/policies.py",
             (("if spec in policy_names() and spec not in shipped_names():", "if spec in policy_names():"),), SPECS),
    Mutation("specs", "a shipped agent named model", "agents/shipped.py",
             (("MODELS_DIR / name / MODEL_FILE, name=name)", "MODELS_DIR / name / MODEL_FILE)"),), SPECS),
    Mutation("specs", "checkpoint steps not zero-padded", "train/training/sb3_ppo.py",
             (("step_{self.model.num_timesteps:09d}.zip", "step_{self.model.num_timesteps}.zip"),),
             ("tests/test_train.py::test_run_folder_layout",)),
    # --- seeded generators without numpy's seed-sequence code (uno_env/seeding.py)
    Mutation("seeding", "a spawn key's entropy not padded to the pool", "uno_env/seeding.py",
             (("        words[_POOL] = np.uint64(key)\n        length = _POOL + 1",
               "        words[length] = np.uint64(key)\n        length += 1"),), SEEDING),
    Mutation("seeding", "the output words paired big-endian", "uno_env/seeding.py",
             (("value << np.uint64(32 * (i % 2))", "value << np.uint64(32 * (1 - i % 2))"),), SEEDING),
    Mutation("seeding", "the pool's words not mixed into each other", "uno_env/seeding.py",
             (("            if src != dst:", "            if src == dst:"),), SEEDING),
    Mutation("seeding", "a seeded env reset keeps the old np_random", "uno_env/env.py",
             (("self._np_random, self._np_random_seed = seeded_generator(seed), seed",
               "self._np_random_seed = seed"),), SEEDING),
    # --- evaluations that resume (train/evaluation/pair_store.py, train/evaluation/matches.py)
    Mutation("evaluation", "kept chunks not counted as played", "train/evaluation/pair_store.py",
             (("            done[m, lo:hi] = True", "            done[m, lo:hi] = False"),), RESUME),
    Mutation("evaluation", "the seed left out of what a checkpoint holds", "train/evaluation/matches.py",
             (('"pairs": pairs, "seed": seed,', '"pairs": pairs,'),), RESUME),
    Mutation("evaluation", "a retrained checkpoint taken for the old one", "train/evaluation/matches.py",
             (('else f"{label(spec)} ({file_digest(path)})"', "else label(spec)"),), RESUME),
    Mutation("evaluation", "a chunk kept under the pairs after its own", "train/evaluation/pair_store.py",
             (('name = f"matchup{matchup}-pairs{first_pair:06d}-{first_pair + len(scores):06d}.npz"',
               'name = f"matchup{matchup}-pairs{first_pair + 1:06d}-{first_pair + 1 + len(scores):06d}.npz"'),),
             RESUME),
    Mutation("evaluation", "a killed parent not yet reaped counts as alive", "train/evaluation/matches.py",
             (('return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")',
               'return stat.read().rsplit(")", 1)[1].split()[0] in ("X",)'),), RESUME),
)


@dataclass
class Outcome:
    """What happened to one mutation."""

    mutation: Mutation
    status: str  # caught, survived, broken
    seconds: float
    detail: str


def copy_project(destination: Path, worktree: bool) -> str:
    """The project's files at ``destination``: the committed tree, or the working tree (no .git, .venv, runs).

    Returns what was copied (``HEAD <commit>`` or ``working tree``), fixed now: HEAD may move during a long run.
    """
    if worktree:
        ignore = shutil.ignore_patterns(".git", ".venv", "runs", "__pycache__", ".pytest_cache", ".ruff_cache",
                                        "*.egg-info")
        shutil.copytree(ROOT, destination, ignore=ignore, dirs_exist_ok=True)
        return "working tree"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive, check=True)
    return f"HEAD {commit}"


def run_tests(tree: Path, tests: tuple[str, ...], timeout: int) -> tuple[int, str, float]:
    """Run ``tests`` in ``tree`` (its packages first on the path); (exit code, last output line, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               "-n", "0", f"--timeout={timeout}", *tests]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=20 * timeout)
    except subprocess.TimeoutExpired:
        return -1, "the test run itself timed out", time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return done.returncode, (failed or lines or [done.stderr.strip()[-200:]])[-1], time.perf_counter() - start


def clear_compiled(tree: Path) -> None:
    """Delete numba's on-disk caches in ``tree``: a kernel's cache is checked against its own file only, so one
    compiled with the unmutated version of a function from another file would survive the mutation."""
    for cached in (*tree.rglob("*.nbi"), *tree.rglob("*.nbc")):
        cached.unlink()


def apply(tree: Path, mutation: Mutation) -> str | None:
    """Write the mutated file into ``tree``; the original text, or None if an edit does not match exactly once."""
    path = tree / mutation.path
    original = path.read_text()
    text = original
    for old, new in mutation.edits:
        if text.count(old) != 1:
            return None
        text = text.replace(old, new)
    path.write_text(text)
    return original


def check(mutations: list[Mutation], worktree: bool, timeout: int) -> tuple[str, list[Outcome]]:
    """Run every mutation (module docstring); what was copied, and the outcomes. A failing baseline stops all."""
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="uno-mutations-") as folder:
        tree = Path(folder)
        source = copy_project(tree, worktree)
        all_tests = tuple(sorted({test for m in mutations for test in m.tests}))
        code, last, seconds = run_tests(tree, all_tests, timeout)
        print(f"baseline ({len(all_tests)} test files): exit {code} in {seconds:.0f} s: {last}", flush=True)
        if code != 0:
            raise SystemExit("the unmutated tests fail: fix them before checking mutations")
        for mutation in mutations:
            original = apply(tree, mutation)
            if original is None:
                outcome = Outcome(mutation, "broken", 0.0, "an edit no longer matches the source exactly once")
            else:
                try:
                    clear_compiled(tree)
                    code, last, seconds = run_tests(tree, mutation.tests, timeout)
                finally:
                    (tree / mutation.path).write_text(original)
                    clear_compiled(tree)
                status = {0: "survived", 1: "caught"}.get(code, "broken")
                outcome = Outcome(mutation, status, seconds, last)
            outcomes.append(outcome)
            print(f"{outcome.status:8} {outcome.seconds:6.1f} s  [{mutation.area}] {mutation.name}: {outcome.detail}",
                  flush=True)
    return source, outcomes


def table(outcomes: list[Outcome]) -> str:
    """Markdown: caught/survived per area, then every mutation."""
    by_area: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_area[outcome.mutation.area].append(outcome)
    lines = ["| area | mutations | caught | survived | broken |", "| --- | ---: | ---: | ---: | ---: |"]
    for area, group in by_area.items():
        count = {s: sum(o.status == s for o in group) for s in ("caught", "survived", "broken")}
        lines.append(f"| {area} | {len(group)} | {count['caught']} | {count['survived']} | {count['broken']} |")
    lines += ["", "| area | mutation | result | seconds |", "| --- | --- | --- | ---: |"]
    for o in outcomes:
        lines.append(f"| {o.mutation.area} | {o.mutation.name} | {o.status} | {o.seconds:.1f} |")
    return "\n".join(lines)


def write_doc(text: str) -> None:
    """Replace the result block of docs/testing.md (between its markers) with ``text``."""
    doc = DOC.read_text()
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--area", action="append", help="only this area (repeatable)")
    parser.add_argument("--worktree", action="store_true", help="mutate the working tree's files, not HEAD's")
    parser.add_argument("--timeout", type=int, default=60, help="per-test timeout in seconds (default 60)")
    parser.add_argument("--write", action="store_true", help=f"write the result table into {DOC.name}")
    parser.add_argument("--name", action="append", help="only mutations whose name contains this (repeatable)")
    parser.add_argument("--tests", nargs="+", help="run these test files instead of each mutation's own (to see "
                        "whether other tests catch it)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args(argv)
    mutations = [m for m in MUTATIONS if (not args.area or m.area in args.area)
                 and (not args.name or any(part in m.name for part in args.name))]
    if args.tests:
        mutations = [replace(m, tests=tuple(args.tests)) for m in mutations]
    if args.list:
        for m in mutations:
            print(f"[{m.area}] {m.name} ({m.path})")
        return 0
    source, outcomes = check(mutations, args.worktree, args.timeout)
    result = table(outcomes)
    print(result)
    if args.write:
        when = time.strftime("%Y-%m-%d")
        write_doc(f"Last run: {when}, on {source}, `python benchmarks/mutations.py --write`.\n\n{result}")
    return 0 if all(o.status == "caught" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
