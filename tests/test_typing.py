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


# algorithm code calling the backend: a misspelt function and a call with an argument missing
BAD_BACKEND_CALLS = '''
from symdyn.types import Backend


def stacked(B: Backend, x):
    top = B.vcat([x, x])        # fine
    B.vcatt([x, x])             # misspelt
    return B.rows(top, 0)       # rows(x, a, b): b missing
'''


@pytest.mark.slow
def test_mypy_checks_calls_against_the_backend_protocol(tmp_path):
    """``B: Backend`` is checked: a misspelt backend function and a wrong arity are errors (a
    plain module type would let both through)."""
    api = pytest.importorskip("mypy.api")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not run from the source checkout")
    src = tmp_path / "bad_backend_calls.py"
    src.write_text(BAD_BACKEND_CALLS)
    lines = BAD_BACKEND_CALLS.splitlines()
    misspelt = next(k for k, s in enumerate(lines, 1) if "vcatt" in s)
    missing = next(k for k, s in enumerate(lines, 1) if "B.rows" in s)
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)   # symdyn resolved from the checkout, under its [tool.mypy] config
        stdout, _, status = api.run([str(src), "--config-file", str(ROOT / "pyproject.toml"),
                                     "--follow-imports", "silent", "--no-error-summary",
                                     "--cache-dir", os.devnull])
    finally:
        os.chdir(cwd)
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 1 and len(errors) == 2, stdout
    assert f':{misspelt}: error: "Backend" has no attribute "vcatt"' in errors[0], stdout
    assert f":{missing}: error:" in errors[1] and '"rows"' in errors[1], stdout
