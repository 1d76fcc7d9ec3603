"""What the compiled path loads from the build cache is verified before use
(symdyn/codegen/cache.py, fastcall.py, loader.py, build.py):

* the fastcall extension: a truncated or overwritten copy is rebuilt (with a warning) instead of
  crashing every process that loads it (SIGBUS, SIGSEGV);
* cache entries: an edit of the manifest (even valid JSON, even with its checksum recomputed)
  cannot make the C code write past its buffers: sizes come from the library, and the entry is
  rebuilt; a build directory loaded with ``load`` is refused with a clear error;
* a read-only cache serves its valid entries (lookups take no lock), and a build it cannot
  store goes to a temporary directory with a warning.

Loads that could crash run in subprocesses, so that a crash fails the test instead of pytest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import build, load
from symdyn.codegen import cache as cg_cache
from symdyn.codegen.compiler import BuildError, compiler_info
from symdyn.models import serial_chain

try:
    compiler_info()
except BuildError as exc:  # pragma: no cover - machines without a C compiler
    pytest.skip(f"no C compiler: {exc}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[1]


def _run(code: str, cache: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, SYMDYN_CACHE=str(cache), PYTHONPATH=str(REPO))
    env.pop("SYMDYN_FASTCALL", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _describe(res) -> str:
    return f"rc={res.returncode}\nstdout:\n{res.stdout[-2000:]}\nstderr:\n{res.stderr[-3000:]}"


# --- 1. the fastcall extension ----------------------------------------------------------------------

FASTCALL = """
import warnings
warnings.simplefilter("always")
from symdyn.codegen import fastcall
print("STATUS", fastcall.status())
print("FUNCTION", hasattr(fastcall.module(), "Function"))
"""


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[:len(data) // 2])
    else:          # same size, the ELF header kept, the rest garbage
        rng = np.random.default_rng(0)
        path.write_bytes(data[:64] + rng.integers(0, 256, len(data) - 64, dtype=np.uint8)
                         .tobytes())


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_damaged_fastcall_extension_is_rebuilt(tmp_path, how):
    first = _run(FASTCALL, tmp_path)
    if "STATUS on" not in first.stdout:
        pytest.skip(f"fastcall extension unavailable here: {first.stdout}{first.stderr}")
    (so,) = (tmp_path / "codegen" / "fastcall").glob("symdyn_fastcall-*.so")
    assert Path(str(so) + ".sha256").read_text().strip() == cg_cache.file_sha256(so)
    _damage(so, how)
    again = _run(FASTCALL, tmp_path)
    assert again.returncode == 0, _describe(again)
    assert "STATUS on" in again.stdout and "FUNCTION True" in again.stdout, _describe(again)
    assert "does not match its recorded SHA-256" in again.stderr, _describe(again)
    assert Path(str(so) + ".sha256").read_text().strip() == cg_cache.file_sha256(so)
    # and the next process loads the rebuilt file without a word
    third = _run(FASTCALL, tmp_path)
    assert "STATUS on" in third.stdout and "SHA-256" not in third.stderr, _describe(third)


def test_unrecorded_fastcall_extension_is_rebuilt(tmp_path):
    first = _run(FASTCALL, tmp_path)
    if "STATUS on" not in first.stdout:
        pytest.skip(f"fastcall extension unavailable here: {first.stdout}{first.stderr}")
    (so,) = (tmp_path / "codegen" / "fastcall").glob("symdyn_fastcall-*.so")
    record = Path(str(so) + ".sha256")
    record.unlink()
    _damage(so, "truncated")        # no record: never loaded unverified
    again = _run(FASTCALL, tmp_path)
    assert again.returncode == 0 and "STATUS on" in again.stdout, _describe(again)
    assert record.read_text().strip() == cg_cache.file_sha256(so)


# --- 2. tampered cache entries ------------------------------------------------------------------------

BUILD = """
import numpy as np, symdyn as sd
from symdyn.codegen import build
from symdyn.models import serial_chain
m = serial_chain(3)
lib = build(m, ["rnea", "crba"], opt="-O0", progress=False)
q, qd, qdd = np.full(3, 0.3), np.full(3, -0.2), np.full(3, 0.5)
for _ in range(3):
    assert np.allclose(lib.crba(q), sd.crba(m, q)), lib.crba(q)
    assert np.allclose(lib.rnea(q, qd, qdd), sd.rnea(m, q, qd, qdd))
print("HIT", lib.cache_hit, lib.crba.output_shapes, lib.rnea.input_shapes)
"""


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in (cache / "codegen").iterdir()
                if p.is_dir() and p.name not in ("locks", "fastcall")]
    return entry


def _edit(entry: Path, change, redigest: bool) -> None:
    path = entry / cg_cache.MANIFEST
    manifest = json.loads(path.read_text())
    change({fd["algorithm"]: fd for fd in manifest["functions"]})
    if redigest:
        manifest[cg_cache.DIGEST_KEY] = cg_cache.manifest_digest(manifest)
    path.write_text(json.dumps(manifest))


def _shrink_output(fds):
    fds["crba"]["output_shapes"] = [[1, 1]]


def _grow_input(fds):
    fds["rnea"]["input_sizes"] = [3, 3, 30]


@pytest.mark.parametrize("change", [_shrink_output, _grow_input])
@pytest.mark.parametrize("redigest", [False, True])
def test_edited_manifest_is_rebuilt(tmp_path, change, redigest):
    first = _run(BUILD, tmp_path)
    assert "HIT False" in first.stdout, _describe(first)
    assert "HIT True" in _run(BUILD, tmp_path).stdout
    entry = _entry(tmp_path)
    _edit(entry, change, redigest)
    again = _run(BUILD, tmp_path)
    assert again.returncode == 0, _describe(again)
    # rebuilt (not served), with the true sizes
    assert "HIT False ((3, 3),) ((3,), (3,), (3,))" in again.stdout, _describe(again)
    assert "HIT True" in _run(BUILD, tmp_path).stdout


LOAD = """
import sys
from symdyn.codegen import load
try:
    load(sys.argv[1] if len(sys.argv) > 1 else {path!r})
except ValueError as exc:
    print("REFUSED", type(exc).__name__, exc)
else:
    print("LOADED")
"""


@pytest.mark.parametrize("change", [_shrink_output, _grow_input])
def test_load_refuses_a_manifest_that_disagrees_with_its_library(tmp_path, change):
    out = tmp_path / "out"
    build(serial_chain(3), ["rnea", "crba"], out_dir=out, opt="-O0", progress=False)
    _edit(out, change, redigest=False)
    res = _run(LOAD.format(path=str(out)), tmp_path / "cache")
    assert res.returncode == 0, _describe(res)
    assert "REFUSED ValueError" in res.stdout and "does not match its checksum" in res.stdout
    _edit(out, lambda fds: None, redigest=True)          # checksum recomputed: the library says
    res = _run(LOAD.format(path=str(out)), tmp_path / "cache")
    assert res.returncode == 0, _describe(res)
    assert "REFUSED InvalidBuild" in res.stdout, _describe(res)
    assert "in the library" in res.stdout and "modified" in res.stdout


def test_manifest_naming_non_identifiers_is_corrupted(tmp_path):
    out = tmp_path / "out"
    build(serial_chain(2), ["rnea"], out_dir=out, opt="-O0", progress=False)

    def inject(fds):
        fds["rnea"]["input_names"] = ["q", "qd", "qdd=__import__('os')"]
    _edit(out, inject, redigest=True)
    with pytest.raises(ValueError, match="not a Python identifier"):
        load(out)


def test_manifest_content_checksum_recorded(tmp_path):
    out = tmp_path / "out"
    lib = build(serial_chain(2), ["rnea"], out_dir=out, opt="-O0", progress=False)
    manifest = json.loads((out / cg_cache.MANIFEST).read_text())
    assert manifest[cg_cache.DIGEST_KEY] == cg_cache.manifest_digest(manifest)
    assert lib.manifest[cg_cache.DIGEST_KEY] == manifest[cg_cache.DIGEST_KEY]
    manifest["model"]["name"] = "other"        # any edit, even one the loader does not use
    (out / cg_cache.MANIFEST).write_text(json.dumps(manifest))
    assert cg_cache.verify(out)[0] is None
    with pytest.raises(ValueError, match="does not match its checksum"):
        load(out)


# --- 3. read-only caches ------------------------------------------------------------------------------

def _no_lock(root, key):
    raise PermissionError(13, "Permission denied", str(root / "locks" / f"{key}.lock"))


def test_valid_entry_served_without_the_lock(tmp_path, monkeypatch):
    m = serial_chain(2)
    first = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert not first.cache_hit
    monkeypatch.setattr(cg_cache, "lock", _no_lock)      # the lock file cannot be created
    lib = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert lib.cache_hit
    q = np.array([0.1, 0.2])
    np.testing.assert_allclose(lib.rnea(q, q, q), sd.rnea(m, q, q, q), atol=1e-12)


def test_unlockable_cache_builds_elsewhere(tmp_path, monkeypatch):
    m = serial_chain(2)
    monkeypatch.setattr(cg_cache, "lock", _no_lock)
    with pytest.warns(RuntimeWarning, match="not writable"):
        lib = build(m, ["crba"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert not lib.cache_hit and tmp_path not in lib.path.parents
    q = np.array([0.1, 0.2])
    np.testing.assert_allclose(lib.crba(q), sd.crba(m, q), atol=1e-12)


def test_cache_whose_lock_directory_cannot_be_made(tmp_path):
    """A real file-system refusal (running as root, chmod would not stop writes): ``locks`` is
    a regular file, so no lock file can be created below it."""
    m = serial_chain(2)
    build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    locks = tmp_path / "locks"
    for p in locks.iterdir():
        p.unlink()
    locks.rmdir()
    locks.write_text("not a directory")
    assert build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False).cache_hit
    with pytest.warns(RuntimeWarning, match="not writable"):
        other = build(m, ["crba"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert not other.cache_hit


def test_fingerprint_covers_everything_the_code_depends_on():
    """Armature, damping, friction, frame placements and names change the generated code (or
    what a frame option resolves to): each changes the model's fingerprint, hence the key."""
    from symdyn.codegen.cache import model_fingerprint
    from symdyn.spatial import Transform

    def arm(tool_at=0.1, tool="tool", link="l1"):
        return sd.Model([
            sd.Body("l0", None, sd.Revolute("z")),
            sd.Body(link, "l0", sd.Revolute("y"), X_tree=Transform(np.eye(3), [0.0, 0.0, 0.3])),
            sd.Body(tool, link, sd.Fixed(), mass=0.1, inertia=0.01 * np.eye(3),
                    X_tree=Transform(np.eye(3), [tool_at, 0.0, 0.0]))])

    m = arm()
    base = model_fingerprint(m)
    assert model_fingerprint(arm()) == base
    variants = [m.replace(armature=[0.0, 0.5]), m.replace(damping=[0.1, 0.0]),
                m.replace(friction=[0.0, 0.2]), arm(tool_at=0.2), arm(tool="flange"),
                arm(link="upper")]
    prints = [model_fingerprint(v) for v in variants]
    assert base not in prints and len(set(prints)) == len(prints)
