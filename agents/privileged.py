"""A privileged critic for MaskablePPO: the critic sees hidden state during training, the actor never does.

This is the asymmetric actor-critic of Suphx and PerfectDou ("oracle critic"). The env, built with
``privileged=True`` (:class:`uno_env.env.UnoEnv`), appends hidden channels (the opponent's hand, the next
deck cards: :func:`uno_env.observation.encode_privileged`) after the public observation. PPO's advantages
come from the critic, so a critic that knows more predicts the game's outcome with less noise and the
advantages of the actor's choices stand out from the luck of the deal; the actor stays a policy of the
public observation alone, so the trained agent plays fairly.

:class:`PrivilegedCriticPolicy` is a ``MaskableActorCriticPolicy`` whose actor MLP takes only the first
``public_size`` inputs. Because the slice happens inside the actor, the actor's output cannot depend on
the privileged inputs (a test checks it), and a saved agent plays from a public observation of length
``public_size`` (:class:`agents.ppo.PPOPolicy` gives it nothing more).

Use it through the training config (``policy.critic: privileged``), or directly::

    env = UnoEnv(opponent="rule", privileged=True)
    model = MaskablePPO(PrivilegedCriticPolicy, env, policy_kwargs={"public_size": BASE_SIZE})
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import create_mlp
from torch import nn


class AsymmetricMlpExtractor(nn.Module):
    """Separate actor and critic MLPs; the actor's reads only the first ``public_size`` features.

    The interface of stable-baselines3's ``MlpExtractor`` (``latent_dim_pi``, ``latent_dim_vf``,
    ``forward``, ``forward_actor``, ``forward_critic``), which the policy class calls.
    """

    def __init__(self, feature_dim: int, public_size: int, net_arch: list[int],
                 activation_fn: type[nn.Module]) -> None:
        super().__init__()
        if not 0 < public_size < feature_dim:
            raise ValueError(f"public_size must be between 0 and the observation size {feature_dim}, "
                             f"got {public_size}")
        self.public_size = public_size
        self.policy_net = nn.Sequential(*create_mlp(public_size, -1, net_arch, activation_fn))
        self.value_net = nn.Sequential(*create_mlp(feature_dim, -1, net_arch, activation_fn))
        self.latent_dim_pi = self.latent_dim_vf = net_arch[-1] if net_arch else feature_dim

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """The actor's latent: a function of the public features only."""
        return self.policy_net(features[..., :self.public_size])

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        """The critic's latent, from public and privileged features."""
        return self.value_net(features)


class PrivilegedCriticPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with an actor on the public observation and a critic on all of it.

    Args:
        observation_space: a flat ``Box`` whose first ``public_size`` entries are the public observation.
        public_size: the length of the public observation (what the actor, and a saved agent, reads).
        net_arch: a list of layer sizes, used for both MLPs (a ``{"pi": ..., "vf": ...}`` dict must give
            the same list twice).
        Other arguments: those of ``MaskableActorCriticPolicy``.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 public_size: int, **kwargs: Any) -> None:
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"a privileged critic needs a flat Box observation, got {observation_space}")
        self.public_size = public_size
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch
        if isinstance(arch, dict):
            if arch.get("pi") != arch.get("vf"):
                raise ValueError(f"a privileged critic takes one layer list for actor and critic, got {arch}")
            arch = arch["pi"]
        self.mlp_extractor = AsymmetricMlpExtractor(self.features_dim, self.public_size, list(arch or []),
                                                    self.activation_fn)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "public_size": self.public_size}
