"""A network trained by another library, seated as a project Policy so ``train.evaluation`` can play it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from uno_env.view import PublicView

#: Any torch callable from a float32 batch of flat ``belief="none"`` observations to 61 action logits per row.
Actor = Callable[[torch.Tensor], torch.Tensor]


class NetworkPolicy:
    """The Policy protocol over an actor network: the most probable legal action of the view's observation.

    The actor sees the base encoding (``belief="none"``, what ``Uno-v0`` gives by default), so the policy declares
    no needs. Illegal actions are masked out before the argmax, as the libraries' masked policies do when sampling.

    Args:
        actor: maps ``(batch, observation)`` float32 tensors to ``(batch, 61)`` logits.
        name: a label for evaluation tables.
    """

    def __init__(self, actor: Actor, name: str = "network") -> None:
        self.actor = actor
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: PublicView) -> int:
        """The legal action with the highest logit."""
        legal = view.legal_actions
        if len(legal) == 1:  # forced draws need no network call
            return legal[0]
        with torch.inference_mode():
            logits = self.actor(torch.as_tensor(np.asarray(view.observation, dtype=np.float32))[None])[0].numpy()
        return int(np.argmax(np.where(view.action_mask.astype(bool), logits, -np.inf)))
