"""Two-player UNO for reinforcement learning: a rules engine, a Gymnasium environment and beliefs.

``import uno_env`` registers ``Uno-v0``::

    import gymnasium as gym
    import uno_env  # noqa: F401

    env = gym.make("Uno-v0", opponent="rule")   # or "random", "search", a shipped agent ("search-q-none"), a Policy
    obs, info = env.reset(seed=0)
    action = int(info["action_mask"].nonzero()[0][0])
    obs, reward, terminated, truncated, info = env.step(action)

    # N games in one compiled call (uno_env.vector): observations (N, obs), info["action_mask"] (N, 61)
    envs = gym.make_vec("Uno-v0", num_envs=256, vectorization_mode="vector_entry_point", opponent="rule")
"""

import gymnasium as gym

# First, before any kernel is defined: a read-only install gets a temporary compile cache (uno_env.compile_cache).
import uno_env.compile_cache  # noqa: F401
from uno_env.env import UnoEnv
from uno_env.game import Game, IllegalActionError
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Needs, Policy, make_policy, register_policy
from uno_env.view import PublicView

__all__ = [
    "Game", "IllegalActionError", "Needs", "Policy", "PublicView", "RandomPolicy", "RulePolicy", "UnoEnv",
    "make_policy", "register_policy",
]

if "Uno-v0" not in gym.registry:
    gym.register(id="Uno-v0", entry_point="uno_env.env:UnoEnv", vector_entry_point="uno_env.vector:UnoVectorEnv",
                 max_episode_steps=1000)
