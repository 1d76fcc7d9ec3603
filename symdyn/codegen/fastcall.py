"""Single calls through a small CPython extension instead of ctypes.

A compiled function's single call through ``ctypes`` costs about 0.6-0.8 us on top of the C
computation (converting each input with ``tobytes``, the ctypes call, the result pool's
reference counts; measured in reports/fastpath.md), which is most of a call on models of
10-20 bodies. ``_fastcall.c`` is a CPython extension type, ``Caller``, bound to one generated
entry point ``F_call(void **ctx)``: called with exactly the function's inputs as C-contiguous
float64 arrays of the right shapes, it points the context at their data, lets C write into
fresh result arrays and returns them; any other call (keywords such as ``out=`` or ``nan=``,
lists, other dtypes or shapes, non-contiguous arrays) and any nonzero status from C (NaN/inf,
a bad quaternion, a call from a thread that does not own the context) goes to the Python call
with the same arguments, so conversions, error messages and threads behave exactly as there.

The extension is compiled once per Python, NumPy and compiler into the build cache
(``cache_root()/fastcall``, ~1 s of gcc) on the first build in a process, and shared by every
build. Without Python's or NumPy's headers, or with ``$SYMDYN_FASTCALL=0``, the ctypes path is
used; :func:`status` says which and why.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import threading
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
        directory = cache_root() / "fastcall"
        path = directory / f"{MODULE}-{h.hexdigest()[:16]}{suffix}"
        if not path.exists():
            directory.mkdir(parents=True, exist_ok=True)
            tmp = directory / f".{path.name}.{os.getpid()}.tmp"
            cmd = [*cc.split(), "-O2", "-shared", "-fPIC", f"-I{include}",
                   f"-I{np.get_include()}", str(SOURCE), "-o", str(tmp)]
            if sys.platform == "darwin":
                cmd[1:1] = ["-undefined", "dynamic_lookup"]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if res.returncode != 0:
                tmp.unlink(missing_ok=True)
                return None, f"compiling {SOURCE.name} failed: {res.stderr.strip()[-500:]}"
            os.replace(tmp, path)     # atomic: concurrent first builds each publish a whole file
        loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
        spec = importlib.util.spec_from_file_location(MODULE, str(path), loader=loader)
        if spec is None:
            return None, f"cannot load {path}"
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod, ""
    except (OSError, ImportError, subprocess.SubprocessError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
