"""The package's layout: core (spatial, joints, model, algorithms, backends), io (URDF, MJCF,
robots, spec strings), interop (Pinocchio, MuJoCo), symbolic, codegen, jax, constrained,
identification; the command line in symdyn.cli. Checked on the source, so that a new import
cycle, a private name used across modules or a library module importing the CLI fails here."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "symdyn"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """(module imported, names taken from it, line) for every import of ``path`` at any depth of
    its code (imports inside functions count), except under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = node.module or ""
            if node.level:
                up = package[:len(package) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:
                    yield sub, [], node.lineno          # a submodule imported by name
                else:
                    yield base, [a.name], node.lineno


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for target, _, _ in _imports(name, path, modules):
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_between_modules():
    """Imports inside functions count: a lazy import that closes a circle is still a circle."""
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other in a circle: " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_cycle_detector_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_names_imported_across_modules():
    """``from x import _name`` couples a module to another's internals; private *modules*
    (``from . import _series``) are fine inside their own package."""
    modules = _modules()
    bad = []
    for name, path in modules.items():
        for target, names, line in _imports(name, path, modules):
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{path.relative_to(REPO)}:{line}: from {target} import {n}")
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_the_library_never_imports_the_command_line():
    modules = _modules()
    bad = [f"{path.relative_to(REPO)}:{line}: {target}"
           for name, path in modules.items() if not name.startswith("symdyn.cli")
           for target, _, line in _imports(name, path, modules)
           if target == "symdyn.cli" or target.startswith("symdyn.cli.")]
    assert not bad, "library modules importing symdyn.cli:\n" + "\n".join(bad)


def test_lab_tools_live_outside_the_package():
    """The report runner and the golden-file tool belong to the checkout, not to the wheel."""
    assert not (PACKAGE / "experiments.py").exists()
    assert not (PACKAGE / "codegen" / "golden.py").exists()
    assert (REPO / "experiments" / "runner.py").is_file()
    assert (REPO / "tests" / "golden_c.py").is_file()


def test_areas_are_packages():
    for area in ("io", "interop", "algorithms", "backends", "symbolic", "codegen", "constrained",
                 "contact", "cli"):
        assert (PACKAGE / area / "__init__.py").is_file(), area
    for moved in ("urdf.py", "robots.py", "mujoco_bridge.py", "pinocchio_bridge.py"):
        assert not (PACKAGE / moved).exists(), moved
