"""MaskablePPO checkpoints as players: save a model with its env settings, load it back as a Policy.

A checkpoint is an ordinary stable-baselines3 zip with one extra member, ``uno_env.json``, that
records the observation settings the model was trained with (``belief``, ``n_particles``, the
observation size) plus a little provenance (training steps, config name). SB3 ignores the extra
member, so ``MaskablePPO.load`` still works on these files.

* :func:`save_model` writes such a checkpoint;
* :class:`PPOPolicy` turns one into a :class:`~uno_env.opponents.Policy`: it declares the
  ``belief`` it was trained with, so :class:`~uno_env.env.UnoEnv` (as the embedded opponent) and
  :func:`~uno_env.match.play_game` hand it observations of the right shape;
* :func:`load_model` reloads the model for further training into an env, and refuses an env whose
  observation settings differ from the checkpoint's, naming both.

Example::

    from agents.ppo import PPOPolicy
    from uno_env import UnoEnv

    env = UnoEnv(opponent=PPOPolicy.load("models/ppo-none/model.zip"))
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from uno_env.observation import BASE_SIZE
from uno_env.view import PublicView

#: Name of the zip member holding the env settings.
SETTINGS_MEMBER = "uno_env.json"
_BELIEFS = ("none", "counting", "particles")


def save_model(model: Any, path: str | Path, settings: dict[str, Any]) -> Path:
    """Save a MaskablePPO ``model`` to ``path`` (a .zip) with its env ``settings`` embedded.

    ``settings`` must hold at least ``belief``; the observation size is taken from the model, less
    ``settings["privileged_size"]`` hidden channels that only a privileged critic reads (:mod:`agents.privileged`),
    so ``observation_size`` is always what the actor, and a player, needs. Returns the path written.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    if settings.get("belief") not in _BELIEFS:
        raise ValueError(f"settings['belief'] must be one of {_BELIEFS}, got {settings.get('belief')!r}")
    model.save(path)
    privileged = int(settings.get("privileged_size", 0))
    record = dict(settings, privileged_size=privileged,
                  observation_size=int(np.prod(model.observation_space.shape)) - privileged)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(SETTINGS_MEMBER, json.dumps(record, indent=1, sort_keys=True))
    return path


def read_settings(path: str | Path) -> dict[str, Any]:
    """The env settings stored in a checkpoint.

    A plain SB3 zip without them, or a file that is not a zip archive at all, raises ``ValueError`` naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        with zipfile.ZipFile(path) as archive:
            if SETTINGS_MEMBER not in archive.namelist():
                raise ValueError(f"{path} has no {SETTINGS_MEMBER}: it was not saved by agents.ppo.save_model, "
                                 "so its observation settings are unknown")
            return json.loads(archive.read(SETTINGS_MEMBER))
    except zipfile.BadZipFile as error:
        # BadZipFile is no ValueError, so callers (uno-evaluate, the trainer) would show a bare traceback
        # that does not even say which file is broken.
        raise ValueError(f"{path} is not a valid checkpoint (a corrupt or non-zip file: {error})") from None


def _describe(belief: str, size: int | None) -> str:
    return f"belief={belief!r}" + (f" (observation size {size})" if size is not None else "")


def check_settings(path: str | Path, saved: dict[str, Any], belief: str, observation_size: int | None) -> None:
    """Raise ``ValueError`` naming both settings when ``belief``/``observation_size`` differ from ``saved``."""
    trained_size = saved["observation_size"] + saved.get("privileged_size", 0)
    size_differs = observation_size is not None and observation_size != trained_size
    if saved["belief"] != belief or size_differs:
        raise ValueError(
            f"checkpoint {path} was trained with {_describe(saved['belief'], trained_size)}, "
            f"but the environment uses {_describe(belief, observation_size)}")


def load_model(path: str | Path, env: Any = None, **kwargs: Any) -> Any:
    """Load a MaskablePPO checkpoint on the CPU, attached to ``env`` (a VecEnv or gym env) if given.

    The env's observation settings must match the checkpoint's; otherwise ``ValueError`` names both.
    Extra ``kwargs`` go to ``MaskablePPO.load`` (e.g. ``tensorboard_log``).
    """
    from sb3_contrib import MaskablePPO

    saved = read_settings(path)
    if env is not None:
        check_settings(path, saved, _env_belief(env), int(np.prod(env.observation_space.shape)))
    return MaskablePPO.load(path, env=env, device="cpu", **kwargs)


def _env_belief(env: Any) -> str:
    """The ``belief`` setting of a UnoEnv, possibly wrapped or vectorized."""
    if hasattr(env, "get_attr"):  # a VecEnv: every sub-env is built from the same settings
        return env.get_attr("belief", indices=[0])[0]
    return env.unwrapped.belief


class PPOPolicy:
    """A trained MaskablePPO actor playing a seat: the Policy protocol (``reset(seed)``, ``act(view)``).

    Args:
        network: the model's ``MaskableActorCriticPolicy`` (only its actor is used).
        belief: the belief setting the network was trained with; the harness that seats this
            policy reads it to encode the matching observations.
        observation_size: the flat observation length the network expects.
        deterministic: play the most probable legal action (default) or sample from the
            masked distribution with a generator seeded by ``reset``.
        name: a label for tables.
    """

    def __init__(self, network: Any, belief: str = "none", observation_size: int = BASE_SIZE,
                 deterministic: bool = True, name: str = "ppo") -> None:
        if belief not in _BELIEFS:
            raise ValueError(f"belief must be one of {_BELIEFS}, got {belief!r}")
        self.network = network.to("cpu").eval()
        self.belief = belief
        self.observation_size = observation_size
        self.deterministic = deterministic
        self.name = name
        self.rng = np.random.default_rng()

    @classmethod
    def load(cls, path: str | Path, deterministic: bool = True, name: str | None = None) -> PPOPolicy:
        """A policy from a checkpoint written by :func:`save_model`."""
        settings = read_settings(path)
        model = load_model(path)
        return cls(model.policy, belief=settings["belief"], observation_size=settings["observation_size"],
                   deterministic=deterministic, name=name or Path(path).stem)

    def reset(self, seed: int | None = None) -> None:
        """Start a game; the seed only matters when sampling (``deterministic=False``)."""
        self.rng = np.random.default_rng(seed)

    def action_logits(self, view: PublicView) -> np.ndarray:
        """The actor's logits for the view's observation, illegal actions set to -inf."""
        obs = np.asarray(view.observation, dtype=np.float32)
        if obs.shape != (self.observation_size,):
            raise ValueError(
                f"{self.name} was trained with {_describe(self.belief, self.observation_size)}, but was given "
                f"an observation of shape {obs.shape}; seat it through UnoEnv or play_game, which read "
                f"its belief attribute, or encode views with belief={self.belief!r}")
        with torch.inference_mode():
            features = self.network.pi_features_extractor(torch.from_numpy(obs[None]))
            logits = self.network.action_net(self.network.mlp_extractor.forward_actor(features))[0].numpy()
        return np.where(view.action_mask.astype(bool), logits, -np.inf)

    def act(self, view: PublicView) -> int:
        """The chosen legal action id."""
        legal = view.legal_actions
        if len(legal) == 1:  # forced draws and single options need no network call
            return legal[0]
        logits = self.action_logits(view)
        if self.deterministic:
            return int(np.argmax(logits))
        probs = np.exp(logits - logits.max())
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))
