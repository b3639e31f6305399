"""A belief-based search player: information-set MCTS (SO-ISMCTS) over determinizations of the hidden state.

At each decision with more than one legal action, :class:`SearchPolicy` runs simulations until its
budget (a number of simulations, milliseconds, or both: whichever ends first) is spent. Each simulation

1. picks a root action by UCB1 over the legal actions (each tried once first), or by PUCT with a network's
   policy as the prior (below);
2. **determinizes**: takes a *world*, i.e. an opponent hand drawn from the seat's belief
   (:mod:`uno_env.belief`: card counting or particle filter) with a uniformly shuffled deck of the
   other unseen cards: a full game state consistent with everything the seat has seen;
3. **rolls out** to the end of the game with the rollout policy (``"rule"`` or ``"random"``, or a network's
   actor on the searching seat: :mod:`agents.actor_kernels`; the opponent's seat may have one of its own), and
   backs up the result (win 1, draw 1/2, loss 0) into the root action's statistics.

**The modelled opponent.** With a learned opponent model (``opponent_model="learned"``: the particle filter learns
from the opponent's plays which of its candidate models it plays like, :mod:`uno_env.belief.learned`),
``opponent_rollout="modelled"`` plays on the opponent's seat the opponent the belief has learned it is facing rather
than a fixed player: each world gets a candidate drawn by the candidates' learned weights at the decision (the
filter's posterior from public information alone), and its opponent rolls out with that candidate's compiled
player (the candidate's ``player``: ``random`` for the uniform candidate, ``rule`` for the rule model). Drawing a
candidate per world rather than playing the most probable one keeps the search's worlds a sample of what the belief
holds: an opponent that is ``rule`` with weight 0.7 is ``rule`` in about 70% of the worlds. The candidate belongs to
the world, so every root action meets the same opponent in world ``k`` (common random numbers below); the draws come
from the search's seeded generator, so a seed still plays the same game.

The simulations run compiled (:mod:`agents.search_kernels`: root selection, :func:`uno_env.core.simulate` and the
backup, a batch of worlds per call; the same rules and the same rule player as in Python); each world seeds its
own random stream.

Two choices make small budgets count, since in UNO the luck of the draw dwarfs the difference between
two moves:

* **Common random numbers.** The k-th simulation of every root action runs in the same world k (same
  hidden hand, deck order and random stream), so root actions are compared on equal luck.
* **The rollout policy's move is the default.** The search plays the most visited root action only if
  it beats the rollout policy's own move (a network's: its highest logit) on the worlds both were tried in by
  more than ``keep_default_z`` standard errors (a paired comparison); otherwise it keeps the default move.
  With a good rollout policy, noise can then rarely make the player worse than that policy.

A network can guide the search beyond playing the searching seat's rollouts (``rollout=actor_params(policy)``):

* **Its critic scores leaves** (``value=value_params(policy)``, ``leaf_moves=K``): a simulation applies the root
  action, plays on with the rollout policies for ``K`` of the searching seat's decisions, and if the game is still
  running at its next decision, the critic's estimate there is the simulation's reward
  (:func:`agents.search_kernels.network_rewards`): shorter simulations, more of them, and no rollout noise after the
  leaf, at the price of the critic's bias.
* **Its policy is the prior at the root** (``prior=C``): root actions are chosen by PUCT,
  ``mean + C * P(a) * sqrt(N) / (1 + n(a))`` with ``P`` the softmax of the actor's logits over the legal actions
  (:func:`agents.search_kernels.select_root`), after each action was tried once, so the simulations go to the moves
  the network likes unless their results say otherwise. Common random numbers hold as without a prior.
* **Its simulations run in batches** (``batch``, 64 by default): the root chooses that many at once, each as
  PUCT or UCB1 would if the simulations already chosen had scored their action's mean (a *virtual visit*), and they
  are played together, one forward pass over all the positions that await the network
  (:func:`agents.search_kernels.pick_batch`, :func:`agents.search_kernels.network_rewards`). A pass over 64
  positions costs a fraction of 64 passes (docs/design.md, "The guided search: batches and a rational tanh"); each
  simulation still scores what it would alone, and ``batch=1`` is the search one simulation at a time.

The tree is one level deep: UCB over the legal actions at the root information set, rollouts below. Deeper trees
measured weaker at the few hundred simulations a move they were tried with: nodes below the root got too few visits
to beat the rollout policy's moves there (docs/results.md, "Tried and dropped").

The default budget, 16,000 simulations a move (about 0.2 s on one core of the project's machine), wins 4.5 points
more against the rule player than 800 simulations.

Why information-set MCTS and not POMCP: the belief lives in :mod:`uno_env.belief`, updated from the
public events between decisions, so the search only needs root samples from it; POMCP keeps its own
particles in every tree node (a second belief filter) and branches on observations, and our own draws
reveal a specific card, so its tree would split into thin branches after every draw.

:class:`OracleSearchPolicy` is the same search given the opponent's true hand instead of belief samples
(the deck order stays hidden). It measures the ceiling a perfect belief reaches at the same budget; it
is never registered as an opponent name and is only wired through :func:`play_oracle_game`.

The player starts its belief from the view right after the deal, which harnesses hand it through the
optional ``observe_start(view)`` hook of the Policy protocol (:mod:`uno_env.policy`). A harness
without the hook still works: the belief then starts from the first view :meth:`SearchPolicy.act`
receives, without learning from the events it carries.

The policy registry (:mod:`uno_env.policy`) builds this class with its defaults for the name ``"search"``.
It needs no belief features in its observations (it declares no ``needs``): it keeps its own tracker.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from agents.actor_kernels import BATCH, actor_choice, forward
from agents.search_kernels import Playouts, deal_worlds, run_root
from uno_env.belief import (
    BeliefKind,
    LearnedOpponent,
    OpponentModelSetting,
    check_opponent_model,
    check_particles,
    make_belief,
)
from uno_env.cards import COPIES, NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.core import COMPILED_PLAYERS, RANDOM_POLICY, RULE_POLICY, STATE_SIZE, pack_state, seed_stream
from uno_env.game import Game
from uno_env.match import GameResult, play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import NO_NEEDS, Policy
from uno_env.view import PublicView

_COPIES = np.array(COPIES, dtype=np.int64)
_SAMPLE_BATCH = 64  # worlds drawn at once (one vectorized belief call, one kernel call to deal them)
_MAX_ROLLOUT_ACTIONS = 3000  # a rollout still running then counts as a draw (UNO games end far sooner)
_ME = 0  # the searching seat inside a determinization
#: The built-in rollout policies by name, as codes of the compiled players (:data:`uno_env.core.COMPILED_PLAYERS`).
ROLLOUTS = {"random": RANDOM_POLICY, "rule": RULE_POLICY}
RolloutName = Literal["random", "rule"]
#: The opponent's rollout by the learned opponent model: each world's opponent is a candidate drawn by its weight.
MODELLED = "modelled"
OpponentRolloutName = Literal["random", "rule", "modelled"]


class _Uniforms:
    """Uniform floats in [0, 1) from a seeded Generator, drawn in batches."""

    __slots__ = ("rng", "batch", "values", "index")

    def __init__(self, rng: np.random.Generator, batch: int = 256) -> None:
        self.rng = rng
        self.batch = batch
        self.values: list[float] = []
        self.index = 0

    def __call__(self) -> float:
        if self.index == len(self.values):
            self.values = self.rng.random(self.batch).tolist()
            self.index = 0
        value = self.values[self.index]
        self.index += 1
        return value


class SearchPolicy:
    """Information-set MCTS over determinizations sampled from the seat's belief about the opponent.

    Args:
        simulations: simulations per decision (``None``: no limit on the count).
        time_ms: wall-clock milliseconds per decision (``None``: no time limit). At least one of the two
            budgets must be set; the search stops at whichever is reached first, after at least one
            simulation. Decisions with a single legal action are answered without search.
        belief: ``"counting"`` or ``"particles"``: the :mod:`uno_env.belief` tracker determinizations are
            drawn from.
        n_particles: particle count of the ``"particles"`` tracker.
        rollout: the searching seat's policy finishing each simulated game: ``"random"``, ``"rule"``, or the
            ``params`` of a network's actor (:func:`agents.compiled_actor.actor_params`), all compiled.
        opponent_rollout: the opponent seat's rollout policy, ``"random"`` or ``"rule"``; ``None``: ``rollout``'s,
            which must then be one of the two; ``"modelled"``: in each world, the compiled player of a candidate of
            the learned opponent model drawn by its learned weight (module docstring), which needs
            ``opponent_model="learned"`` (or a :class:`~uno_env.belief.LearnedOpponent`) whose every candidate names
            a compiled player.
        exploration: the UCB1 constant ``c`` in ``mean + c * sqrt(ln(1 + simulations) / visits)``; rewards are in
            [0, 1].
        keep_default_z: with ``rule`` or a network rolling out, play the search's choice only if it beats that
            policy's own move (the network's: its highest logit) by more than this many standard errors on shared
            worlds (``None``: always the search's).
        opponent_policy: passed to the particle filter for its optional policy-aware likelihood.
        opponent_model: ``"told"`` (the model of ``opponent_policy``, if any) or ``"learned"`` (or a
            :class:`~uno_env.belief.LearnedOpponent`): the particle filter learns the opponent's model from its
            plays instead (:func:`uno_env.belief.make_belief`); needs ``belief="particles"`` and no
            ``opponent_policy``.
        clock: seconds as a float; the time budget reads it (tests pass a fake clock).
        value: a network's critic (:func:`agents.compiled_actor.value_params`) that scores each simulation after
            ``leaf_moves`` of the searching seat's decisions; needs a network's actor as ``rollout``.
        leaf_moves: the searching seat's decisions a simulation plays (by ``rollout``'s network) before the critic
            scores its next one; 0: right after the opponent's reply to the root action. Only with ``value``.
        prior: the PUCT constant ``C`` of the root's selection with the ``rollout`` network's policy as the prior
            (``None``: UCB1 with ``exploration``); needs a network's actor as ``rollout``.
        batch: with a network's actor as ``rollout``, the simulations chosen at once and played together, one
            forward pass per round of the network's choices (:func:`agents.search_kernels.pick_batch`), 1 to
            :data:`~agents.actor_kernels.BATCH`; 1 is the search one simulation at a time.

    After each searched decision, ``last_simulations`` holds how many simulations ran and ``last_root`` each root
    action's visits and summed reward (win 1, draw 1/2, loss 0, or a leaf's value on that scale); ``searches``,
    ``search_seconds`` and ``search_simulations`` count the searched decisions, their time (belief update included)
    and their simulations since construction.
    """

    #: The player keeps its own belief (``belief``), fed from the plain views: the seat encodes nothing extra.
    needs = NO_NEEDS

    def __init__(
        self,
        simulations: int | None = 16_000,
        time_ms: float | None = None,
        belief: BeliefKind = "particles",
        n_particles: int = 500,
        rollout: RolloutName | tuple = "rule",
        opponent_rollout: OpponentRolloutName | None = None,
        exploration: float = 0.7,
        keep_default_z: float | None = 1.0,
        opponent_policy: Policy | None = None,
        opponent_model: OpponentModelSetting | LearnedOpponent = "told",
        clock: Callable[[], float] = time.perf_counter,
        value: tuple | None = None,
        leaf_moves: int | None = None,
        prior: float | None = None,
        batch: int = BATCH,
    ) -> None:
        if simulations is None and time_ms is None:
            raise ValueError("set a budget: simulations, time_ms, or both")
        if simulations is not None and (not isinstance(simulations, int) or simulations < 1):
            raise ValueError(f"simulations must be a positive int or None, got {simulations!r}")
        if time_ms is not None and not time_ms > 0:
            raise ValueError(f"time_ms must be positive or None, got {time_ms!r}")
        if belief not in ("counting", "particles"):
            raise ValueError(f"belief must be 'counting' or 'particles', got {belief!r}")
        learned = check_opponent_model(belief, opponent_model, opponent_policy)
        self.simulations = simulations
        self.time_ms = time_ms
        self.belief = belief
        self.n_particles = check_particles(n_particles)
        self._actor = rollout if isinstance(rollout, tuple) else None
        if self._actor is None and (not isinstance(rollout, str) or rollout not in ROLLOUTS):
            raise ValueError(f"rollout must be one of {', '.join(ROLLOUTS)} or a network's actor params "
                             f"(agents.compiled_actor.actor_params), got {rollout!r}")
        if self._actor is not None and opponent_rollout is None:
            raise ValueError("a network's actor rolls out the searching seat only: set opponent_rollout too")
        if opponent_rollout is not None and (not isinstance(opponent_rollout, str)
                                             or opponent_rollout not in (*ROLLOUTS, MODELLED)):
            raise ValueError(f"opponent_rollout must be one of {', '.join((*ROLLOUTS, MODELLED))} or None, got "
                             f"{opponent_rollout!r}")
        #: With a modelled opponent, the compiled player (its code) of each candidate of the learned model.
        self._candidate_players: np.ndarray | None = None
        if opponent_rollout == MODELLED:
            if learned is None:
                raise ValueError("opponent_rollout 'modelled' plays the opponent the belief learns: set "
                                 "opponent_model='learned' (or a LearnedOpponent), with belief='particles'")
            self._candidate_players = np.array([COMPILED_PLAYERS.index(player)
                                                for player in learned.candidate_players()], dtype=np.int64)
        _check_guidance(self._actor, value, leaf_moves, prior)
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= BATCH:
            raise ValueError(f"batch must be an int from 1 to {BATCH}, got {batch!r}")
        self.value, self.leaf_moves, self.prior, self.batch = value, leaf_moves, prior, batch
        # The rule player's own move is the default the search must beat; random play has none.
        self.rollout_policy = RulePolicy() if rollout == "rule" else None
        # The compiled playouts' codes of the two seats (a network's actor replaces the searching seat's; a modelled
        # opponent has a code per world instead: _world_opponents).
        self._compiled_rollout = (RANDOM_POLICY if self._actor is not None else ROLLOUTS[rollout],
                                  None if opponent_rollout == MODELLED else ROLLOUTS[opponent_rollout or rollout])
        self.exploration = exploration
        self.keep_default_z = keep_default_z
        self.opponent_policy = opponent_policy
        self.opponent_model = opponent_model
        self.clock = clock
        self.last_simulations = 0
        self.last_root: dict[int, tuple[int, float]] = {}
        self.searches = 0
        self.search_seconds = 0.0
        self.search_simulations = 0
        self._tracker: Any = None
        self.reset(None)

    # ------------------------------------------------------------------ Policy protocol
    def reset(self, seed: int | None = None) -> None:
        """Start a new game; the belief, the determinizations and the rollouts all derive from ``seed``."""
        belief_seed, search_seed = np.random.SeedSequence(seed).spawn(2)
        self._belief_rng = np.random.default_rng(belief_seed)
        self._rng = np.random.default_rng(search_seed)
        self._uniform = _Uniforms(self._rng)
        self._tracker = None
        if RULE_POLICY in self._compiled_rollout:
            # A draw whenever a seat rolls out with rule: part of the search's seeded stream, which every world is
            # drawn from after it, so a seed keeps playing the same games.
            self._rng.integers(2**62)

    def observe_start(self, view: PublicView) -> None:
        """Start the belief from this seat's view right after the deal (the optional Policy hook)."""
        self._tracker = make_belief(self.belief, n_particles=self.n_particles, rng=self._belief_rng,
                                    opponent_policy=self.opponent_policy, opponent_model=self.opponent_model)
        self._tracker.reset(view)

    def act(self, view: PublicView) -> int:
        """Update the belief with the view's events, then search if there is a choice to make."""
        start = time.perf_counter()
        self._observe(view)
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        action = self._search(view)
        self.searches += 1
        self.search_seconds += time.perf_counter() - start
        return action

    # ------------------------------------------------------------------ belief
    def _observe(self, view: PublicView) -> None:
        if self._tracker is None:
            # No observe_start from the harness: begin from this view; its events are already reflected
            # in its counts, so they must not be applied a second time.
            self.observe_start(replace(view, events=[]))
        else:
            self._tracker.update(view)

    def _opponent_hands(self, count: int) -> np.ndarray | None:
        """``count`` opponent hands (rows of 54 counts) to determinize with, or ``None`` for uniformly random subsets
        of the unseen cards, which the world kernel draws itself (card counting's belief: its ``sample_hands``
        draws the same distribution through the general belief machinery, at several times the cost)."""
        if self.belief == "counting":
            return None
        return self._tracker.sample_hands(count, self._rng)

    def _world_opponents(self, count: int) -> np.ndarray:
        """The compiled player (a code) of the opponent's seat in each of ``count`` new worlds: the fixed
        ``opponent_rollout``'s, or with ``"modelled"`` each a candidate's drawn by the learned weights of the belief
        at this decision (which change only between decisions, as the belief does)."""
        if self._candidate_players is None:
            return np.full(count, self._compiled_rollout[1], dtype=np.int64)
        weights = self._tracker.model_weights()
        return self._candidate_players[self._rng.choice(len(weights), size=count, p=weights / weights.sum())]

    # ------------------------------------------------------------------ search
    def _search(self, view: PublicView) -> int:
        """Run the simulations the budget allows from this decision; the action to play."""
        legal = view.legal_actions
        worlds = _Worlds(self, view)
        limit = self.simulations if self.simulations is not None else math.inf
        root = _Root(legal, self._try_order(len(legal), limit))
        if self.prior is not None:
            root.priors = self._priors(root, worlds)
        deadline = math.inf if self.time_ms is None else self.clock() + self.time_ms / 1000.0
        done = 0
        while done < limit and (done == 0 or self.clock() < deadline):
            # The kernels cannot read the (possibly fake) clock, so with a time budget each call runs one simulation,
            # or one batch of a network's (agents.search_kernels.run_root), and the clock is read after it; with a
            # count alone, all run in one go.
            stop = limit if self.time_ms is None else min(limit, done + (1 if self._actor is None else self.batch))
            done = self._run(root, worlds, done, stop)
        self.last_simulations = done
        self.search_simulations += done
        self.last_root = {action: (int(root.visits[i]), float(root.totals[i])) for i, action in enumerate(legal)}
        best = int(np.argmax(root.visits))  # the most visited action, the first of equals
        if self.keep_default_z is None or (self.rollout_policy is None and self._actor is None):
            return legal[best]
        default = self._default(view, root, worlds)
        if best != default and _beats(root.rewards_of(best), root.rewards_of(default), self.keep_default_z):
            return legal[best]
        return legal[default]

    def _default(self, view: PublicView, root: _Root, worlds: _Worlds) -> int:
        """The index of the rollout policy's own move at the root: the rule player's, or the network's highest logit."""
        if self._actor is None:
            return view.legal_actions.index(self.rollout_policy.act(view))
        move = actor_choice(worlds.decision_state(), root.actions, len(root.actions), self._actor)
        return int(np.flatnonzero(root.actions == move)[0])

    def _priors(self, root: _Root, worlds: _Worlds) -> np.ndarray:
        """The rollout network's policy over the root actions: the softmax of its logits on the legal ones.

        The actor reads only the searching seat's public information, which every world shares, so one world's
        state gives the decision's logits.
        """
        logits = forward(worlds.decision_state(), root.actions, len(root.actions), self._actor)[root.actions]
        weights = np.exp(logits.astype(np.float64) - logits.max())
        return weights / weights.sum()

    def _try_order(self, actions: int, limit: float) -> np.ndarray:
        """The order in which the first simulations try the root actions (indices), each once: seeded, random."""
        untried = list(range(actions))
        return np.array([untried.pop(int(self._uniform() * len(untried))) for _ in range(min(actions, limit))],
                        dtype=np.int64)

    def _run(self, root: _Root, worlds: _Worlds, done: int, stop: int) -> int:
        """Simulations number ``done`` to ``stop - 1`` (from 0); returns ``stop``.

        Common random numbers: the k-th simulation of every root action runs in the same world k, so root actions
        are compared on the same hidden hands, deck orders and rollout draws. The simulations run compiled, as many
        per call as there are worlds drawn; the fields go to the kernel as plain tuples, which numba's dispatcher
        types faster than NamedTuples (:func:`~agents.search_kernels.run_root`).
        """
        playouts = tuple(Playouts(float(self.exploration), self._compiled_rollout[0], _MAX_ROLLOUT_ACTIONS,
                                  self.leaf_moves or 0, float(self.prior or 0.0), self.batch))
        while done < stop:
            done = run_root(worlds.fields(), root.stats(), done, stop, playouts, self._actor, self.value, root.priors)
            if done < stop:  # the next simulation needs a world not drawn yet
                worlds.extend()
                root.fit(len(worlds))
        return done


class _Root:
    """The root's statistics, by the index of each action among the legal ones (the arrays of :func:`run_root`).

    ``visits`` and ``totals`` (summed rewards) per action; ``rewards[i, k]`` is action ``i``'s reward in world
    ``k``, filled for ``k < visits[i]``; ``order`` is the order of the first tries; ``priors`` the network's
    policy over the actions when it guides the selection (else ``None``).
    """

    def __init__(self, legal: list[int], order: np.ndarray) -> None:
        self.actions = np.array(legal, dtype=np.int64)
        self.order = order
        self.visits = np.zeros(len(legal), dtype=np.int64)
        self.totals = np.zeros(len(legal))
        self.rewards = np.zeros((len(legal), _SAMPLE_BATCH))
        self.picks, self.picked = np.empty((BATCH, 2), dtype=np.int64), np.empty(BATCH)  # run_root's scratch
        self.priors: np.ndarray | None = None

    def fit(self, worlds: int) -> None:
        """Make room for a reward in each of ``worlds`` worlds (doubling, so growing costs little overall)."""
        if worlds > self.rewards.shape[1]:
            self.rewards = _grown(self.rewards, worlds, axis=1)

    def stats(self) -> tuple:
        """The statistics as :func:`~agents.search_kernels.run_root` updates them (the same arrays, not copies): the
        fields of a :class:`~agents.search_kernels.RootStats`, as a plain tuple (see ``run_root``)."""
        return self.actions, self.order, self.visits, self.totals, self.rewards, self.picks, self.picked

    def rewards_of(self, i: int) -> np.ndarray:
        """Action ``i``'s rewards, world by world."""
        return self.rewards[i, :self.visits[i]]


class _Worlds:
    """The determinizations of one decision, drawn in batches on demand and replayable by index.

    World ``k`` is an opponent hand drawn from the player's sampler, a uniformly shuffled deck of the
    other unseen cards, a seed for everything random after that (reshuffles, rollout choices) and the compiled player
    of the opponent's seat, so world ``k`` plays the same game with the same random stream and the same opponent for
    every root action. The worlds are packed kernel states, row ``k`` for world ``k``
    (:func:`~agents.search_kernels.deal_worlds` draws them from a stream of their own, seeded from the player's
    generator).
    """

    def __init__(self, player: SearchPolicy, view: PublicView) -> None:
        self.player = player
        self.unseen = _COPIES - np.asarray(view.hand) - np.asarray(view.discard)
        discard = [card for card in range(NUM_CARD_TYPES) for _ in range(view.discard[card])]
        discard.remove(view.top)
        discard.append(view.top)  # only the top card's position matters to the engine
        self.opponent_hand_size = view.opponent_hand_size
        # The decision's state without the opponent's hand and the deck, which each world fills in.
        self.base = pack_state((list(view.hand), [0] * NUM_CARD_TYPES), [], discard, view.active_colour, _ME,
                               view.pending_draw)
        self.stream = seed_stream(int(player._rng.integers(2**63)))
        self.count = 0
        self._states = np.zeros((0, STATE_SIZE), dtype=np.int64)
        self._seeds = np.zeros(0, dtype=np.uint64)
        self._opponents = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return self.count

    @property
    def states(self) -> np.ndarray:
        """The worlds as kernel states, one row each."""
        return self._states[:self.count]

    @property
    def seeds(self) -> np.ndarray:
        """Each world's seed of its random stream."""
        return self._seeds[:self.count]

    @property
    def opponents(self) -> np.ndarray:
        """Each world's compiled player of the opponent's seat (a code of :data:`uno_env.core.COMPILED_PLAYERS`)."""
        return self._opponents[:self.count]

    def fields(self) -> tuple:
        """The worlds as :func:`~agents.search_kernels.run_root` takes them: a :class:`~agents.search_kernels.Worlds`'
        fields, as a plain tuple."""
        return self.states, self.seeds, self.opponents

    def decision_state(self) -> np.ndarray:
        """World 0's packed state: the decision as the searching seat sees it (its public part is every world's)."""
        if self.count == 0:
            self.extend()  # the batch the first simulation draws anyway, drawn a little earlier
        return self._states[0]

    def extend(self) -> None:
        """Draw the next batch of worlds."""
        hands = self.player._opponent_hands(_SAMPLE_BATCH)
        if hands is None:
            hands = np.zeros((_SAMPLE_BATCH, NUM_CARD_TYPES), dtype=np.int64)  # drawn by deal_worlds instead
            sampled = True
        else:
            hands = np.asarray(hands, dtype=np.int64)
            sampled = False
            if (hands > self.unseen).any() or (hands.sum(axis=1) != self.opponent_hand_size).any():
                raise ValueError(f"an opponent hand to determinize with must be {self.opponent_hand_size} of the "
                                 "unseen cards")
        end = self.count + len(hands)
        if end > len(self._states):
            self._states = _grown(self._states, end)
            self._seeds = _grown(self._seeds, end)
            self._opponents = _grown(self._opponents, end)
        self._opponents[self.count:end] = self.player._world_opponents(len(hands))
        deal_worlds(self.base, self.unseen, hands, self.opponent_hand_size, sampled, self.stream,
                    self._states[self.count:end], self._seeds[self.count:end])
        self.count = end


def _check_guidance(actor: tuple | None, value: tuple | None, leaf_moves: int | None, prior: float | None) -> None:
    """Refuse network guidance the search cannot use: a critic or a prior without a network's actor rolling out, a
    critic without ``leaf_moves`` (or the reverse), or parameters of the wrong head."""
    if actor is not None and actor[0][-1].shape[0] != NUM_ACTIONS and not actor[5]:  # actor[5]: an afterstate actor
        raise ValueError("rollout: a network's actor has one output per action; use actor_params, not value_params")
    if (value is not None or prior is not None) and actor is None:
        raise ValueError("a value head or a prior guides the search with a network's actor rolling out the searching "
                         "seat: set rollout=actor_params(policy) (and opponent_rollout)")
    if value is not None and (not isinstance(value, tuple) or value[0][-1].shape[0] != 1 or value[5]):
        raise ValueError("value must be a critic's params, value_params(policy), with one output")
    if (value is None) != (leaf_moves is None):
        raise ValueError("a value head and leaf_moves go together: set both or neither")
    if leaf_moves is not None and (not isinstance(leaf_moves, int) or isinstance(leaf_moves, bool) or leaf_moves < 0):
        raise ValueError(f"leaf_moves must be a non-negative int, got {leaf_moves!r}")
    if prior is not None and not (isinstance(prior, int | float) and prior > 0 and math.isfinite(prior)):
        raise ValueError(f"prior (the PUCT constant) must be a positive number or None, got {prior!r}")


def _grown(array: np.ndarray, size: int, axis: int = 0) -> np.ndarray:
    """``array`` with room for at least ``size`` entries along ``axis`` (at least doubled, zeros appended)."""
    shape = list(array.shape)
    shape[axis] = max(size, 2 * shape[axis]) - shape[axis]
    return np.concatenate((array, np.zeros(shape, dtype=array.dtype)), axis=axis)


def _beats(challenger: np.ndarray, default: np.ndarray, z: float) -> bool:
    """Whether ``challenger`` beats ``default`` by more than ``z`` standard errors on the worlds both saw."""
    n = min(len(challenger), len(default))
    if n < 2:
        return False
    diff = challenger[:n] - default[:n]
    return float(diff.mean()) > z * float(diff.std(ddof=1)) / math.sqrt(n)


class OracleSearchPolicy(SearchPolicy):
    """The search player given the opponent's TRUE hand: a measurement ceiling, never an opponent.

    ``hidden_hand()`` must return the opponent's current hand (54 counts) in the game being played; each
    determinization uses it exactly, and only the deck order is sampled. Comparing this player with
    :class:`SearchPolicy` at the same budget shows how much of the information gap a belief closes.
    Use it through :func:`play_oracle_game`. Other arguments are those of :class:`SearchPolicy`.
    """

    def __init__(self, hidden_hand: Callable[[], Sequence[int]], **search_args: Any) -> None:
        self.hidden_hand = hidden_hand
        if search_args.get("opponent_rollout") == MODELLED:
            raise ValueError("the oracle keeps no belief to learn its opponent from: opponent_rollout 'modelled' "
                             "needs one")
        super().__init__(**search_args)

    def observe_start(self, view: PublicView) -> None:
        """Nothing to track: the oracle reads the opponent's hand instead of inferring it."""

    def _observe(self, view: PublicView) -> None:
        pass

    def _opponent_hands(self, count: int) -> np.ndarray:
        return np.tile(np.asarray(self.hidden_hand(), dtype=np.int64), (count, 1))


def play_oracle_game(opponent: Policy, seed: int, oracle_seat: int = 0, first_player: int = 0,
                     **search_args: Any) -> tuple[GameResult, OracleSearchPolicy]:
    """One :func:`~uno_env.match.play_game` of an :class:`OracleSearchPolicy` against ``opponent``.

    The only place the oracle is wired to the hidden state: it reads the other seat's hand in the game
    ``play_game`` deals. Same ``seed``, same deal, so results pair with ordinary games of that seed.
    Returns the result and the oracle (its ``searches``/``search_seconds`` show what its moves cost).
    """
    table: dict[str, Game] = {}
    oracle = OracleSearchPolicy(lambda: table["game"].hands[1 - oracle_seat], **search_args)
    policies = (oracle, opponent) if oracle_seat == 0 else (opponent, oracle)
    result = play_game(policies, seed, first_player, on_deal=lambda game: table.__setitem__("game", game))
    return result, oracle

