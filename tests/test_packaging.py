"""The package boundary (issue 12): what importing symdyn pulls in, where the spec parser and the
reference derivatives live, the optional extras, and what CI installs and runs."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import symdyn as sd

REPO = Path(__file__).resolve().parents[1]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def test_importing_symdyn_does_not_import_matplotlib():
    """Neither ``import symdyn`` nor any of its submodules (CLI, codegen, symbolic, experiments
    runner ...) imports matplotlib: it is the optional extra 'plots'."""
    r = _run("""
        import importlib, pkgutil, sys
        import symdyn, symdyn.cli
        assert "matplotlib" not in sys.modules, "import symdyn imported matplotlib"
        names = [m.name for m in pkgutil.walk_packages(symdyn.__path__, "symdyn.")
                 if not m.name.endswith("__main__")]
        optional = {"jax", "jaxlib", "dask", "distributed", "mujoco"}   # the extras' packages
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError as e:   # a module of an optional extra, without that extra
                if (e.name or "").split(".")[0] not in optional:
                    raise
            bad = sorted(k for k in sys.modules if k == "matplotlib" or k.startswith("matplotlib."))
            assert not bad, f"{name} imported {bad[0]}"
        print(len(names))
    """)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 20        # the walk really visited the submodules


def test_core_works_with_matplotlib_blocked():
    """With matplotlib unimportable, the package, the CLI and a demo still work."""
    r = _run("""
        import sys
        sys.modules["matplotlib"] = None      # import matplotlib -> ImportError
        from symdyn.cli import main
        raise SystemExit(main(["demo", "--model", "serial:2", "--backends", "numpy", "--repeat", "1"]))
    """)
    assert r.returncode == 0, r.stderr
    assert "M = crba(q)" in r.stdout


def test_experiment_figures_without_matplotlib_fail_clearly():
    r = _run("""
        import sys
        sys.path.insert(0, "experiments")
        sys.modules["matplotlib"] = None
        import _common
        _common.pyplot()
    """)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "matplotlib" in r.stderr and "pip install 'symdyn[plots]'" in r.stderr


def test_no_direct_matplotlib_imports_outside_the_helper():
    """Scripts import matplotlib only through experiments/_common.pyplot (the clear message)."""
    offenders = []
    for path in [*REPO.joinpath("symdyn").rglob("*.py"), *REPO.joinpath("experiments").glob("*.py")]:
        if path.name == "_common.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*(import matplotlib|from matplotlib)", line):
                offenders.append(f"{path.relative_to(REPO)}:{n}")
    assert not offenders, offenders


def test_spec_parser_lives_with_the_model_loaders():
    from symdyn import models
    from symdyn.io import specs

    for name in ("from_spec", "SPEC_HELP", "SpecError", "_spec_options", "_spec_int"):
        assert not hasattr(models, name), f"symdyn.models still defines {name}"
    assert issubclass(specs.SpecError, ValueError)
    assert specs.from_spec("serial:3").nv == 3
    with pytest.raises(specs.SpecError, match="unknown model spec 'nosuch:1'"):
        specs.from_spec("nosuch:1")


def test_reference_derivatives_have_reference_names():
    import numpy as np

    from symdyn.algorithms.aba_derivatives import aba_derivatives
    from symdyn.algorithms.rnea_derivatives import rnea_derivatives

    assert sd.rnea_derivatives is rnea_derivatives and sd.aba_derivatives is aba_derivatives
    with pytest.raises(ImportError):
        __import__("symdyn.derivatives")
    model = sd.models.serial_chain(3, seed=0)
    q, qd, qdd = model.random_q(0), np.ones(3), np.zeros(3)
    for X, R in zip(sd.reference_rnea_derivatives(model, q, qd, qdd, method="fd"),
                    sd.rnea_derivatives(model, q, qd, qdd)):
        np.testing.assert_allclose(X, R, atol=1e-6)


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_matplotlib_is_an_optional_extra():
    proj = _pyproject()["project"]
    assert not any(d.startswith("matplotlib") for d in proj["dependencies"])
    extras = proj["optional-dependencies"]
    assert any(d.startswith("matplotlib") for d in extras["plots"])
    assert any(d.startswith("matplotlib") for d in extras["dev"])   # the suite draws figures
    assert proj["scripts"]["symdyn"] == "symdyn.cli:main"


def _readme_setup_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    block = re.search(r"## Set-up\s+```bash\n(.*?)```", readme, re.S)
    assert block, "README.md has no ## Set-up bash block"
    return [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]


def test_ci_runs_the_readme_commands_on_the_readme_install_in_a_fresh_venv():
    """.ci/run first creates a fresh virtual environment (so nothing installed outside it can
    hide a missing dependency), runs the README's set-up commands exactly as written, and only
    then installs the optional extras; the extras it installs are declared."""
    ci = (REPO / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    setup = _readme_setup_commands()
    assert setup[0] == 'pip install -e ".[dev]" && symdyn demo'
    assert "python -m pytest -q" in setup and "python -m pytest -q -m slow" in setup
    venv = next(i for i, c in enumerate(commands) if "-m venv" in c)
    activate = next(i for i, c in enumerate(commands) if c.startswith("source") and "activate" in c)
    positions = [commands.index(c) for c in setup]          # each README command, verbatim
    assert venv < activate < positions[0] and positions == sorted(positions)
    first_pip = next(i for i, c in enumerate(commands) if "pip install" in c and "-e" in c)
    assert first_pip == positions[0], "CI installs something before the README's install"
    extras = set(_pyproject()["project"]["optional-dependencies"])
    later = [c for c in commands[positions[-1]:] if "pip install" in c and '".[' in c]
    assert later, "CI never installs the optional extras"
    wanted = set(re.search(r'"\.\[([a-z,]+)\]"', later[0]).group(1).split(","))
    assert {"dev", "jax", "dask", "mujoco", "docs"} <= wanted <= extras


def test_default_test_command_leaves_out_only_the_slow_marker():
    opts = _pyproject()["tool"]["pytest"]["ini_options"]
    assert shlex.split(opts["addopts"]) == ["-m", "not slow"]
    assert any(m.startswith("slow:") for m in opts["markers"])


def test_every_joint_kind_of_the_spec_grammar_builds():
    """The spec parser's joint=KIND list and the builders agree (the parser keeps its own list
    because the grammar is the CLI's; a kind the builders dropped would fail here)."""
    from symdyn.io.specs import _JOINT_KINDS, SpecError, from_spec

    for kind in _JOINT_KINDS:
        for spec in (f"serial:2:joint={kind}", f"binary:3:joint={kind}", f"random:2:joint={kind}"):
            assert from_spec(spec).N >= 2, spec
    with pytest.raises(SpecError, match="unknown joint kind 'bogus'"):
        from_spec("serial:2:joint=revolute+bogus")


# import name -> distribution name, where the two differ
_DISTRIBUTION = {"pinocchio": "pin", "example_robot_data": "example-robot-data"}


def _third_party_imports(paths) -> dict[str, list[str]]:
    import ast

    std = set(sys.stdlib_module_names) | {"__future__"}
    local = {"symdyn", "conftest", "matrix_support"} | {
        p.stem for d in ("tests", "experiments") for p in REPO.joinpath(d).glob("*.py")}
    found: dict[str, list[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                if root not in std and root not in local:
                    found.setdefault(root, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_every_import_of_the_package_and_its_tests_is_declared():
    """A fresh install of the README's command must pass the tests: every third-party module
    that symdyn/ or tests/ imports is a declared dependency (core, or an optional extra whose
    tests skip without it)."""
    proj = _pyproject()["project"]
    declared = set()
    for req in [*proj["dependencies"], *sum(proj["optional-dependencies"].values(), [])]:
        declared.add(re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-"))
    paths = [*REPO.joinpath("symdyn").rglob("*.py"), *REPO.joinpath("tests").rglob("*.py")]
    undeclared = {mod: where for mod, where in _third_party_imports(paths).items()
                  if _DISTRIBUTION.get(mod, mod).lower().replace("_", "-") not in declared}
    assert not undeclared, f"imports no dependency list declares: {undeclared}"


def test_every_slow_case_names_an_existing_test():
    """conftest.SLOW_CASES marks cases by name: a renamed test would silently join the default
    run, so every key must name a test function of its file."""
    from conftest import SLOW_CASES

    for key in SLOW_CASES:
        file, name = key.split("::")
        source = (REPO / "tests" / file).read_text()
        if name != "*":
            assert re.search(rf"^def {name}\(", source, re.M), f"SLOW_CASES names no test {key}"
