"""An afterstate actor for MaskablePPO: one scorer shared by every move, reading the position and what the move leaves.

The shipped networks give each of the 61 actions its own output row on top of a shared body, so what they learn
about playing `red:7` says nothing about playing `red:5`. Card-game programs since TD-Gammon score *afterstates*
instead: the position as a move leaves it. :class:`AfterstatePolicy` does that for the actor. Its action head
scores each legal move of an observation with one MLP whose input is the observation followed by the move's
:data:`MOVE_FEATURES` features (:func:`move_features`):

=================  ====  ===============================================================================
feature            size  meaning
=================  ====  ===============================================================================
``card``             54  one-hot of the card type played (all zero for the draw)
``colour``            4  one-hot of the colour the move leaves in force (all zero for the draw)
``draw``              1  1 for the draw action
``hand_after``       54  the hand the move leaves (the hand less the card played)
``colours_after``     4  that hand's coloured cards per colour
``wilds_after``       2  its wilds and wild draw fours
``follow``            1  its cards that could follow the card played (its colour in force, its rank, a wild), / 7
``size_after``        1  its size / 20
=================  ====  ===============================================================================

Moves that leave similar hands share what is learned about them. On the same search-value labels the afterstate
actor wins about 3 points more against ``rule`` than the per-action rows (docs/results.md, "Strength of the shipped
players").
The legal moves are read from the observation's ``legal`` channel, so the head needs nothing but the observation:
the logits of illegal actions are 0 (every player and MaskablePPO mask them). The critic is the usual MLP.

Use it through the training config (``policy.actor: afterstate``) or directly::

    model = MaskablePPO(AfterstatePolicy, UnoEnv(), policy_kwargs={"head_arch": [512, 512, 256]})

A checkpoint records ``head_arch`` (:func:`agents.ppo.policy_metadata`) and loads like any other. The compiled actor
(:mod:`agents.compiled_actor`, :mod:`agents.actor_kernels`) plays it too, with the same features computed in numba,
so it can roll out the search's simulations, be a generation's base player and the native vector env's opponent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import create_mlp
from torch import nn

from uno_env.cards import DRAW_ACTION, NUM_ACTIONS, NUM_CARD_TYPES, NUM_COLOURED_RANKS, WILD, action_card, action_colour
from uno_env.observation import BASE_CHANNELS, LEGAL_CHANNEL

#: How many features describe a move (module docstring's table).
MOVE_FEATURES = NUM_CARD_TYPES + 4 + 1 + NUM_CARD_TYPES + 4 + 2 + 1 + 1
_HAND = slice(0, NUM_CARD_TYPES)
assert BASE_CHANNELS[0][:2] == ("hand", NUM_CARD_TYPES)  # the hand is the observation's first channel


def _tables() -> dict[str, np.ndarray]:
    """Constant tables of the move features: per action its card and colour, per card type its colour and rank."""
    card = np.zeros((NUM_ACTIONS, NUM_CARD_TYPES), np.float32)
    colour = np.zeros((NUM_ACTIONS, 4), np.float32)
    for action in range(NUM_ACTIONS):
        if action != DRAW_ACTION:
            card[action, action_card(action)] = 1
            colour[action, action_colour(action)] = 1
    draw = np.zeros((NUM_ACTIONS, 1), np.float32)
    draw[DRAW_ACTION] = 1
    type_colour = np.zeros((NUM_CARD_TYPES, 4), np.float32)
    type_colour[np.arange(WILD), np.arange(WILD) // NUM_COLOURED_RANKS] = 1
    type_rank = np.zeros((NUM_CARD_TYPES, NUM_COLOURED_RANKS), np.float32)  # coloured ranks only
    type_rank[np.arange(WILD), np.arange(WILD) % NUM_COLOURED_RANKS] = 1
    return {"card": card, "colour": colour, "draw": draw, "type_colour": type_colour, "type_rank": type_rank}


TABLES = _tables()


def move_features(hands: torch.Tensor, actions: torch.Tensor, tables: dict[str, torch.Tensor]) -> torch.Tensor:
    """The :data:`MOVE_FEATURES` features (module docstring) of playing ``actions[i]`` from ``hands[i]``.

    ``hands`` are rows of 54 card counts, ``actions`` action ids, ``tables`` :data:`TABLES` as tensors.
    """
    card = tables["card"][actions]
    colour = tables["colour"][actions]
    after = hands - card
    colours_after = after @ tables["type_colour"]
    wilds_after = after[:, WILD:]
    # a coloured card can be followed by a card of its rank; a wild's rank row is zero
    same_rank = ((after @ tables["type_rank"]) * (card @ tables["type_rank"])).sum(1, keepdim=True)
    follow = (colours_after * colour).sum(1, keepdim=True) + wilds_after.sum(1, keepdim=True) + same_rank
    return torch.cat((card, colour, tables["draw"][actions], after, colours_after, wilds_after, follow / 7,
                      after.sum(1, keepdim=True) / 20), dim=1)


class AfterstateHead(nn.Module):
    """Observations -> the 61 logits: each legal move scored by one MLP on (observation, move features), 0 elsewhere.

    Args:
        observation_size: the flat observation's length (the base encoding, then any belief features).
        head_arch: the scorer's hidden layer sizes.
        activation_fn: their activation.
    """

    def __init__(self, observation_size: int, head_arch: list[int], activation_fn: type[nn.Module]) -> None:
        super().__init__()
        self.scorer = nn.Sequential(*create_mlp(observation_size + MOVE_FEATURES, 1, list(head_arch), activation_fn))
        for name, table in TABLES.items():  # constants, not weights: kept out of the state dict
            self.register_buffer(name, torch.from_numpy(table), persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        legal = observations[:, LEGAL_CHANNEL] > 0.5
        rows, actions = legal.nonzero(as_tuple=True)
        tables = {name: getattr(self, name) for name in TABLES}
        inputs = torch.cat((observations[rows], move_features(observations[rows, _HAND], actions, tables)), dim=1)
        logits = observations.new_zeros((len(observations), NUM_ACTIONS))
        return logits.index_put((rows, actions), self.scorer(inputs).squeeze(-1))


class AfterstatePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with an :class:`AfterstateHead` as the actor and the usual MLP critic.

    Args:
        observation_space: a flat ``Box`` whose first channels are the base encoding.
        head_arch: the afterstate scorer's hidden layers.
        net_arch: the critic's layers (a list, or a dict whose ``vf`` entry is used; the actor has no body).
        Other arguments: those of ``MaskableActorCriticPolicy``.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 head_arch: list[int] | tuple[int, ...] = (512, 512, 256), net_arch: Any = None,
                 **kwargs: Any) -> None:
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"an afterstate actor needs a flat Box observation, got {observation_space}")
        if not head_arch or not all(isinstance(units, int) and units > 0 for units in head_arch):
            raise ValueError(f"head_arch must be a non-empty list of positive layer sizes, got {head_arch!r}")
        self.head_arch = list(head_arch)
        critic = net_arch.get("vf", []) if isinstance(net_arch, dict) else list(net_arch or [64, 64])
        super().__init__(observation_space, action_space, lr_schedule, net_arch={"pi": [], "vf": list(critic)},
                         **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        # The actor has no body (net_arch pi = []), so its latent is the observation itself.
        self.action_net = AfterstateHead(self.features_dim, self.head_arch, self.activation_fn)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "head_arch": self.head_arch}
