"""Provenance of the reports: the machine a report ran on, the commit it was generated from, and
whether it is stale (its sources changed since).

A report's sources are its script and the modules of ``experiments/`` and ``symdyn/`` whose code
it reaches by name, directly or through other modules, with the C sources beside them that they name
(``_fastcall.c`` of ``fastcall.py``) (:func:`source_paths`, read from the code):
``sd.rnea`` reaches the module defining ``rnea``, not every module ``symdyn/__init__.py`` imports,
so a change to the C loader or to contact dynamics does not mark the NumPy reports stale (the
compiled ones reach every algorithm through the codegen registry). Scripts write
:func:`report_provenance` into their header; ``experiments/runner.py`` reads it back
(:func:`state_from_report`) for the index's stale flag (:func:`staleness`).
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]

# --- machine -----------------------------------------------------------------------------------

def cpu_name() -> str:
    """CPU model from /proc/cpuinfo (or platform), for the machine line of reports."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gb() -> str:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    return f"{int(line.split()[1]) / 1024 ** 2:.0f} GB RAM"
    except OSError:
        pass
    return "RAM unknown"


def _versions() -> str:
    out = []
    for mod, label in (("numpy", "NumPy"), ("sympy", "SymPy"), ("casadi", "CasADi"),
                       ("pinocchio", "Pinocchio"), ("symengine", "SymEngine")):
        try:
            out.append(f"{label} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001 - optional packages
            out.append(f"{label} not installed")
    try:
        cc = subprocess.run(["cc", "--version"], capture_output=True, text=True, timeout=10)
        out.append(cc.stdout.splitlines()[0].strip())
    except (OSError, subprocess.SubprocessError, IndexError):
        out.append("no C compiler")
    return ", ".join(out)


def machine_description() -> str:
    """CPU, cores, memory, OS and the versions of the numeric stack (one line)."""
    return (f"{cpu_name()}, {os.cpu_count()} cores (shared with other jobs), {_mem_gb()}, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
            f"{_versions()}")


# --- provenance: the commit a report was generated from ---------------------------------------------

MARK = "symdyn-source"


def _module_file(root: Path, name: str) -> Path | None:
    """The file of module ``name`` in the checkout: ``symdyn.*`` under symdyn/, ``experiments.*``
    and the scripts' own helpers (``_common``) under experiments/; None for any other module."""
    parts = name.split(".")
    if parts[0] not in ("symdyn", "experiments"):
        parts = ["experiments", *parts]
    base = root.joinpath(*parts)
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


# The provenance module records where a report came from and changes no figure: it is not a
# source of any report (editing it leaves every report current).
NOT_SOURCES = frozenset({"experiments/provenance.py"})


class _Sources:
    """The files a script reaches by name. A module is a source in full when the code imports it
    as a whole or uses it bare (``getattr(sd, name)``, ``from m import *``); a name taken from a
    package (``from symdyn import rnea``, ``sd.rnea(...)``) follows the package's re-export to the
    module that defines it, so ``symdyn/__init__.py`` importing every module does not make every
    module a source of every report."""

    def __init__(self, root: Path):
        self.root = root
        self.files: set[Path] = set()
        self._resolved: set[tuple[str, str]] = set()
        self._exports: dict[str, dict[str, str]] = {}

    def file(self, name: str) -> Path | None:
        f = _module_file(self.root, name)
        return None if f is None or self.rel(f) in NOT_SOURCES else f

    def rel(self, f: Path) -> str:
        return str(f.relative_to(self.root))

    def add_module(self, name: str) -> None:
        """Module ``name`` in full: its file and everything its code imports."""
        f = self.file(name)
        if f is None or f in self.files:
            return
        self.files.add(f)
        self._scan(f, name)

    def add_name(self, module: str, attr: str) -> None:
        """What ``module.attr`` is: a submodule, the module a package re-exports it from, or
        ``module`` itself."""
        if (module, attr) in self._resolved:
            return
        self._resolved.add((module, attr))
        if self.file(f"{module}.{attr}") is not None:
            self.add_module(f"{module}.{attr}")
            return
        f = self.file(module)
        if f is None:
            return
        origin = self.exports(module, f).get(attr) if f.name == "__init__.py" else None
        if origin is not None:
            self.add_name(*origin.rsplit(".", 1))
        elif attr in _constants(f):
            self.files.add(f)                 # a constant (``__version__``): the file alone
        else:
            self.add_module(module)

    def exports(self, package: str, f: Path) -> dict[str, str]:
        """``local name -> "module.name"`` for the names a package's ``__init__`` imports."""
        if package not in self._exports:
            out: dict[str, str] = {}
            tree = ast.parse(f.read_text(errors="replace"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = _absolute(package.split("."), node)
                    out.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names
                                if a.name != "*"})
            out.update(self._lazy_exports(package, tree))
            self._exports[package] = out
        return self._exports[package]

    def _lazy_exports(self, package: str, tree: ast.Module) -> dict[str, str]:
        """A lazy package (PEP 562 ``__getattr__`` over a table ``{"name": "submodule"}`` at
        module level, as :mod:`symdyn.symbolic`): name -> "package.submodule.name"."""
        if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            return {}
        out: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    if (isinstance(k, ast.Constant) and isinstance(k.value, str)
                            and isinstance(v, ast.Constant) and isinstance(v.value, str)
                            and self.file(f"{package}.{v.value}") is not None):
                        out[k.value] = f"{package}.{v.value}.{k.value}"
        return out

    def _scan(self, f: Path, name: str) -> None:
        tree = ast.parse(f.read_text(errors="replace"))
        for node in ast.walk(tree):           # C sources beside the module that it names (an
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)  # extension it
                    and re.fullmatch(r"[\w.-]+\.[ch]", node.value)              # compiles)
                    and (f.parent / node.value).is_file()):
                self.files.add(f.parent / node.value)
        package = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        modules: dict[str, str] = {}          # local name bound to a module -> that module
        unused: dict[str, list[str]] = {}     # ... -> what `import a.b.c` named, if never used
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    modules[local] = a.name if a.asname else local
                    unused.setdefault(local, []).append(a.name)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(package, node)
                for a in node.names:
                    if a.name == "*":
                        self.add_module(base)
                    elif self.file(f"{base}.{a.name}") is not None:
                        modules[a.asname or a.name] = f"{base}.{a.name}"
                        unused.setdefault(a.asname or a.name, []).append(f"{base}.{a.name}")
                    else:
                        self.add_name(base, a.name)
        parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Name) and node.id in modules):
                continue
            unused.pop(node.id, None)
            chain: list[str] = []
            up = parents.get(id(node))
            while isinstance(up, ast.Attribute):
                chain.append(up.attr)
                up = parents.get(id(up))
            self._use(modules[node.id], chain)
        for names in unused.values():
            for n in names:
                self.add_module(n)

    def _use(self, module: str, chain: list[str]) -> None:
        """``module.a.b...`` in the code: descend through submodules, then resolve the name."""
        for attr in chain:
            if self.file(f"{module}.{attr}") is None:
                self.add_name(module, attr)
                return
            module = f"{module}.{attr}"
        self.add_module(module)


def _constants(f: Path) -> set[str]:
    """Names a module binds to a literal at its top level (``__version__ = "0.1.0"``)."""
    return {t.id for node in ast.parse(f.read_text(errors="replace")).body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for t in node.targets if isinstance(t, ast.Name)}


def _absolute(package: list[str], node: ast.ImportFrom) -> str:
    """The absolute module of ``from ... import`` in ``package``."""
    if not node.level:
        return node.module or ""
    up = package[:len(package) - node.level + 1]
    return ".".join(up + ([node.module] if node.module else []))


def source_paths(script: str, root=None) -> list[str]:
    """The files that generate ``script``'s report (relative to the checkout): the script and the
    modules of ``experiments/`` and ``symdyn/`` whose code it reaches by name, directly or through
    another one (:class:`_Sources`). A change anywhere else in the package leaves the report
    current."""
    root = Path(ROOT if root is None else root).resolve()
    found = _Sources(root)
    found.add_module("experiments." + script.removesuffix(".py"))
    return sorted(found.rel(p) for p in found.files) or [f"experiments/{script}"]


def _git(root, *args: str, binary: bool = False):
    """stdout of ``git -C root args`` (bytes if ``binary``), or None when git or the repo fails."""
    try:
        p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return p.stdout if binary else p.stdout.decode(errors="replace")


def _fingerprint(root, commit: str, paths: Sequence[str]):
    """(sha256 of the difference between ``commit`` and the working tree over ``paths`` -- tracked
    changes plus untracked, non-ignored files --, changed paths), or None without git."""
    diff = _git(root, "diff", "--binary", commit, "--", *paths, binary=True)
    names = _git(root, "diff", "--name-only", commit, "--", *paths)
    others = _git(root, "ls-files", "--others", "--exclude-standard", "--", *paths)
    if diff is None or names is None or others is None:
        return None
    h = hashlib.sha256(diff)
    changed = [n for n in names.splitlines() if n]
    for name in sorted(n for n in others.splitlines() if n):
        changed.append(name)
        h.update(b"\0untracked\0" + name.encode())
        try:
            h.update((Path(root) / name).read_bytes())
        except OSError:
            pass
    return h.hexdigest(), changed


def source_state(root, script: str) -> dict | None:
    """The commit the sources of ``script``'s report come from: ``{"commit": HEAD, "dirty": bool,
    "changed": [uncommitted paths], "fingerprint": sha256 of the uncommitted difference}``, or
    None outside a git checkout. A report generated from a dirty tree is not stale as long as the
    same uncommitted difference is still there (same fingerprint)."""
    head = _git(root, "rev-parse", "HEAD")
    if head is None:
        return None
    commit = head.strip()
    fp = _fingerprint(root, commit, source_paths(script, root))
    if fp is None:
        return None
    return {"commit": commit, "dirty": bool(fp[1]), "changed": fp[1][:20],
            "fingerprint": fp[0]}


def describe_state(state: dict | None) -> str:
    """One line for a report's header: the commit, and the uncommitted files if any."""
    if state is None:
        return "Source: commit unknown (not generated from a git checkout)."
    s = f"Source: commit `{state['commit'][:12]}`"
    if state["dirty"]:
        ch = state["changed"]
        s += (f" plus uncommitted changes (dirty) in {', '.join(ch[:5])}"
              + (f" and {len(ch) - 5} more" if len(ch) > 5 else ""))
    else:
        s += " (clean: the script and the modules it imports as committed)"
    return s + "."


def state_marker(state: dict | None) -> str:
    """A machine-readable comment for a report, read back by :func:`state_from_report`."""
    if state is None:
        return ""
    return (f"<!-- {MARK}: commit={state['commit']} dirty={int(state['dirty'])} "
            f"fingerprint={state['fingerprint']} -->")


def state_from_report(path) -> dict | None:
    """The source state a report recorded (see :func:`state_marker`), or None."""
    try:
        text = Path(path).read_text(errors="replace")[:20000]
    except OSError:
        return None
    m = re.search(MARK + r": commit=([0-9a-f]{7,40}) dirty=([01]) fingerprint=([0-9a-f]{64})", text)
    if m is None:
        return None
    return {"commit": m.group(1), "dirty": m.group(2) == "1", "changed": [],
            "fingerprint": m.group(3)}


STATE_ENV = "SYMDYN_SOURCE_STATE"


def report_provenance(root, script: str) -> list[str]:
    """Lines for the header of ``script``'s report: the commit it is generated from (the runner's
    :func:`source_state`, passed in ``$SYMDYN_SOURCE_STATE`` when it started the script; else read
    from git now) and the marker :func:`state_from_report` reads back."""
    st = None
    given = os.environ.get(STATE_ENV)
    if given:
        try:
            st = json.loads(given)
        except ValueError:
            st = None
        if not (isinstance(st, dict) and st.get("commit")):
            st = None
    if st is None:
        st = source_state(root, script)
    return [describe_state(st)] + ([state_marker(st)] if st is not None else []) + [""]


def staleness(root, script: str, state: dict | None) -> str | None:
    """None when the sources of ``script``'s report are what they were when it was generated
    (``state``), else a short reason: "stale: sources changed since <commit> (files)"."""
    if not state or not state.get("commit"):
        return None
    short = state["commit"][:7]
    if _git(root, "cat-file", "-e", state["commit"] + "^{commit}") is None:
        return f"source commit {short} not found in this repository"
    fp = _fingerprint(root, state["commit"], source_paths(script, root))
    if fp is None or fp[0] == state.get("fingerprint"):
        return None
    changed = fp[1]
    if state.get("dirty"):   # which files differ from the recorded uncommitted state is not
        # known (only its fingerprint is); name those that now differ from the commit
        before = set(state.get("changed") or ())
        now = [c for c in changed if c not in before] or changed
        more = f" and {len(now) - 3} more" if len(now) > 3 else ""
        return (f"stale: sources changed since {short} plus its uncommitted changes (now "
                f"differing from {short}: {', '.join(now[:3])}{more})")
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return f"stale: sources changed since {short} ({', '.join(changed[:3])}{more})"
