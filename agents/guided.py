"""``search-guided``: the project's strongest player, the search guided by a shipped network.

Every name a user can seat (``uno-evaluate search-guided``, ``uno-play --opponent search-guided``,
``gym.make("Uno-v0", opponent="search-guided")``) builds :func:`guided_search` with its defaults, which are the
player measured in docs/results.md ("Strength of the shipped players"):

* **Worlds** come from the particle filter with the **learned opponent model** (:mod:`uno_env.belief.learned`): it is
  not told whom it plays, and finds out from the opponent's plays which of its candidate models fits. Its uniform
  candidate answers for itself (``catch_all="random"``), as in the measured player; the model's default, the plain
  filter answering for it, has not been measured inside this search.
* **Rollouts**: the network's actor plays the searching seat, compiled into the search's kernels, and ``rule`` the
  other seat; each simulation stops after ``leaf_moves`` of the searching seat's decisions and the network's critic
  scores it. The simulations are played 64 at a time, one forward pass per round of the network's choices.
* **The default-move guard**: the search's choice replaces the network's own move only when it is better by more
  than one standard error on the shared worlds (its worth measured in "The default-move guard of the guided search").

**Modelling the opponent.** :func:`guided_search` takes another learned model (``opponent_model``) and can roll out
the opponent the model has learned instead of ``rule`` (``opponent_rollout="modelled"``: each world's opponent is a
candidate drawn by the learned weights, :mod:`agents.search`). Told the opponent (a model whose candidates are its
exact model and the uniform one) or learning it among the training styles, the search was measured against the
held-out styles in docs/results.md ("The guided search that models its opponent"): told, +1.7 points (+0.2 .. +3.2);
learning among the training styles, -0.3 (-2.5 .. +1.8).

Strength, with the shipped ``search-q-none`` as the network and 1,800 or 3,000 simulations a decision: **65.1%
(64.5% - 65.8%) against** ``rule`` over 8,000 fresh deal pairs, where the network alone wins 56.2%; 77.8% against
``random`` (500 pairs). A decision takes
about 0.12 s of one core at 1,800 simulations (docs/benchmarks.md, "Search speed"), so an evaluation of 2,000
pairs against ``rule`` takes about an hour on two cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from agents.shipped import MODEL_FILE, checkpoint_path
from uno_env.belief import LearnedOpponent
from uno_env.belief.learned import RULE_CANDIDATES

#: The network of the named player: the shipped agent trained without belief features (the compiled actor reads the
#: public observation only), whose guided search is the one measured.
DEFAULT_NETWORK = "search-q-none"


def guided_search(network: str | Path = DEFAULT_NETWORK, simulations: int | None = 1_800,
                  time_ms: float | None = None, n_particles: int = 500, leaf_moves: int = 4,
                  opponent_model: LearnedOpponent | None = None,
                  opponent_rollout: Literal["rule", "modelled"] = "rule") -> SearchPolicy:
    """The search guided by ``network`` (a shipped agent's name or a checkpoint ``.zip``), as described above.

    Args:
        network: a shipped agent's name (``models/NAME/model.zip``) or the path of a checkpoint; it must have been
            trained without belief features, since its actor plays inside the search's simulated worlds.
        simulations: simulations a decision (``None``: only ``time_ms`` limits the search).
        time_ms: wall-clock milliseconds a decision (``None``: only ``simulations`` limits it).
        n_particles: worlds the learned-model filter keeps.
        leaf_moves: the searching seat's decisions a simulation plays before the network's critic scores it.
        opponent_model: the learned opponent model of the filter; ``None``: the measured player's, the rule-like
            candidates (:data:`~uno_env.belief.learned.RULE_CANDIDATES`) weighed by their prior, the uniform one
            answering for itself.
        opponent_rollout: who plays the opponent's seat in the simulations: ``"rule"``, or ``"modelled"``, in each
            world a candidate of ``opponent_model`` drawn by its learned weights.

    Raises:
        ValueError: if ``network`` names neither a shipped agent nor a file, or was trained with belief features;
            and for the budgets, rollouts and models :class:`~agents.search.SearchPolicy` refuses (a modelled
            opponent whose candidates name no compiled player).
    """
    path = checkpoint_path(network, "guided search")
    policy = PPOPolicy.load(path, name=path.parent.name if path.name == MODEL_FILE else path.stem)
    if opponent_model is None:  # the filter its published strength was measured with
        opponent_model = LearnedOpponent(RULE_CANDIDATES, catch_all="random", proposal="prior")
    return SearchPolicy(simulations=simulations, time_ms=time_ms, belief="particles", n_particles=n_particles,
                        opponent_model=opponent_model, rollout=actor_params(policy), opponent_rollout=opponent_rollout,
                        value=value_params(policy), leaf_moves=leaf_moves)
