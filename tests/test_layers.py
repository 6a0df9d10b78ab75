"""The package's layers point one way: a module imports only from its own folder or the layers below,
never up or sideways into another folder of its layer, no two modules import each other (directly or
around a loop), and docs/development.md's map of the layers names every module once. The core (the lesson files at the
package's root) imports the standard library, torch and itself alone. Read from the
code's own imports (ast), so it stays true."""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minigpt"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package; a folder's __init__.py only when it holds more than its docstring."""
    return {
        module_name(path): path
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent == PACKAGE or len(ast.parse(path.read_text()).body) > 1
    }


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that `path` imports, at its top or inside a function alike."""
    found = set()
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known and name != module_name(path)}
    return found


def layers_in_the_docs() -> dict[str, int]:
    """docs/development.md's map: each `### Layer N` heading, then one `- \\`minigpt/...\\`` line per module."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    layer, found = None, {}
    for line in text.splitlines():
        heading = re.match(r"### Layer (\d+)", line)
        if heading:
            layer = int(heading.group(1))
        elif line.startswith("## "):
            layer = None
        elif layer is not None and (entry := re.match(r"- `(minigpt/[\w/]+\.py)`", line)):
            assert entry.group(1) not in found, f"docs/development.md places {entry.group(1)} twice"
            found[module_name(ROOT / entry.group(1))] = layer
    return found


def test_the_map_of_layers_names_every_module_once():
    placed = layers_in_the_docs()
    assert placed, "docs/development.md has no map of layers"
    assert set(placed) == set(modules()), (
        f"not in the map: {sorted(set(modules()) - set(placed))}; "
        f"in the map but not in the code: {sorted(set(placed) - set(modules()))}"
    )


def folder(name: str) -> str:
    """The folder a module is in: "machine" for minigpt.machine.processes, "" for the lesson at the
    root; the front door (the API and `python -m minigpt`) goes with the command line."""
    parts = name.split(".")
    if name in ("minigpt", "minigpt.__main__"):
        return "cli"
    return parts[1] if len(parts) > 2 else ""


def test_imports_point_down_and_nothing_below_the_command_line_imports_it():
    placed, known = layers_in_the_docs(), modules()
    upward = [
        f"{name} (layer {placed[name]}) imports {other} (layer {placed[other]})"
        for name, path in known.items()
        for other in imported(path, known)
        if placed[other] > placed[name]
    ]
    assert not upward, "imports that point up:\n" + "\n".join(upward)
    into_cli = [
        name
        for name, path in known.items()
        if not name.startswith("minigpt.cli")
        and name != "minigpt.__main__"
        and any(other.startswith("minigpt.cli") for other in imported(path, known))
    ]
    assert not into_cli


def test_no_import_goes_sideways_into_another_folder_of_its_layer():
    placed, known = layers_in_the_docs(), modules()
    sideways = [
        f"{name} imports {other} (both layer {placed[name]})"
        for name, path in known.items()
        for other in imported(path, known)
        if placed[other] == placed[name] and folder(other) != folder(name)
    ]
    assert not sideways, "\n".join(sideways)


def test_no_two_modules_import_each_other_even_around_a_loop():
    known = modules()
    graph = {name: imported(path, known) for name, path in known.items()}
    state: dict[str, str] = {}

    def visit(name, trail):
        state[name] = "open"
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                loop = trail[trail.index(other) :] + [other]
                raise AssertionError("an import circle: " + " -> ".join(loop))
            if other not in state:
                visit(other, trail + [other])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


CORE_FILES = [
    "config.py",
    "errors.py",
    "model.py",
    "attention.py",
    "data.py",
    "optimizer.py",
    "sampling.py",
    "training.py",
]
THIRD_PARTY = {"torch"}


def core_imports(path: Path) -> tuple[set[str], set[str]]:
    """What a core file imports: (the top-level packages of its absolute imports, its relative imports)."""
    absolute, relative = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            absolute |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            relative.add(node.module)
        elif isinstance(node, ast.ImportFrom):
            absolute.add(node.module.split(".")[0])
    return absolute, relative


def test_the_core_imports_only_the_standard_library_torch_and_itself():
    """The lesson files stand on their own: copied into any folder, they import nothing of minigpt's
    around them (tests/test_core_alone.py trains with them so), and the root holds the core and the
    front door alone (.ci/lint holds the core's lines to 100 characters with ruff)."""
    for name in CORE_FILES:
        absolute, relative = core_imports(PACKAGE / name)
        assert absolute <= set(sys.stdlib_module_names) | THIRD_PARTY | {"__future__"}, (name, absolute)
        assert {f"{module}.py" for module in relative} <= set(CORE_FILES), (name, relative)
    assert {path.name for path in PACKAGE.glob("*.py")} - set(CORE_FILES) == {"__init__.py", "__main__.py"}


def core_methods() -> set[str]:
    """The names of the core's functions and methods (its properties are values, not methods)."""
    found = set()
    for name in CORE_FILES:
        for node in ast.walk(ast.parse((PACKAGE / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and not any(
                isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list
            ):
                found.add(node.name)
    return found - {"__init__"}


def test_nothing_outside_the_core_assigns_to_a_core_method():
    """What runs is what the core says: no module around it assigns to an attribute named as one of the
    core's methods or functions (`model.attend = faster`, `trainer.make_batch = packed`);
    tests/test_train.py checks a run's Trainer itself."""
    methods, core = core_methods(), {name[:-3] for name in CORE_FILES}
    found = []
    for name, path in modules().items():
        if name.removeprefix("minigpt.") in core:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                else []
            )
            for target in targets:
                if isinstance(target, ast.Attribute) and not (
                    isinstance(target.value, ast.Name) and target.value.id == "self"
                ):
                    if target.attr in methods:
                        found.append(f"{name}:{node.lineno} assigns .{target.attr}")
    assert not found, found


def test_the_model_has_no_mode_and_a_step_stays_in_the_core():
    """model.py imports its config alone and its forward takes no switch; a training step enters the
    core's files alone (nanoGPT's step enters two): training.py, data.py, model.py, optimizer.py."""
    known = modules()
    assert imported(PACKAGE / "model.py", known) == {"minigpt.config"}
    forward = next(
        node
        for node in ast.walk(ast.parse((PACKAGE / "model.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        and node.name == "forward"
        and [a.arg for a in node.args.args][:2] == ["self", "idx"]
    )
    assert [a.arg for a in forward.args.args] == ["self", "idx", "targets", "positions", "attend"]
    core = {f"minigpt.{name[:-3]}" for name in CORE_FILES}
    for name in ("training.py", "data.py", "optimizer.py"):
        assert imported(PACKAGE / name, known) <= core, name


def test_a_folder_is_one_layer():
    layers = layers_in_the_docs()
    by_folder = {}
    for name, layer in layers.items():
        if len(name.split(".")) > 2:
            by_folder.setdefault(folder(name), set()).add(layer)
    assert {folder: found for folder, found in by_folder.items() if len(found) > 1} == {}
    assert set(by_folder) == {path.name for path in PACKAGE.iterdir() if path.is_dir() and any(path.glob("*.py"))}
