"""The ``symdyn`` command: help, version, demo output, errors as one line with exit code 2."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from symdyn import __version__, cli


def test_help(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: symdyn" in out and "demo" in out


def test_demo_help_lists_specs(capsys):
    assert cli.main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--model SPEC" in out and "quadruped:N" in out and "robot:NAME" in out


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"symdyn {__version__}"


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 0
    assert "usage: symdyn" in capsys.readouterr().out


def test_demo_prints_matrices_and_timings(capsys):
    assert cli.main(["demo", "--model", "serial:3", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "M = crba(q)" in out and "tau = rnea(q, qd, qdd)" in out
    assert "nonlinear effects" in out
    for backend in ("numpy", "sympy", "casadi"):
        assert re.search(rf"^\s+{backend}\s+\S.*\d s", out, re.M), backend
    assert "evaluate Function" in out and "build SX graph" in out
    # the printed self-checks and cross-backend agreement are tiny
    for m in re.finditer(r"max \|[^=]*= ([0-9.e+-]+)", out):
        assert float(m.group(1)) < 1e-8, m.group(0)
    assert len(re.findall(r"agree with numpy", out)) == 2


def test_demo_floating_model_and_backend_subset(capsys):
    assert cli.main(["demo", "--model", "quadruped:4:floating", "--backends", "numpy,casadi",
                     "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "nv=10" in out and "sympy" not in out.split("timings")[1]


def test_demo_sympy_row_symbols_or_numbers(capsys):
    """Small one-DoF models build SymPy expressions; --sympy numbers evaluates SymPy at the state
    instead, and the results still agree with NumPy."""
    from symdyn.io.specs import from_spec

    assert cli.sympy_mode(from_spec("serial:3"))[0] == "symbols"
    assert cli.sympy_mode(from_spec(f"serial:{cli.SYMPY_SYMBOLS_MAX_NV + 1}"))[0] == "numbers"
    mode, why = cli.sympy_mode(from_spec("quadruped:4:floating"))
    assert mode == "numbers" and "floating" in why
    assert cli.sympy_mode(from_spec("quadruped:4:floating"), "symbols")[0] == "symbols"
    assert cli.main(["demo", "--model", "serial:3", "--repeat", "2", "--sympy", "numbers",
                     "--backends", "sympy"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+sympy\s+evaluate at numbers \(once\)(\s+\S+ s){3}$", out, re.M), out
    assert "note: sympy evaluated at sympy.Float inputs" in out
    d = float(re.search(r"sympy results .* max \|diff\| = (\S+)", out).group(1))
    assert d < 1e-8


def _readme_demo_specs() -> list[str]:
    """The spec strings README.md lists for `symdyn demo --model SPEC`, optional parts expanded
    (``quadruped:20[:floating]`` gives two), the .urdf path replaced by a file of the tests."""
    import itertools
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    para = text[text.index("`symdyn demo --model SPEC` accepts"):]
    para = para[:para.index("\n\n")]
    specs = []
    for raw in re.findall(r"`([a-z0-9]+:[^`\s]*)`", para):
        parts = re.split(r"\[(:[^\]]+)\]", raw)           # base, optional, rest, ...
        options = [(p,) if i % 2 == 0 else ("", p) for i, p in enumerate(parts)]
        specs += ["".join(c) for c in itertools.product(*options)]
    assert ".urdf" in para
    specs.append(str(Path(__file__).parent / "data" / "two_link_arm.urdf"))
    return specs


def test_every_readme_demo_spec_parses():
    from symdyn.io.specs import from_spec

    specs = _readme_demo_specs()
    assert {"quadruped:20:floating", "planar:10:symbolic", "random:12:seed=3",
            "robot:panda"} <= set(specs), specs
    for spec in specs:
        assert from_spec(spec).nv >= 1, spec


@pytest.mark.parametrize("spec", ["quadruped:4:floating", "quadruped:20:floating", "biped:20",
                                  "planar:10:symbolic"])
def test_demo_finishes_on_readme_specs(spec):
    """These demos used to run for hours (SymPy ABA inverting a symbolic 6x6 articulated inertia,
    symbolic expressions of 20-DoF models, sympy.simplify of a 10-link M); the limit is loose
    because the machine may be shared, but far below the old run times."""
    r = subprocess.run([sys.executable, "-m", "symdyn.cli", "demo", "--model", spec,
                        "--repeat", "2"], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    if spec.endswith(":symbolic"):
        assert "M = crba(q)" in r.stdout and "operations" in r.stdout
        return
    assert "evaluate at numbers" in r.stdout and "note: sympy evaluated" in r.stdout
    diffs = re.findall(r"agree with numpy to max \|diff\| = (\S+)", r.stdout)
    assert len(diffs) == 2 and all(float(d) < 1e-8 for d in diffs), r.stdout


def test_demo_symbolic_model(capsys):
    assert cli.main(["demo", "--model", "planar:2:symbolic"]) == 0
    out = capsys.readouterr().out
    assert "M[1,1] = I2 + lc2**2*m2" in out


@pytest.mark.parametrize("argv,msg", [
    (["demo", "--model", "nosuch:3"], "unknown model spec 'nosuch:3'"),
    (["demo", "--model", "serial:x"], "N must be a positive integer"),
    (["demo", "--model", "missing.urdf"], "missing.urdf"),
    (["demo", "--backends", "jax"], "unknown backend 'jax'"),
    (["demo", "--backends", ""], "--backends needs at least one backend"),
    (["demo", "--backends", " , "], "--backends needs at least one backend"),
    (["demo", "--backends", "numpy,,casadi"], "empty backend name"),
    (["demo", "--backends", "numpy,numpy"], "'numpy' is listed twice"),
    (["demo", "--model", "serial:3:seed=1:seed=2"], "option 'seed' is given twice"),
    (["demo", "--model", "quadruped:4:floating:floating"], "option 'floating' is given twice"),
    (["demo", "--model", "serial:3:"], "empty option"),
    (["demo", "--model", "serial:3:lock=link1_joint:lock=link2_joint"],
     "option 'lock' is given twice"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, msg):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("symdyn demo: error: ") and msg in err[0]


def test_usage_errors_exit_2(capsys):
    assert cli.main(["demo", "--repeat", "0"]) == 2
    assert "positive integer" in capsys.readouterr().err
    assert cli.main(["frobnicate"]) == 2


def test_subcommand_registration(monkeypatch, capsys, tmp_path):
    mod = tmp_path / "symdyn_test_plugin.py"
    mod.write_text("def register(sub):\n"
                   "    p = sub.add_parser('hello', help='say hello')\n"
                   "    p.set_defaults(func=lambda args: print('hello from plugin') or 0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "_SUBCOMMANDS", cli._SUBCOMMANDS + ("symdyn_test_plugin",))
    assert cli.main(["hello"]) == 0
    assert "hello from plugin" in capsys.readouterr().out


def test_registered_subcommand_modules_import():
    for name in cli._SUBCOMMANDS:
        __import__(name)


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "symdyn.cli", "demo", "--model", "bad:1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr


# --- errors raised inside subcommands (issue 12): one line, exit code 2, no traceback -------------

def _one_error_line(capsys, prefix):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    return lines[0]


@pytest.mark.parametrize("extra,msg", [
    (["--algorithms", "bogus"], "unknown algorithm 'bogus'"),
    (["--algorithms", "rnea", "--option", "foo=bar"], "foo"),          # TypeError in codegen
    (["--algorithms", "rnea", "--option", "novalue"], "KEY=VALUE"),
    (["--algorithms", "rnea,rnea"], "twice"),
    (["--algorithms", "frame_jacobian", "--option", "frame=nope"], "no frame or joint named 'nope'"),
    (["--algorithms", "frame_jacobian", "--option", "frame=link1,nope"], "frame=nope"),
])
def test_codegen_errors_are_one_line(capsys, tmp_path, extra, msg):
    assert cli.main(["codegen", "serial:2", "--out", str(tmp_path / "x"), "--quiet", *extra]) == 2
    assert msg in _one_error_line(capsys, "symdyn codegen: error: ")


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="needs a C compiler")
def test_codegen_compile_failure_is_one_line_with_the_compiler_error(capsys, tmp_path):
    argv = ["codegen", "serial:1", "--algorithms", "rnea", "--compile", "--quiet",
            "--cflags=-fno-such-flag-xyz", "--out", str(tmp_path / "x")]
    assert cli.main(argv) == 2
    line = _one_error_line(capsys, "symdyn codegen: error: ")
    assert "compilation failed" in line and "no-such-flag-xyz" in line and "--traceback" in line


def test_codegen_error_in_a_subprocess_has_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "symdyn.cli", "codegen", "serial:2", "--algorithms",
                        "rnea", "--option", "foo=bar", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "symdyn codegen: error: option(s) foo are accepted by none of rnea"]


@pytest.mark.parametrize("argv,prefix", [
    (["christoffel", "nonsense:3", "--symbolic"], "symdyn christoffel: error: unknown model spec"),
    (["mass-matrix", "serial:2", "--parameters", "inertial"],
     "symdyn mass-matrix: error: --parameters inertial needs --symbolic"),
    (["mass-matrix", "serial:2", "--structured"], "symdyn mass-matrix: error: --structured needs"),
    (["christoffel", "serial:2", "--method", "eq4"], "symdyn christoffel: error: --method eq4 needs"),
    (["coriolis", "serial:2", "--symbolic", "--method", "eq4"],
     "symdyn coriolis: error: --method eq4 applies to christoffel only"),
    (["mass-matrix", "planar:2", "--q", "1,x"], "symdyn mass-matrix: error: --q must be"),
    (["demo", "--model", "serial:2:joint=bogus"], "symdyn demo: error: model spec"),
])
def test_every_subcommand_reports_user_errors_in_one_line(capsys, argv, prefix):
    assert cli.main(argv) == 2
    _one_error_line(capsys, prefix)


def _plugin(monkeypatch, tmp_path, body):
    name = f"symdyn_err_plugin_{tmp_path.name}"   # a fresh module per test
    mod = tmp_path / f"{name}.py"
    mod.write_text("def register(sub):\n"
                   "    p = sub.add_parser('boom')\n"
                   f"    p.set_defaults(func=lambda args: {body})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "_SUBCOMMANDS", cli._SUBCOMMANDS + (name,))


def test_bugs_are_not_hidden(monkeypatch, tmp_path):
    """Only the user-error types become one line; a KeyError is a bug and keeps its traceback."""
    _plugin(monkeypatch, tmp_path, "{}['missing']")
    with pytest.raises(KeyError):
        cli.main(["boom"])


def test_traceback_flag_reraises_user_errors(monkeypatch, tmp_path, capsys):
    _plugin(monkeypatch, tmp_path, "int('x')")
    assert cli.main(["boom"]) == 2
    assert "invalid literal" in _one_error_line(capsys, "symdyn boom: error: ")
    with pytest.raises(ValueError, match="invalid literal"):
        cli.main(["--traceback", "boom"])


def test_keyboard_interrupt_exits_130(monkeypatch, tmp_path, capsys):
    _plugin(monkeypatch, tmp_path, "(_ for _ in ()).throw(KeyboardInterrupt())")
    assert cli.main(["boom"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_error_line_of_a_multiline_message():
    from symdyn.codegen import BuildError

    exc = BuildError("compilation failed: cc -c a.c\na.c: In function 'f':\n"
                     "a.c:3:1: error: expected ';' before '}' token\n  3 | }\n")
    line = cli.error_line(exc)
    assert "\n" not in line
    assert line.startswith("compilation failed: cc -c a.c: a.c:3:1: error: expected ';'")
    assert cli._is_user_error(exc) and not cli._is_user_error(RuntimeError("bug"))
    assert cli.error_line(ValueError("")) == "ValueError"
    assert len(cli.error_line(ValueError("x" * 5000))) <= cli._MAX_MESSAGE
