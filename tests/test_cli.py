"""The ``symdyn`` command: help, version, demo output, errors as one line with exit code 2."""
from __future__ import annotations

import re
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


def test_demo_symbolic_model(capsys):
    assert cli.main(["demo", "--model", "planar:2:symbolic"]) == 0
    out = capsys.readouterr().out
    assert "M[1,1] = I2 + lc2**2*m2" in out


@pytest.mark.parametrize("argv,msg", [
    (["demo", "--model", "nosuch:3"], "unknown model spec 'nosuch:3'"),
    (["demo", "--model", "serial:x"], "N must be a positive integer"),
    (["demo", "--model", "missing.urdf"], "missing.urdf"),
    (["demo", "--backends", "jax"], "unknown backend 'jax'"),
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
