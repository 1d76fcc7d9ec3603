"""The C side of compiled functions' single calls: a small CPython extension.

``_fastcall.c`` defines ``Function``, the base type that :class:`~symdyn.codegen.loader.
CompiledFunction` derives from where the extension is available
(:func:`symdyn.codegen.loader.function_class`). An instance is bound to one generated entry
point ``F_call(void **ctx)``. Called with exactly the function's inputs as C-contiguous float64
arrays of the right shapes, it points the context at their data, lets C write into fresh result
arrays and returns them; any other call (keywords such as ``out=`` or ``nan=``, lists, other
dtypes or shapes, non-contiguous arrays) and any nonzero status from C (NaN/inf, a bad
quaternion, a call from a thread that does not own the context) goes to
``CompiledFunction.__call__`` with the same arguments, which converts the inputs, raises the
named errors or runs the call on the thread's own copy, and evaluates C through the
extension's ``_run(inputs, outputs)``. What the extension saves against ``ctypes`` is measured
in reports/fastpath.md.

``Function.batch`` does the same for batches: exact arrays of shape ``(B, n_k)``, ``out=``
arrays (an array, or a tuple for several outputs) of the exact shape, C-contiguous and
writeable, and keyword values as given (``threads`` an int or None, ``simd`` and ``stream``
``True``/``False``/None, ``nan`` a str) run in C with the GIL released, where ``threads=None``
would run one thread or ``threads`` is given; everything else, and every error status, goes to
``CompiledFunction.batch`` (reports/simd_batch.md measures both).

The extension is compiled once per Python, NumPy and compiler into the build cache
(``cache_root()/fastcall``, ~1 s of gcc) on the first build in a process, and shared by every
build. Its SHA-256 is recorded next to it (``<file>.sha256``, written before the library is
published) and checked before every load: loading a truncated or overwritten shared library
crashes the process (SIGBUS, SIGSEGV), so a file that does not match (or has no record) is
rebuilt, with a ``RuntimeWarning`` when it did not match. Rebuilds take a lock file in the
same directory; where the cache cannot be written (read-only), the extension is compiled into a
private temporary directory instead. Without Python's or NumPy's headers, or with
``$SYMDYN_FASTCALL=0``, the ctypes path is used; :func:`status` says which and why.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

MODULE = "symdyn_fastcall"
SOURCE = Path(__file__).with_name("_fastcall.c")

_lock = threading.Lock()
_state: dict[str, Any] = {}


def status() -> str:
    """``"on"`` when single calls go through the extension, else why not (``"off: ..."``)."""
    module()
    return _state["status"]


def module():
    """The loaded extension module, or None (see :func:`status`)."""
    if "module" in _state:
        return _state["module"]
    with _lock:
        if "module" not in _state:
            mod, why = _load()
            _state["module"], _state["status"] = mod, ("on" if mod is not None else f"off: {why}")
    return _state["module"]


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _check(path: Path) -> str:
    """"" when ``path`` exists and matches its recorded SHA-256, else what is wrong
    ("missing", "unrecorded" or a mismatch)."""
    from .cache import file_sha256

    if not path.is_file():
        return "missing"
    try:
        recorded = _digest_path(path).read_text().strip()
    except OSError:
        return "unrecorded"
    if file_sha256(path) != recorded:
        return (f"{path} does not match its recorded SHA-256 (truncated or overwritten); "
                "rebuilding it")
    return ""


def _compile(cmd: list[str], out: Path) -> str:
    """Compile the extension to ``out``; "" or the compiler's complaint."""
    res = subprocess.run([*cmd, str(out)], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        out.unlink(missing_ok=True)
        return f"compiling {SOURCE.name} failed: {res.stderr.strip()[-500:]}"
    return ""


def _rebuild(path: Path, cmd: list[str], problem: str) -> tuple[Path | None, str]:
    """Compile the extension and publish it at ``path`` with its SHA-256 (under a lock, the
    digest first, each by an atomic rename, so that a reader sees a whole file that matches its
    record, or a mismatch that sends it here); ``(path to load, "")`` or ``(None, why)``.
    Where the cache is not writable, the extension goes to a private temporary directory."""
    from .cache import file_sha256

    directory = path.parent
    try:
        import fcntl as _fcntl
        fcntl: Any = _fcntl
    except ImportError:  # pragma: no cover - Windows
        fcntl = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(directory / ".lock", "a+")
    except OSError as exc:
        private = Path(tempfile.mkdtemp(prefix="symdyn-fastcall-")) / path.name
        why = _compile(cmd, private)
        if not why:
            warnings.warn(f"{directory} is not writable ({exc}): compiled the fastcall "
                          f"extension into {private.parent}", RuntimeWarning, stacklevel=4)
        return (None, why) if why else (private, "")
    with lock:
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        problem = _check(path)           # another process may have rebuilt it meanwhile
        if not problem:
            return path, ""
        if problem not in ("missing", "unrecorded"):
            warnings.warn(problem, RuntimeWarning, stacklevel=4)
        tmp = directory / f".{path.name}.{os.getpid()}.tmp"
        why = _compile(cmd, tmp)
        if why:
            return None, why
        record = directory / f".{path.name}.{os.getpid()}.sha256.tmp"
        record.write_text(file_sha256(tmp) + "\n")
        os.replace(record, _digest_path(path))
        os.replace(tmp, path)
    return path, ""


def _load():
    if os.environ.get("SYMDYN_FASTCALL", "1").strip() in ("0", "off", "no", "false"):
        return None, "$SYMDYN_FASTCALL is off"
    if sys.implementation.name != "cpython":
        return None, f"{sys.implementation.name} is not CPython"
    try:
        import numpy as np

        from .cache import cache_root
        from .compiler import BuildError, compiler_info

        include = sysconfig.get_paths().get("include") or ""
        if not Path(include, "Python.h").exists():
            return None, f"Python.h not found in {include!r} (install Python's headers)"
        try:
            cc, version = compiler_info()
        except BuildError as exc:
            return None, str(exc)
        suffix = (importlib.machinery.EXTENSION_SUFFIXES or [".so"])[0]
        h = hashlib.sha256()
        for part in (SOURCE.read_bytes(), sys.version.encode(), suffix.encode(),
                     np.__version__.encode(), np.get_include().encode(), cc.encode(),
                     version.encode()):
            h.update(part)
            h.update(b"\0")
        cmd = [*cc.split(), "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{np.get_include()}",
               str(SOURCE), "-o"]
        if sys.platform == "darwin":
            cmd[1:1] = ["-undefined", "dynamic_lookup"]
        directory = cache_root() / "fastcall"
        path = directory / f"{MODULE}-{h.hexdigest()[:16]}{suffix}"
        problem = _check(path)
        if problem:
            built, why = _rebuild(path, cmd, problem)
            if built is None:
                return None, why
            path = built
        loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
        spec = importlib.util.spec_from_file_location(MODULE, str(path), loader=loader)
        if spec is None:
            return None, f"cannot load {path}"
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod, ""
    except (OSError, ImportError, subprocess.SubprocessError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
