"""``mypy symdyn`` is clean under the [tool.mypy] config of pyproject.toml (issue 12, section 3).

Skipped when mypy is not installed (``pip install -e ".[typecheck]"``) or when the package is
not run from its checkout (the config lives in pyproject.toml).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_package_ships_py_typed():
    import symdyn
    assert (Path(symdyn.__file__).parent / "py.typed").is_file()


@pytest.mark.slow
def test_mypy_clean():
    api = pytest.importorskip("mypy.api")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not run from the source checkout")
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)   # mypy reads [tool.mypy] (files = symdyn) from ./pyproject.toml
        stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                          "--no-error-summary", "--cache-dir", os.devnull])
    finally:
        os.chdir(cwd)
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, f"mypy found {len(errors)} errors:\n{stdout}\n{stderr}"


def test_public_api_is_annotated():
    """Every function exported by ``symdyn`` and Model's public methods annotate their
    parameters and return value."""
    import inspect

    import symdyn
    from symdyn.model import Model

    missing = []

    def check(qualname, fn):
        sig = inspect.signature(fn)
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{qualname} -> return")
        for p in sig.parameters.values():
            if p.name in ("self", "cls"):
                continue
            if p.annotation is inspect.Parameter.empty:
                missing.append(f"{qualname}({p.name})")

    for name in symdyn.__all__:
        obj = getattr(symdyn, name)
        if inspect.isfunction(obj):
            check(f"symdyn.{name}", obj)
    for name, member in vars(Model).items():
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member):
            check(f"Model.{name}", member)
    assert not missing, "unannotated public API: " + ", ".join(missing)
