"""symdyn.jax uses JAX's public API and changes nothing process-wide by itself; one chooser
serves the C library and JAX.

* No module under symdyn/ imports JAX's private ``jax._src``, tags calls with XLA-internal
  attributes (``set_xla_metadata``, ``xla_cpu_small_call``), pauses Python's garbage collector
  or calls glibc's ``mallopt`` outside symdyn/jax/process.py (the one opt-in helper module, which
  no module of symdyn imports); symdyn/jax/ keeps no result pools by reference counts and sets
  JAX's configuration only in that helper.
* The C form and the JAX route of ``"auto"`` are chosen by symdyn.codegen.choose.choose_by_size
  with their own limits, and the reason is kept on the compiled object.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "symdyn"
HELPER = PACKAGE / "jax" / "process.py"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of an attribute chain (``""`` where it is not one)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _offences(path: Path, tree: ast.AST) -> list[str]:
    """What ``tree`` (the module at ``path``) does that the rules forbid, one line each."""
    where = path.relative_to(PACKAGE.parent)
    in_jax = PACKAGE / "jax" in path.parents
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            names = []
        for name in names:
            if name == "jax._src" or name.startswith("jax._src."):
                found.append(f"{line}: imports {name}")
            if name.endswith("xla_metadata") or name.endswith("set_xla_metadata"):
                found.append(f"{line}: imports {name}")
            if path != HELPER and name.startswith("symdyn.jax.process"):
                found.append(f"{line}: imports the opt-in helper module")
        if isinstance(node, ast.ImportFrom) and node.level and in_jax and path != HELPER:
            if node.module == "process" or any(a.name == "process" for a in node.names):
                found.append(f"{line}: imports the opt-in helper module")
        if isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name.startswith("jax._src"):
                found.append(f"{line}: uses {name}")
            if name.endswith("gc.disable"):
                found.append(f"{line}: calls {name}")
            if node.attr == "mallopt" and path != HELPER:
                found.append(f"{line}: calls mallopt")
            if in_jax and name.endswith("sys.getrefcount"):
                found.append(f"{line}: keeps results by reference counts")
            if in_jax and path != HELPER and name == "jax.config.update":
                found.append(f"{line}: changes JAX's configuration")
        if isinstance(node, ast.Constant) and node.value in ("xla_cpu_small_call", "inlineable"):
            found.append(f"{line}: XLA-internal attribute {node.value!r}")
        if isinstance(node, ast.keyword) and node.arg in ("xla_cpu_small_call", "inlineable"):
            found.append(f"{line}: XLA-internal attribute {node.arg!r}")
        if isinstance(node, ast.Call) and _dotted(node.func) == "getattr" and len(node.args) > 1:
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and attr.value in ("mallopt", "disable") and \
                    path != HELPER:
                found.append(f"{line}: getattr(..., {attr.value!r})")
    return found


def test_no_private_jax_no_process_wide_tweaks_in_the_library():
    found = [o for path, tree in _modules() for o in _offences(path, tree)]
    assert not found, "\n".join(found)
    assert HELPER.exists()


@pytest.mark.parametrize("source, offence", [
    ("from jax._src import xla_bridge\n", "imports jax._src"),
    ("import jax._src.config\n", "imports jax._src"),
    ("import jax\nx = jax._src.xla_bridge\n", "uses jax._src"),
    ("import gc\ngc.disable()\n", "calls gc.disable"),
    ("import ctypes\nctypes.CDLL('libc.so.6').mallopt(-3, 1)\n", "calls mallopt"),
    ("from jax.experimental.xla_metadata import set_xla_metadata\n", "imports jax.experimental"),
    ("f(x, xla_cpu_small_call='true')\n", "XLA-internal attribute"),
    ("import sys\nn = sys.getrefcount(x)\n", "reference counts"),
    ("import jax\njax.config.update('jax_enable_x64', True)\n", "JAX's configuration"),
    ("from .process import retain_freed_memory\n", "opt-in helper"),
])
def test_the_rules_catch_each_offence(source, offence):
    """Each rule fires on a module of symdyn/jax/ that breaks it (so that the scan above can
    fail)."""
    path = PACKAGE / "jax" / "offending.py"
    found = _offences(path, ast.parse(source))
    assert any(offence in o for o in found), found


def test_one_chooser_serves_c_and_jax(monkeypatch):
    """form="auto" (C) and route="auto" (JAX) both call choose.choose_by_size, with choose.C
    and choose.JAX; the JAX route and its reason follow its choice."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import symdyn.jax as sjax
    from symdyn.codegen import choose, recursive
    from symdyn.models import serial_chain

    seen = []
    real = choose.choose_by_size

    def spy(work, size, limits, calls=0):
        choice = real(work, size, limits, calls)
        seen.append((limits, choice))
        return choice
    monkeypatch.setattr(choose, "choose_by_size", spy)
    model = serial_chain(3, seed=1)
    f = sjax.compile(model, "crba")
    assert seen[-1][0] is choose.JAX and f.route == "graph"
    assert f.route_reason == seen[-1][1].reason
    stub = type("P", (), {"stats": {"work": 10 ** 9}})()
    assert recursive.choose_by_size(stub, lambda: None)[0] == "recursive"
    assert seen[-1][0] is choose.C
    # a lower JAX limit turns the same algorithm to its program, with the chooser's reason
    monkeypatch.setattr(choose, "JAX", choose.Limits(max_unrolled=10))
    g = sjax.compile(model, "rnea_derivatives")          # no program in route="auto": traced
    assert g.route == "trace" and g.route_reason == seen[-1][1].reason
    assert "> 10 instructions" in g.route_reason


def test_choose_by_size_rules():
    """Unrolled within max_unrolled; recursive beyond, or from compare_min on where the work per
    unrolled instruction is at most work_per_instruction; a program whose work exceeds
    work_ratio x max_unrolled skips sizing the graph; without a program, by size alone."""
    from symdyn.codegen.choose import Limits, choose_by_size
    sized = []

    def size(n):
        return lambda: sized.append(n) or n
    lim = Limits(max_unrolled=100, compare_min=50, work_per_instruction=2.0, work_ratio=5)
    assert choose_by_size(10, size(49), lim).form == "unrolled"
    assert choose_by_size(10, size(101), lim).form == "recursive"
    assert choose_by_size(100, size(50), lim).form == "recursive"
    assert choose_by_size(101, size(50), lim).form == "unrolled"
    assert choose_by_size(None, size(60), lim).form == "unrolled"
    assert choose_by_size(None, size(101), lim).form == "recursive"
    n = len(sized)
    choice = choose_by_size(501, size(0), lim)
    assert choice.form == "recursive" and len(sized) == n and "501" in choice.reason
    assert choose_by_size(10, size(60), Limits(max_unrolled=100)).form == "unrolled"
    with_calls = Limits(max_unrolled=100, compare_min=50, work_per_instruction=2.0, call_cost=3.0)
    assert choose_by_size(94, size(50), with_calls, calls=2).form == "recursive"
    assert choose_by_size(95, size(50), with_calls, calls=2).form == "unrolled"
