"""Several MLP checkpoints as one: the network whose logits are the sum of theirs (an ensemble that loads like any).

Networks fitted to the same labels from different seeds make different errors; summing their logits averages the
errors out (docs/results.md, "Strength of the shipped players": three fit seeds of ``search-q-particles`` summed
win 58.1% against rule where each alone wins 56.3% - 56.8%). Rather than a new kind of player, :func:`merge` writes the
ensemble as one MaskablePPO network of the same activation: each hidden layer is the members' layers side by side
(the first reads the shared observation; the later ones are block-diagonal, so no member reads another's units), the
action head adds the members' heads and the value head averages theirs. Its logits equal the sum exactly (up to
float rounding), so every loader, the compiled actor and the embedded opponent play it unchanged, at the members'
summed cost per move. Afterstate actors (:mod:`agents.afterstate`) merge the same way, their scorers side by side.

    python -m agents.ensemble models/search-q-ensemble/model.zip runs/sq-particles-s81/q-network.zip \\
        runs/sq-particles-s82/q-network.zip runs/sq-particles-s83/q-network.zip
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO

from agents.afterstate import AfterstatePolicy
from agents.files import atomic_path
from agents.ppo import PPOPolicy, read_settings, save_model
from uno_env.env import UnoEnv


def _linears(sequential: torch.nn.Module) -> list[torch.nn.Linear]:
    return [layer for layer in sequential if isinstance(layer, torch.nn.Linear)]


def merge(paths: Sequence[str | Path]) -> tuple[MaskablePPO, dict]:
    """The network whose logits are the sum of the checkpoints' at ``paths`` (same belief, depth and activation,
    public critics; per-action actors, or all afterstate actors, :mod:`agents.afterstate`), and the settings to save
    it with."""
    settings = [read_settings(path) for path in paths]
    members = [PPOPolicy.load(path).network for path in paths]
    belief = settings[0]["belief"]
    if any(s["belief"] != belief for s in settings):
        raise ValueError(f"the checkpoints to merge must share their belief setting, got "
                         f"{[s['belief'] for s in settings]}")
    kinds = {isinstance(m, AfterstatePolicy) for m in members}
    if len(kinds) > 1:
        raise ValueError("the checkpoints to merge must all have afterstate actors, or none")
    afterstate = kinds.pop()
    activation = members[0].activation_fn
    if any(m.activation_fn is not activation for m in members):
        raise ValueError("the checkpoints to merge must share their activation")
    actors, critics = [_actor_layers(m) for m in members], [_critic_layers(m) for m in members]
    actor_widths, critic_widths = _hidden_widths(actors), _hidden_widths(critics)
    kwargs = {"net_arch": {"pi": [] if afterstate else actor_widths, "vf": critic_widths},
              "activation_fn": activation}
    if afterstate:
        kwargs["head_arch"] = actor_widths
    model = MaskablePPO(AfterstatePolicy if afterstate else "MlpPolicy", UnoEnv(belief=belief), device="cpu",
                        policy_kwargs=kwargs)
    with torch.no_grad():
        _stack(_actor_layers(model.policy), actors, head_scale=1.0)
        _stack(_critic_layers(model.policy), critics, head_scale=1.0 / len(members))
    return model, {"belief": belief, "config": "ensemble", "steps": 0, "members": [str(p) for p in paths]}


def _actor_layers(network: torch.nn.Module) -> list[torch.nn.Linear]:
    """The actor's linear layers, its head (the logits, or an afterstate scorer's output) last."""
    if isinstance(network, AfterstatePolicy):
        return _linears(network.action_net.scorer)
    return [*_linears(network.mlp_extractor.policy_net), network.action_net]


def _critic_layers(network: torch.nn.Module) -> list[torch.nn.Linear]:
    return [*_linears(network.mlp_extractor.value_net), network.value_net]


def _hidden_widths(members: list[list[torch.nn.Linear]]) -> list[int]:
    """The merged hidden layers' widths: the members' side by side."""
    shapes = [[layer.out_features for layer in layers[:-1]] for layers in members]
    if any(len(shape) != len(shapes[0]) for shape in shapes):
        raise ValueError(f"the checkpoints to merge must have as many hidden layers, got {shapes}")
    return [sum(shape[k] for shape in shapes) for k in range(len(shapes[0]))]


def _stack(targets: list[torch.nn.Linear], members: list[list[torch.nn.Linear]], head_scale: float) -> None:
    """Fill the merged layers ``targets``: hidden layers side by side (the first reads the shared input, a later one
    only its own member's units), the head the members' heads added, times ``head_scale``."""
    for k, target in enumerate(targets[:-1]):
        target.weight.zero_()
        row = column = 0
        for layers in members:
            rows, columns = layers[k].weight.shape
            if k == 0:
                target.weight[row:row + rows] = layers[k].weight
            else:
                target.weight[row:row + rows, column:column + columns] = layers[k].weight
            target.bias[row:row + rows] = layers[k].bias
            row += rows
            column += columns
    heads = [layers[-1] for layers in members]
    targets[-1].weight.copy_(torch.cat([head.weight for head in heads], dim=1) * head_scale)
    targets[-1].bias.copy_(sum(head.bias for head in heads) * head_scale)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the merged checkpoint to write (.zip)")
    parser.add_argument("checkpoints", nargs="+", help="the checkpoints to merge")
    args = parser.parse_args(argv)
    model, settings = merge(args.checkpoints)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(compress(save_model(model, args.out, settings)))


def compress(path: Path) -> Path:
    """Rewrite the zip at ``path`` deflated: SB3 stores its members uncompressed, and two thirds of a merged network's
    weights are the zeros between its members' blocks."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with atomic_path(path) as temporary, zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


if __name__ == "__main__":
    main()
