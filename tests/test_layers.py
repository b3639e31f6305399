"""The layers of docs/DESIGN notes and the README, checked on the sources' imports (read with ast, nothing run).

Each rule names who may import what; an import anywhere in a file counts, inside a function too, and so does a
string that names a project module (``"agents.search"``, ``"agents.search:SearchPolicy"``): the form a registry,
``importlib.import_module`` or a plugin table imports by. Packages above ``uno_env`` plug policies into it through
the entry points of pyproject.toml, which count as imports of the module that reads their group.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("uno_env", "agents", "train")
ENGINE = ("uno_env.cards", "uno_env.view", "uno_env.style_kernels", "uno_env.core", "uno_env.game")
#: A whole string that names a project module, maybe with ``:attribute`` (a bare "train" is a word, not a module).
MODULE_STRING = re.compile(r"((?:uno_env|agents|train)(?:\.\w+)*)(?::[\w.]+)?")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def named_module(text: str, modules: dict[str, Path]) -> str | None:
    """The project module a string names as an import target (``"pkg.mod"`` or ``"pkg.mod:attr"``), or None."""
    match = MODULE_STRING.fullmatch(text)
    if match is None or (":" not in text and "." not in text):
        return None
    return match.group(1) if match.group(1) in modules else None


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports (``from pkg import submodule`` names the submodule), by statement or by
    a string naming the module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [name for name in [named_module(node.value, modules)] if name is not None]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import; the project imports absolutely"
            base = node.module
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in PACKAGES)
    return found


def entry_point_groups() -> dict[str, dict[str, str]]:
    """pyproject.toml's entry-point groups: group -> name -> ``"module:attribute"``."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("entry-points", {})


def plugin_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each entry point's module imports the modules that read its group (those holding the group's name)."""
    readers = {group: {module for module, path in modules.items() if f'"{group}"' in path.read_text()}
               for group in entry_point_groups()}
    out: dict[str, set[str]] = {}
    for group, points in entry_point_groups().items():
        for target in points.values():
            out.setdefault(target.partition(":")[0], set()).update(readers[group])
    return out


def graph() -> dict[str, set[str]]:
    modules = project_modules()
    edges = {name: imports_of(path, modules) for name, path in modules.items()}
    for module, readers in plugin_edges(modules).items():
        edges.setdefault(module, set()).update(readers)
    return edges


def test_uno_env_imports_neither_agents_nor_train():
    bad = {(m, i) for m, imported in graph().items() if m.startswith("uno_env") for i in imported
           if i.split(".")[0] in ("agents", "train")}
    assert not bad


def test_agents_do_not_import_train():
    bad = {(m, i) for m, imported in graph().items() if m.startswith("agents") for i in imported
           if i.split(".")[0] == "train"}
    assert not bad


def test_the_engine_imports_nothing_above_it():
    allowed = {"uno_env.cards": set(), "uno_env.view": {"uno_env.cards"}, "uno_env.style_kernels": {"uno_env.cards"},
               "uno_env.core": {"uno_env.cards", "uno_env.style_kernels"},
               "uno_env.game": {"uno_env.cards", "uno_env.core", "uno_env.view"}}
    edges = graph()
    for module in ENGINE:
        assert edges[module] <= allowed[module], module


def test_belief_imports_only_the_engine():
    for module, imported in graph().items():
        if module.startswith("uno_env.belief"):
            outside = {i for i in imported if not i.startswith("uno_env.belief")}
            assert outside <= set(ENGINE), (module, outside - set(ENGINE))


def test_the_envs_are_the_top_of_uno_env():
    """The single env, the native vector env and the PettingZoo env are thin envs over the layers below: no module
    of uno_env but the package itself (which registers them) imports them, and they do not import each other."""
    envs = {"uno_env.env", "uno_env.vector", "uno_env.multiagent"}
    bad = {(m, i) for m, imported in graph().items() if m.startswith("uno_env") and m != "uno_env"
           for i in imported & envs}
    assert not bad
    assert {"uno_env.core", "uno_env.observation"} <= graph()["uno_env.vector"]


def test_no_import_cycle():
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(target):] + [module, target]))
            if target not in state:
                visit(target, path + [module])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [])


def test_the_rules_see_imports():
    """The checks above read real edges: a known import of each kind is found."""
    edges = graph()
    assert "uno_env.seat" in edges["uno_env.env"] and "uno_env.cards" in edges["uno_env.game"]
    assert "uno_env.observation" in edges["uno_env.seat"] and "agents.ppo" in edges["agents.shipped"]


def test_strings_that_import_count_as_imports(tmp_path):
    """A registry string naming a module above is an edge (the hidden arrow the layer rules must see); a bare word,
    a sentence or a docstring naming a module is not."""
    modules = project_modules()
    source = tmp_path / "registry.py"
    source.write_text('"""Uses :mod:`agents.search`."""\nREGISTRY = {"search": "agents.search:SearchPolicy"}\n'
                      'MODE = "train"\nLOADED = "agents.shipped"\nTEXT = "see agents.search for more"\n')
    assert imports_of(source, modules) == {"agents.search", "agents.shipped"}


def test_policy_plugins_are_declared_upward():
    """The policies that packages above uno_env add (pyproject.toml's entry points) point at existing attributes
    of modules in agents, and the arrow they make runs from that module to uno_env.policy, which reads the group."""
    groups = entry_point_groups()
    assert set(groups) >= {"uno_rl.policies", "uno_rl.policy_catalogues"}
    modules = project_modules()
    for group in ("uno_rl.policies", "uno_rl.policy_catalogues"):
        for name, target in groups[group].items():
            module, _, attribute = target.partition(":")
            assert module.split(".")[0] == "agents" and module in modules, (group, name, target)
            tree = ast.parse(modules[module].read_text())
            defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
            assert attribute in defined, (group, name, target)
            assert "uno_env.policy" in graph()[module], (group, module)
