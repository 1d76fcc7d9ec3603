"""Provenance of the reports: the machine a report ran on, the commit it was generated from, and
whether it is stale (its sources changed since).

A report's sources are its script and the modules of ``experiments/`` and ``symdyn/`` that the
script imports, directly or through other modules (:func:`source_paths`, read from the code), so a
change to the C loader does not mark the symbolic reports stale. Scripts write
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


def _imports(root: Path, path: Path) -> set[str]:
    """Modules ``path`` imports (at any depth of its code, ``TYPE_CHECKING`` blocks included),
    with the packages that contain them."""
    tree = ast.parse(path.read_text(errors="replace"))
    rel = path.relative_to(root).with_suffix("").parts
    package = list(rel[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[:len(package) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)   # submodules imported by name
    out = set()
    for n in names:
        parts = n.split(".")
        out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return out


def source_paths(script: str, root=None) -> list[str]:
    """The files that generate ``script``'s report (relative to the checkout): the script and
    every module of ``experiments/`` and ``symdyn/`` it imports, directly or through another one.
    A change anywhere else in the package leaves the report current."""
    root = Path(ROOT if root is None else root).resolve()
    todo = [root / "experiments" / script]
    seen: set[Path] = set()
    while todo:
        p = todo.pop()
        if p in seen or not p.is_file():
            continue
        seen.add(p)
        for name in _imports(root, p):
            f = _module_file(root, name)
            if f is not None and f not in seen:
                todo.append(f)
    return sorted(str(p.relative_to(root)) for p in seen) or [f"experiments/{script}"]


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
