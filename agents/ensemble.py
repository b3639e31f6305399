"""Several MLP checkpoints as one: the network whose logits are the sum of theirs (an ensemble that loads like any).

Networks fitted to the same labels from different seeds make different errors; summing their logits averages the
errors out (docs/RESULTS.md, "Search values distilled": three fit seeds of ``search-q-particles`` summed win 58.1%
against rule where each alone wins 56.3% - 56.8%). Rather than a new kind of player, :func:`merge` writes the
ensemble as one MaskablePPO network of the same activation: each hidden layer is the members' layers side by side
(the first reads the shared observation; the later ones are block-diagonal, so no member reads another's units), the
action head adds the members' heads and the value head averages theirs. Its logits equal the sum exactly (up to
float rounding), so every loader, the compiled actor and the embedded opponent play it unchanged, at the members'
summed cost per move.

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

from agents.files import atomic_path
from agents.ppo import PPOPolicy, read_settings, save_model
from uno_env.env import UnoEnv


def _linears(sequential: torch.nn.Module) -> list[torch.nn.Linear]:
    return [layer for layer in sequential if isinstance(layer, torch.nn.Linear)]


def merge(paths: Sequence[str | Path]) -> tuple[MaskablePPO, dict]:
    """The network whose logits are the sum of the checkpoints' at ``paths`` (same belief, depth and activation,
    public critics), and the settings to save it with."""
    settings = [read_settings(path) for path in paths]
    members = [PPOPolicy.load(path).network for path in paths]
    belief = settings[0]["belief"]
    if any(s["belief"] != belief for s in settings):
        raise ValueError(f"the checkpoints to merge must share their belief setting, got "
                         f"{[s['belief'] for s in settings]}")
    shapes = [[layer.out_features for layer in _linears(m.mlp_extractor.policy_net)] for m in members]
    if any(len(shape) != len(shapes[0]) for shape in shapes):
        raise ValueError(f"the checkpoints to merge must have as many hidden layers, got {shapes}")
    activation = members[0].activation_fn
    if any(m.activation_fn is not activation for m in members):
        raise ValueError("the checkpoints to merge must share their activation")
    widths = [sum(shape[k] for shape in shapes) for k in range(len(shapes[0]))]
    model = MaskablePPO("MlpPolicy", UnoEnv(belief=belief), device="cpu",
                        policy_kwargs={"net_arch": widths, "activation_fn": activation})
    merged = model.policy
    with torch.no_grad():
        for branch in ("policy_net", "value_net"):
            targets = _linears(getattr(merged.mlp_extractor, branch))
            sources = [_linears(getattr(m.mlp_extractor, branch)) for m in members]
            for k, target in enumerate(targets):
                target.weight.zero_()
                row = column = 0
                for layers in sources:
                    layer = layers[k]
                    rows, columns = layer.weight.shape
                    # the first layer reads the whole observation; a later one only its own member's units
                    if k == 0:
                        target.weight[row:row + rows] = layer.weight
                    else:
                        target.weight[row:row + rows, column:column + columns] = layer.weight
                    target.bias[row:row + rows] = layer.bias
                    row += rows
                    column += columns
        for name, scale in (("action_net", 1.0), ("value_net", 1.0 / len(members))):
            sources = [getattr(m, name) for m in members]
            head = getattr(merged, name)
            head.weight.copy_(torch.cat([source.weight for source in sources], dim=1) * scale)
            head.bias.copy_(sum(source.bias for source in sources) * scale)
    return model, {"belief": belief, "config": "ensemble", "steps": 0, "members": [str(p) for p in paths]}


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
