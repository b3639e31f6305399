"""MaskablePPO checkpoints as players: save a model with its env settings, load it back as a Policy, safely.

A checkpoint is an ordinary stable-baselines3 zip with one extra member, ``uno_env.json``, that
records the observation settings the model was trained with (``belief``, ``n_particles``, the
observation size), the network's architecture (``policy``: class, layer sizes, activation) and a little
provenance (training steps, config name). SB3 ignores the extra member, so ``MaskablePPO.load`` still
works on these files.

What is safe to load: SB3's ``MaskablePPO.load`` unpickles objects stored in the zip's ``data`` member
(the ``:serialized:`` entries: schedules, spaces, the policy class), so a crafted zip runs any code it
likes. :class:`PPOPolicy` (and everything built on it: evaluation, play, the embedded opponent, opponent
mixes, the self-play pool, teachers) never does: it rebuilds the network from the JSON in ``uno_env.json``
(or, for checkpoints saved before that recorded the architecture, from the plain JSON fields SB3 writes
beside its pickles) and reads ``policy.pth`` with ``torch.load(weights_only=True)``. A zip whose network
cannot be rebuilt that way is refused with a message, unless you trust it: ``trusted=True`` or the
environment variable ``UNO_RL_TRUSTED_CHECKPOINTS=1`` (for third-party SB3 zips; it then unpickles).
:func:`load_model` (resuming training, which needs SB3's whole model and optimizer) uses
``MaskablePPO.load`` and is meant for a run's own checkpoints only.

* :func:`save_model` writes such a checkpoint (atomically: a killed save leaves no torn file);
* :class:`PPOPolicy` turns one into a :class:`~uno_env.policy.Policy`: it declares the
  belief it was trained with (its ``needs``), so :class:`~uno_env.env.UnoEnv` (as the embedded opponent) and
  :func:`~uno_env.match.play_game` hand it observations of the right shape;
* :func:`load_network` rebuilds the network alone, without unpickling;
* :func:`load_model` reloads the model for further training into an env, and refuses an env whose
  observation settings differ from the checkpoint's, naming both.

Example::

    from agents.ppo import PPOPolicy
    from uno_env import UnoEnv

    env = UnoEnv(opponent=PPOPolicy.load("models/search-q-none/model.zip"))
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor

from agents.afterstate import MOVE_FEATURES, AfterstatePolicy
from agents.files import atomic_path, parse_json
from uno_env.belief import BELIEF_KINDS, BeliefKind
from uno_env.cards import NUM_ACTIONS, short_repr
from uno_env.observation import BASE_SIZE
from uno_env.policy import Needs
from uno_env.view import PublicView

#: Name of the zip member holding the env settings.
SETTINGS_MEMBER = "uno_env.json"
#: Setting this environment variable to 1 allows unpickling checkpoints whose network cannot be rebuilt safely.
TRUST_VARIABLE = "UNO_RL_TRUSTED_CHECKPOINTS"
_POLICY_CLASSES = {cls.__name__: cls for cls in (MaskableActorCriticPolicy, AfterstatePolicy)}
# Activations by class name; only these torch.nn classes are ever built from a checkpoint's metadata.
_ACTIVATIONS = {cls.__name__: cls for cls in (torch.nn.Tanh, torch.nn.ReLU, torch.nn.LeakyReLU, torch.nn.ELU,
                                              torch.nn.SiLU, torch.nn.GELU)}
# Bounds on what metadata may ask for: a crafted zip must not make us allocate gigabytes.
_MAX_OBSERVATION = 100_000
_MAX_UNITS = 8192
_MAX_LAYERS = 16
# ... and on the whole network, which the per-dimension bounds alone leave at billions of parameters: 50 million
# float32 parameters are 200 MB, far above any network trained here (128x128 on 300 inputs: 0.1 million).
_MAX_PARAMETERS = 50_000_000
_MAX_MEMBER_BYTES = {SETTINGS_MEMBER: 1 << 20, "data": 64 << 20, "policy.pth": 1 << 30}
_SB3_DEFAULT_ARCH = {"pi": [64, 64], "vf": [64, 64]}


def trusted_by_default() -> bool:
    """Whether ``UNO_RL_TRUSTED_CHECKPOINTS=1`` allows unpickling checkpoints that cannot be loaded safely."""
    return os.environ.get(TRUST_VARIABLE, "") == "1"


def policy_metadata(policy: Any) -> dict[str, Any] | None:
    """The JSON description of an SB3 policy network that :func:`load_network` rebuilds, or None if unsupported."""
    cls = type(policy)
    activation = getattr(policy, "activation_fn", None)
    if _POLICY_CLASSES.get(cls.__name__) is not cls or getattr(activation, "__name__", None) not in _ACTIVATIONS \
            or getattr(policy, "features_extractor_class", None) is not FlattenExtractor:
        return None
    arch = policy.net_arch
    arch = {"pi": list(arch), "vf": list(arch)} if isinstance(arch, list) else {k: list(arch[k]) for k in ("pi", "vf")}
    record = {"class": cls.__name__, "net_arch": arch, "activation": activation.__name__,
              "ortho_init": bool(policy.ortho_init), "share_features_extractor": bool(policy.share_features_extractor)}
    if cls is AfterstatePolicy:
        record["head_arch"] = list(policy.head_arch)
    return record


def save_model(model: Any, path: str | Path, settings: dict[str, Any]) -> Path:
    """Save a MaskablePPO ``model`` to ``path`` (a .zip) with its env ``settings`` embedded, atomically.

    ``settings`` must hold at least ``belief``; the observation size is taken from the model. The network's
    architecture is recorded too (:func:`policy_metadata`), so the checkpoint loads without unpickling. The zip is
    written under a temporary name and renamed into place. Returns the path written.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    if settings.get("belief") not in BELIEF_KINDS:
        raise ValueError(f"settings['belief'] must be one of {BELIEF_KINDS}, got {settings.get('belief')!r}")
    record = dict(settings, observation_size=int(np.prod(model.observation_space.shape)))
    architecture = policy_metadata(model.policy)
    if architecture is not None:
        record["policy"] = architecture
    with atomic_path(path) as temporary:
        model.save(temporary)
        with zipfile.ZipFile(temporary, "a") as archive:
            archive.writestr(SETTINGS_MEMBER, json.dumps(record, indent=1, sort_keys=True))
    return path


#: The flag bit of a zip member that is encrypted (the zip format's "general purpose" bit 0).
_ENCRYPTED = 0x1


def _read_member(path: Path, name: str) -> bytes:
    """One member of a checkpoint zip; ``ValueError`` naming the file when it is missing, too big or corrupt."""
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                info = archive.getinfo(name)
            except KeyError:
                raise ValueError(f"{path} has no {name}") from None
            if info.file_size > _MAX_MEMBER_BYTES.get(name, 1 << 30):
                raise ValueError(f"{path} is not a valid checkpoint: its {name} is {info.file_size:,} bytes")
            if info.flag_bits & _ENCRYPTED:  # zipfile would raise a RuntimeError asking for a password
                raise ValueError(f"{path} is not a valid checkpoint: its {name} is encrypted (a checkpoint never is)")
            return archive.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as error:
        # BadZipFile is no ValueError, so callers (uno-evaluate, the trainer) would show a bare traceback
        # that does not even say which file is broken.
        raise ValueError(f"{path} is not a valid checkpoint (a corrupt or non-zip file: "
                         f"{short_repr(str(error))})") from None


def _json_member(path: Path, name: str) -> Any:
    """A JSON member of a checkpoint zip (:func:`agents.files.parse_json`: a crafted one is a ``ValueError``)."""
    return parse_json(_read_member(path, name), f"{path} is not a valid checkpoint: its {name}")


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def read_settings(path: str | Path, trusted: bool | None = None) -> dict[str, Any]:
    """The env settings stored in a checkpoint, checked.

    A file that is not a zip archive, lacks the settings or holds malformed ones raises ``ValueError``
    naming the file. A plain SB3 zip without them is refused too, unless ``trusted`` (default: the
    ``UNO_RL_TRUSTED_CHECKPOINTS`` variable): then the settings are inferred from its observation size
    (``BASE_SIZE``: no belief; more: card-counting belief features).
    """
    path = Path(path)
    trusted = trusted_by_default() if trusted is None else trusted
    try:
        settings = _json_member(path, SETTINGS_MEMBER)
    except ValueError as error:
        if not (trusted and f"has no {SETTINGS_MEMBER}" in str(error)):
            if f"has no {SETTINGS_MEMBER}" in str(error):
                raise ValueError(f"{path} has no {SETTINGS_MEMBER}: it was not saved by agents.ppo.save_model, "
                                 f"so its observation settings are unknown (set {TRUST_VARIABLE}=1 to load a "
                                 "trusted SB3 zip)") from None
            raise
        settings = _infer_settings(path)
    if not isinstance(settings, dict):
        raise ValueError(f"{path} is not a valid checkpoint: its {SETTINGS_MEMBER} holds {short_repr(settings)}, "
                         "not an object")
    problem = None
    if settings.get("belief") not in BELIEF_KINDS:
        problem = f"belief must be one of {BELIEF_KINDS}, got {short_repr(settings.get('belief'))}"
    elif not _is_int(settings.get("observation_size"), 1, _MAX_OBSERVATION):
        problem = f"observation_size must be an int in 1..{_MAX_OBSERVATION}, got " \
                  f"{short_repr(settings.get('observation_size'))}"
    elif settings.get("privileged_size", 0) != 0:
        problem = f"privileged_size is {short_repr(settings.get('privileged_size'))}: the network was trained on " \
                  "hidden-state channels besides the observation (a privileged critic), which this version does not " \
                  "load"
    elif not _is_int(settings.get("steps", 0), 0, 1 << 62):
        problem = f"steps must be a non-negative int, got {short_repr(settings.get('steps'))}"
    if problem:
        raise ValueError(f"{path} is not a valid checkpoint: in {SETTINGS_MEMBER}, {problem}")
    return settings


def _infer_settings(path: Path) -> dict[str, Any]:
    """Settings for a trusted third-party SB3 zip, from the observation size in its ``data`` JSON."""
    data = _json_member(path, "data")
    shape = data.get("observation_space", {}).get("_shape") if isinstance(data, dict) else None
    size = shape[0] if isinstance(shape, list) and len(shape) == 1 else None
    if not _is_int(size, BASE_SIZE, _MAX_OBSERVATION):
        raise ValueError(f"{path}: cannot tell its observation settings (observation shape {short_repr(shape)})")
    return {"belief": "none" if size == BASE_SIZE else "counting", "observation_size": size, "steps": 0}


def _legacy_architecture(path: Path) -> dict[str, Any] | None:
    """The architecture of a checkpoint saved before ``uno_env.json`` recorded it, from SB3's ``data`` JSON.

    SB3 stores a pickle of each non-JSON value plus its plain fields beside it (``policy_kwargs``'s layer
    sizes, the activation's ``repr``, the policy class's ``__module__``); only those plain fields are read.
    """
    data = _json_member(path, "data")
    if not isinstance(data, dict):
        return None
    module = (data.get("policy_class") or {}).get("__module__") if isinstance(data.get("policy_class"), dict) else None
    cls = {"sb3_contrib.common.maskable.policies": "MaskableActorCriticPolicy"}.get(module)
    kwargs = data.get("policy_kwargs") or {}
    if cls is None or not isinstance(kwargs, dict) or "Box" not in str(data.get("observation_space", {}).get(":type:")):
        return None
    if set(kwargs) - {":type:", ":serialized:", "net_arch", "activation_fn", "ortho_init"}:
        return None  # a features extractor or optimizer setting we would not rebuild faithfully
    arch = kwargs.get("net_arch", _SB3_DEFAULT_ARCH)
    if isinstance(arch, list):
        arch = {"pi": arch, "vf": arch}
    match = re.fullmatch(r"<class 'torch\.nn\.modules\.activation\.(\w+)'>", str(kwargs.get("activation_fn", "")))
    activation = match.group(1) if match else ("Tanh" if "activation_fn" not in kwargs else None)
    return {"class": cls, "net_arch": arch, "activation": activation, "ortho_init": False,
            "share_features_extractor": True}


def _check_architecture(record: Any) -> str | None:
    """Why ``record`` cannot be rebuilt, or None."""
    if not isinstance(record, dict):
        return f"policy must be an object, got {short_repr(record)}"
    if record.get("class") not in _POLICY_CLASSES:
        return f"unknown policy class {short_repr(record.get('class'))}"
    if record.get("activation") not in _ACTIVATIONS:
        return f"unknown activation {short_repr(record.get('activation'))}"
    arch = record.get("net_arch")
    if not isinstance(arch, dict) or any(
            not isinstance(arch.get(k), list) or len(arch[k]) > _MAX_LAYERS
            or not all(_is_int(units, 1, _MAX_UNITS) for units in arch[k]) for k in ("pi", "vf")):
        return f"net_arch must be {{'pi': [...], 'vf': [...]}} of at most {_MAX_LAYERS} layers of 1..{_MAX_UNITS} " \
               f"units, got {short_repr(arch)}"
    head = record.get("head_arch")
    if record["class"] == "AfterstatePolicy" and (
            not isinstance(head, list) or not 0 < len(head) <= _MAX_LAYERS
            or not all(_is_int(units, 1, _MAX_UNITS) for units in head)):
        return f"head_arch must be a list of 1 to {_MAX_LAYERS} layers of 1..{_MAX_UNITS} units, got {short_repr(head)}"
    return None


def architecture(record: dict[str, Any]) -> tuple[type, dict[str, Any]]:
    """The policy class and constructor arguments (``policy_kwargs``) that rebuild the network an architecture record
    (:func:`policy_metadata`'s, checked) describes; the weights are the caller's to load, so no initialisation."""
    kwargs: dict[str, Any] = {"net_arch": record["net_arch"], "activation_fn": _ACTIVATIONS[record["activation"]],
                              "ortho_init": False,
                              "share_features_extractor": bool(record.get("share_features_extractor", True))}
    if record["class"] == "AfterstatePolicy":
        kwargs["head_arch"] = record["head_arch"]
    return _POLICY_CLASSES[record["class"]], kwargs


def load_network(path: str | Path, settings: dict[str, Any] | None = None, trusted: bool | None = None) -> Any:
    """The policy network of a checkpoint, rebuilt from JSON metadata, weights loaded without unpickling.

    ``settings`` are :func:`read_settings`'s (read if not given). A checkpoint whose architecture is not
    described in JSON, or whose ``policy.pth`` holds anything but tensors, raises ``ValueError`` naming
    the file, unless ``trusted`` (default: the ``UNO_RL_TRUSTED_CHECKPOINTS`` variable), which loads it
    with ``MaskablePPO.load``: that unpickles, so only do it for files from a source you trust.
    """
    path = Path(path)
    trusted = trusted_by_default() if trusted is None else trusted
    settings = read_settings(path, trusted) if settings is None else settings
    record = settings.get("policy")
    if record is None:
        record = _legacy_architecture(path)
    problem = "its network is not described in JSON" if record is None else \
        _check_architecture(record)
    if problem is not None:
        if trusted:
            return MaskablePPO.load(path, device="cpu").policy
        raise ValueError(f"{path} cannot be loaded safely: {problem}; loading it would mean unpickling code from "
                         f"it (set {TRUST_VARIABLE}=1 only for a file from a source you trust)")
    size = settings["observation_size"]
    parameters = parameter_count(size, record["net_arch"], record.get("head_arch"))
    if parameters > _MAX_PARAMETERS:
        raise ValueError(f"{path} is not a valid checkpoint: its network would have {parameters:,} parameters, "
                         f"more than the {_MAX_PARAMETERS:,} a player may load")
    policy_class, kwargs = architecture(record)
    observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
    network = policy_class(observation_space, spaces.Discrete(NUM_ACTIONS), lambda _: 0.0,
                           optimizer_class=_no_optimizer, **kwargs)
    raw = _read_member(path, "policy.pth")
    try:
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        if not isinstance(state, dict):
            raise TypeError(f"it holds {type(state).__name__}, not a state dict")
        network.load_state_dict(state)
        finite = all(bool(torch.isfinite(t).all()) for t in state.values() if t.is_floating_point())
    except Exception as error:  # torch raises many types for a bad file: unpickling, zip, shape, key errors
        raise ValueError(f"{path} is not a valid checkpoint: its policy.pth does not load "
                         f"({short_repr(str(error).splitlines()[0] if str(error) else type(error).__name__)})") \
            from None
    if not finite:  # a run that diverged: such a network plays nonsense without a word
        raise ValueError(f"{path} is not a valid checkpoint: its weights hold NaN or infinite values")
    return network


def parameter_count(observation_size: int, net_arch: dict[str, list[int]], head_arch: list[int] | None = None) -> int:
    """How many parameters an actor-critic of ``net_arch`` on ``observation_size`` inputs has, its actor an afterstate
    scorer of ``head_arch`` if given (:mod:`agents.afterstate`): known from the JSON before anything is allocated."""
    actor = [observation_size, *net_arch["pi"], NUM_ACTIONS] if head_arch is None else \
        [observation_size + MOVE_FEATURES, *head_arch, 1]
    return sum((inputs + 1) * units for widths in (actor, [observation_size, *net_arch["vf"], 1])
               for inputs, units in zip(widths, widths[1:], strict=False))


def _no_optimizer(parameters: Any, lr: float, **kwargs: Any) -> None:
    """A player needs no optimizer; building torch's Adam would import torch._dynamo (seconds, per process)."""
    return None


def _describe(belief: str, size: int | None) -> str:
    return f"belief={belief!r}" + (f" (observation size {size})" if size is not None else "")


class SettingsMismatch(ValueError):
    """A checkpoint's observation settings differ from an env's (:func:`check_settings`)."""


def check_settings(path: str | Path, saved: dict[str, Any], belief: str, observation_size: int | None) -> None:
    """Raise :class:`SettingsMismatch` naming both when ``belief``/``observation_size`` differ from ``saved``."""
    trained_size = saved["observation_size"]
    size_differs = observation_size is not None and observation_size != trained_size
    if saved["belief"] != belief or size_differs:
        raise SettingsMismatch(
            f"checkpoint {path} was trained with {_describe(saved['belief'], trained_size)}, "
            f"but the environment uses {_describe(belief, observation_size)}")


def load_model(path: str | Path, env: Any = None, **kwargs: Any) -> Any:
    """Load a MaskablePPO checkpoint on the CPU, attached to ``env`` (a VecEnv or gym env) if given.

    For resuming training from a run's own checkpoints: this uses ``MaskablePPO.load``, which unpickles
    the zip's ``data``, so never call it on a file from elsewhere (players load with :class:`PPOPolicy`).
    The env's observation settings must match the checkpoint's; otherwise ``ValueError`` names both.
    Extra ``kwargs`` go to ``MaskablePPO.load`` (e.g. ``tensorboard_log``).
    """
    saved = read_settings(path, trusted=False)
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
        belief: the belief setting the network was trained with; the policy declares it as its
            ``needs``, so the seat encodes the matching observations.
        observation_size: the flat observation length the network expects.
        deterministic: play the most probable legal action (default) or sample from the
            masked distribution with a generator seeded by ``reset``.
        name: a label for tables.
    """

    def __init__(self, network: Any, belief: BeliefKind = "none", observation_size: int = BASE_SIZE,
                 deterministic: bool = True, name: str = "ppo") -> None:
        if belief not in BELIEF_KINDS:
            raise ValueError(f"belief must be one of {BELIEF_KINDS}, got {belief!r}")
        self.network = network.to("cpu").eval()
        self.needs = Needs(belief)
        self.observation_size = observation_size
        self.deterministic = deterministic
        self.name = name
        self.rng = np.random.default_rng()

    @classmethod
    def load(cls, path: str | Path, deterministic: bool = True, name: str | None = None,
             trusted: bool | None = None) -> PPOPolicy:
        """A policy from a checkpoint written by :func:`save_model`, loaded without unpickling (:func:`load_network`).

        ``trusted`` (default: the ``UNO_RL_TRUSTED_CHECKPOINTS`` variable) allows unpickling a zip whose
        network cannot be rebuilt from JSON, such as a third-party SB3 zip: only for files you trust.
        """
        settings = read_settings(path, trusted)
        network = load_network(path, settings, trusted)
        return cls(network, belief=settings["belief"], observation_size=settings["observation_size"],
                   deterministic=deterministic, name=name or Path(path).stem)

    @property
    def belief(self) -> BeliefKind:
        """The belief setting the network was trained with (its ``needs``)."""
        return self.needs.belief

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
                f"its needs, or encode views with belief={self.belief!r}")
        return np.where(view.action_mask.astype(bool), self.logits(obs[None])[0], -np.inf)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """The actor's raw logits for a batch of float32 observations (rows of ``observation_size``), no mask."""
        with torch.inference_mode():
            features = self.network.pi_features_extractor(torch.from_numpy(observations))
            return self.network.action_net(self.network.mlp_extractor.forward_actor(features)).numpy()

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
