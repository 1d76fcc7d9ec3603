"""The build cache: content-addressed entries, safe under concurrent builders.

An entry is a directory ``<root>/<key>`` holding the generated sources, the shared library and a
manifest (``symdyn_build.json``) with the SHA-256 of every file and of the manifest's own content
(``manifest_sha256``, over its canonical JSON without that field). The key hashes the model's
content (not its name), the algorithms and their options, the code-generation options and the
symdyn, CasADi and compiler versions, so stale entries are never looked up. Lookups take no lock
(entries appear by one atomic ``rename`` and are never modified in place), so a read-only cache
serves its valid entries. Builders take a lock file (``<root>/locks/<key>.lock``, POSIX
``flock``), build in a private temporary directory and publish it with one atomic ``rename``; an
entry whose manifest or checksums do not verify (corrupted, truncated, half-deleted, edited) is
moved aside and rebuilt. The manifest's checksums detect damage, not a deliberate edit (anyone
can recompute them): the sizes the C code reads and writes are never taken from the manifest
but from the compiled library itself (:mod:`symdyn.codegen.loader`), and an entry whose manifest
disagrees with its library is rebuilt as well (:class:`InvalidBuild`).

The root is ``$SYMDYN_CACHE`` if set, else ``$XDG_CACHE_HOME/symdyn`` or ``~/.cache/symdyn``
(plus ``/codegen``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import keyword
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import numpy as np

MANIFEST = "symdyn_build.json"
DIGEST_KEY = "manifest_sha256"


class InvalidBuild(ValueError):
    """A build directory whose manifest and compiled library disagree (sizes, function counts):
    corrupted or modified after it was built. :func:`symdyn.codegen.build` rebuilds such a
    cache entry."""


def cache_root() -> Path:
    """Directory holding the code-generation cache (created on first use)."""
    env = os.environ.get("SYMDYN_CACHE")
    if env:
        base = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "symdyn"
    return base / "codegen"


def clear_cache(root: Path | None = None) -> int:
    """Remove every cache entry under ``root`` (default :func:`cache_root`); returns the count."""
    root = Path(root) if root is not None else cache_root()
    if not root.is_dir():
        return 0
    n = 0
    for p in root.iterdir():
        if p.is_dir() and p.name not in ("locks",):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


def _feed(h, x: Any) -> None:
    if isinstance(x, np.ndarray) or (isinstance(x, (list, tuple)) and x and
                                     isinstance(x[0], (float, np.floating))):
        a = np.ascontiguousarray(np.asarray(x, dtype=float))
        h.update(f"a{a.shape}".encode())
        h.update(a.tobytes())
    else:
        h.update(repr(x).encode())
    h.update(b";")


def model_fingerprint(model) -> str:
    """SHA-256 of everything that determines the generated code of a numeric model: topology,
    joint types and parameters, tree transforms, inertias, gravity, armature, damping and
    friction, the names that frame options resolve (bodies, joints, frames) and the frames'
    placements, mimic couplings (not the model's name)."""
    h = hashlib.sha256(b"symdyn-model-v2;")
    _feed(h, list(model.parents))
    for j in model.joints:
        params = sorted((k, v) for k, v in vars(j).items() if not k.startswith("_"))
        _feed(h, (type(j).__module__, type(j).__qualname__, j.nq, j.nv, repr(params)))
    for X in model.Xtree:
        _feed(h, np.asarray(X.E, dtype=float))
        _feed(h, np.asarray(X.r, dtype=float).reshape(-1))
    for I in model.I:
        _feed(h, np.asarray(I, dtype=float))
    _feed(h, np.asarray(model.gravity, dtype=float).reshape(-1))
    for field in ("armature", "damping", "friction"):
        _feed(h, np.asarray(getattr(model, field), dtype=float).reshape(-1))
    _feed(h, (tuple(model.names), tuple(model.joint_names)))
    for name, fr in sorted(model.frames.items()):
        _feed(h, (name, int(fr.body)))
        _feed(h, np.asarray(fr.X.E, dtype=float))
        _feed(h, np.asarray(fr.X.r, dtype=float).reshape(-1))
    _feed(h, sorted((k, repr(v)) for k, v in model.mimic.items()))
    return h.hexdigest()


def build_key(data: dict) -> str:
    """Cache key: SHA-256 of the canonical JSON of ``data`` (first 32 hex digits)."""
    text = json.dumps(data, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_files(manifest: dict) -> list[str]:
    """Names of the files a build wrote (sources, headers, example, Makefile, library)."""
    prefix = manifest["prefix"]
    names = [f"{prefix}_api.c", f"{prefix}_api.h", "main.c", "Makefile"]
    for fd in manifest["functions"]:
        names += [fd["source"], fd["header"]]
        if fd.get("simd_source"):
            names.append(fd["simd_source"])
        if fd.get("derivatives"):
            names += [fd["derivatives"]["source"], fd["derivatives"]["header"]]
    if manifest.get("library"):
        names.append(manifest["library"])
    return names


def manifest_digest(manifest: dict) -> str:
    """SHA-256 of a manifest's content: its canonical JSON (sorted keys, no spaces) without the
    :data:`DIGEST_KEY` entry."""
    body = {k: v for k, v in manifest.items() if k != DIGEST_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def write_manifest(directory: Path, manifest: dict) -> None:
    """Record the checksums of the build's files and of the manifest's content, and write the
    manifest atomically (other files in ``directory`` are left alone)."""
    directory = Path(directory)
    files = {name: file_sha256(directory / name) for name in build_files(manifest)}
    # through JSON once, so that the digest covers exactly what a reader parses (tuples become
    # lists, keys strings)
    manifest = json.loads(json.dumps({k: v for k, v in dict(manifest, files=files).items()
                                      if k != DIGEST_KEY}))
    manifest[DIGEST_KEY] = manifest_digest(manifest)
    tmp = directory / f"{MANIFEST}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, directory / MANIFEST)


def read_manifest(directory: Path) -> dict:
    """The manifest of a build directory (OSError/ValueError when missing, unreadable, of the
    wrong shape or when its content does not match its ``manifest_sha256``)."""
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{directory} is not a symdyn build directory (no {MANIFEST})") \
            from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is corrupted: {exc}") from None
    problem = manifest_problem(manifest)
    if problem:
        raise ValueError(f"{path} is corrupted: {problem}")
    if manifest.get(DIGEST_KEY) != manifest_digest(manifest):
        raise ValueError(f"{path} does not match its checksum ({DIGEST_KEY}): corrupted or "
                         "modified, or written by a version of symdyn that recorded none")
    return manifest


_FUNCTION_KEYS = {"algorithm": str, "fname": str, "source": str, "header": str,
                  "input_names": list, "input_sizes": list, "output_names": list,
                  "output_shapes": list}


def manifest_problem(manifest) -> str:
    """What is wrong with the shape of a parsed manifest ("" when it has every key the loader
    and the cache use, with the right types): valid JSON of the wrong shape (``[]``,
    ``{"files": 3}``) counts as a corrupted entry, which the cache rebuilds."""
    if not isinstance(manifest, dict):
        return f"expected a JSON object, got {type(manifest).__name__}"
    if not isinstance(manifest.get("prefix"), str) or not manifest["prefix"]:
        return "no 'prefix' string"
    files = manifest.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in files.items()):
        return "'files' is not a mapping of file names to checksums"
    if not all(Path(k).name == k for k in files):
        return "'files' names a path outside the build directory"
    lib = manifest.get("library")
    if lib is not None and (not isinstance(lib, str) or Path(lib).name != lib):
        return "'library' is not a file name"
    functions = manifest.get("functions")
    if not isinstance(functions, list) or not functions:
        return "no 'functions' list"
    for k, fd in enumerate(functions):
        if not isinstance(fd, dict):
            return f"functions[{k}] is not an object"
        for key, typ in _FUNCTION_KEYS.items():
            if not isinstance(fd.get(key), typ):
                return f"functions[{k}] has no valid {key!r}"
        # the loader writes Python source with these names (the specialized calls)
        for name in [fd["algorithm"], *fd["input_names"]]:
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
                return f"functions[{k}] holds {name!r}, which is not a Python identifier"
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                   for n in fd["input_sizes"]) or \
                not all(isinstance(s, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                                    and n >= 0 for n in s)
                        for s in fd["output_shapes"]):
            return f"functions[{k}] has sizes that are not non-negative integers"
        der = fd.get("derivatives")
        if der is not None and not (isinstance(der, dict) and all(
                isinstance(der.get(n), str) and Path(der[n]).name == der[n]
                for n in ("source", "header"))):
            return f"functions[{k}] has invalid 'derivatives'"
        if len(fd["input_names"]) != len(fd["input_sizes"]) or \
                len(fd["output_names"]) != len(fd["output_shapes"]):
            return f"functions[{k}]: names and sizes disagree"
    quats = manifest.get("quaternions", [])
    if not isinstance(quats, list) or not all(
            isinstance(d, dict) and isinstance(d.get("offset"), int) for d in quats):
        return "'quaternions' is not a list of {offset, body}"
    return ""


def verify(directory: Path, key: str | None = None) -> tuple[dict | None, str]:
    """``(manifest, "")`` when the entry is complete and every checksum matches, else
    ``(None, reason)``."""
    directory = Path(directory)
    if not directory.is_dir():
        return None, "missing"
    try:
        manifest = read_manifest(directory)
    except (OSError, ValueError) as exc:
        return None, f"unreadable manifest ({exc})"
    if key is not None and manifest.get("key") != key:
        return None, "manifest key does not match"
    files = manifest.get("files")
    if not files:
        return None, "the manifest lists no files"
    if manifest.get("library") and manifest["library"] not in files:
        return None, "library missing from the manifest"
    for name, digest in files.items():
        p = directory / name
        if not p.is_file():
            return None, f"{name} is missing"
        if file_sha256(p) != digest:
            return None, f"{name} does not match its checksum (corrupted or modified)"
    return manifest, ""


def discard(directory: Path) -> None:
    """Move a bad entry aside (atomic) and delete it."""
    directory = Path(directory)
    trash = directory.with_name(f"trash-{directory.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(directory, trash)
    except OSError:
        trash = directory
    shutil.rmtree(trash, ignore_errors=True)


def new_tmp_dir(root: Path, key: str) -> Path:
    """A private directory next to the entries (same file system, so rename is atomic)."""
    root.mkdir(parents=True, exist_ok=True)
    d = root / f"tmp-{key[:12]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    return d


def publish(tmp: Path, entry: Path) -> bool:
    """Rename ``tmp`` to ``entry``; False (and ``tmp`` removed) if another builder won the race."""
    try:
        os.rename(tmp, entry)
        return True
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False


def sweep(root: Path, max_age: float = 86400.0) -> None:
    """Remove leftovers of crashed builders (tmp-*/trash-* directories older than max_age s)."""
    if not root.is_dir():
        return
    now = time.time()
    for p in root.iterdir():
        if p.name.startswith(("tmp-", "trash-")):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > max_age:
                    shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def lock(root: Path, key: str) -> Iterator[None]:
    """Exclusive lock for one key across processes, taken by builders only (lookups need none).
    No-op where fcntl is unavailable: the atomic rename still keeps concurrent builders safe,
    they only duplicate work. ``OSError`` when the lock file cannot be created (a read-only
    cache)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    locks = root / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{key}.lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
