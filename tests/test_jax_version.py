"""symdyn.jax refuses a JAX older than the jax extra's floor with a clear ImportError (older
releases fail deep inside the program route with TypeErrors)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")


@pytest.mark.parametrize("version, ok", [("0.6.0", False), ("0.8.0", False), ("0.8.2", True),
                                         ("0.10.2", True), ("1.0.0rc1", True)])
def test_jax_older_than_the_floor_is_refused_on_import(version, ok):
    code = textwrap.dedent(f"""
        import jax
        jax.__version__ = {version!r}
        try:
            import symdyn.jax
        except ImportError as e:
            print("refused:", e, "| name:", e.name)
        else:
            print("imported")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300).stdout
    if ok:
        assert out.strip() == "imported", out
    else:
        assert f"symdyn.jax needs JAX >= 0.8.2, found {version}" in out and "name: jax" in out, out


def test_floor_matches_the_jax_extra():
    import re
    import tomllib
    from pathlib import Path

    import symdyn.jax

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["jax"]
    floor = re.search(r"jax>=([0-9.]+)", extra[0]).group(1)
    assert tuple(int(p) for p in floor.split(".")) == symdyn.jax.JAX_MIN
