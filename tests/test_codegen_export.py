"""The exported C where CasADi users use it (symdyn/codegen/generate.py, cli.py, csource.py):

* ``symdyn codegen`` exports the derivative entry points that ``casadi.external`` looks up
  (``jac_F``, ``fwd1_F``, ``adj1_F``, ``fwd1_adj1_F``, ``adj1_adj1_F``): the external function's
  Jacobian matches finite differences of the function itself (outputs in row-major order, the
  emission permutation undone), and ipopt solves a problem through it with exact Hessians;
* the build command in the generated main.c's comment builds the example.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest

import symdyn as sd
from symdyn.io.specs import from_spec
from symdyn.cli.codegen import register  # noqa: F401  (the subcommand exists)
from symdyn.codegen.generate import check_derivatives, derivative_functions, generate_sources

ca = pytest.importorskip("casadi")

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``symdyn codegen serial:3 --algorithms aba,crba --compile`` (default derivatives)."""
    from symdyn.cli import main

    out = tmp_path_factory.mktemp("export")
    assert main(["codegen", "serial:3", "--algorithms", "aba,crba", "--out", str(out),
                 "--compile", "--quiet", "--opt", "O1"]) == 0
    lib = next(out.glob("libserial3-*.so"))
    return out, str(lib), from_spec("serial:3")


def _fd_jacobian(fn, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        cols.append((np.asarray(fn(x + e)).ravel() - np.asarray(fn(x - e)).ravel()) / (2 * h))
    return np.stack(cols, axis=1)


def test_external_jacobian_matches_finite_differences(exported):
    out, lib, model = exported
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    crba = ca.external("serial3_crba", lib)
    # the primal is CasADi's own function, row-major M
    M = np.asarray(crba(q)).reshape(3, 3)
    np.testing.assert_allclose(M, sd.crba(model, q), atol=1e-12)
    jac = crba.jacobian()
    assert jac.name() == "jac_serial3_crba"
    J = np.asarray(ca.densify(jac(q, crba(q))))
    np.testing.assert_allclose(J, _fd_jacobian(lambda x: np.asarray(crba(x)), q), atol=1e-7)
    aba = ca.external("serial3_aba", lib)
    x = ca.MX.sym("x", 3)
    dq = ca.Function("dq", [x], [ca.jacobian(aba(x, qd, tau), x)])      # through fwd1_/adj1_
    np.testing.assert_allclose(np.asarray(dq(q)), _fd_jacobian(
        lambda y: sd.aba(model, y, qd, tau), q), atol=1e-6)


def test_ipopt_solves_through_the_external_function(exported):
    """min |tau|^2 s.t. aba(q0, qd0, tau) = a: tau = rnea(q0, qd0, a), with ipopt's default
    exact Hessian (needs the second-order entry points)."""
    out, lib, model = exported
    aba = ca.external("serial3_aba", lib)
    q0, qd0, a = np.array([0.3, -0.5, 0.8]), np.array([0.1, 0.2, -0.3]), np.array([1., -2., .5])
    tau = ca.MX.sym("tau", 3)
    nlp = {"x": tau, "f": ca.sumsqr(tau), "g": aba(q0, qd0, tau) - a}
    solver = ca.nlpsol("s", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": 0,
                                           "ipopt.sb": "yes"})
    res = solver(x0=np.zeros(3), lbg=0, ubg=0)
    assert solver.stats()["success"], solver.stats()["return_status"]
    np.testing.assert_allclose(np.asarray(res["x"]).ravel(), sd.rnea(model, q0, qd0, a),
                               atol=1e-6)


def test_first_order_only_export_has_no_second_order(tmp_path):
    model = from_spec("serial:2")
    m = generate_sources(model, ["rnea"], tmp_path, cse=True, derivatives=1)
    der = m["functions"][0]["derivatives"]
    assert der["functions"] == ["jac_serial2_rnea", "fwd1_serial2_rnea", "adj1_serial2_rnea"]
    text = (tmp_path / der["source"]).read_text()
    assert "fwd1_adj1_serial2_rnea" not in text and "jac_serial2_rnea" in text
    m0 = generate_sources(model, ["rnea"], tmp_path / "none", derivatives=0)
    assert "derivatives" not in m0["functions"][0]


def test_derivative_functions_undo_the_emission_order():
    from symdyn.codegen.functions import casadi_function

    model = from_spec("serial:3")
    info: dict = {}
    f = casadi_function(model, "crba", name="m_crba", layout="numpy", info=info, emit_order=True)
    assert info["orders"][0] is not None and info["orders"][0] != sorted(info["orders"][0])
    jac = derivative_functions(f, info["orders"], 1)[0]
    q = np.array([0.2, -0.4, 0.9])
    J = np.asarray(ca.densify(jac(q, 0)))
    np.testing.assert_allclose(J, _fd_jacobian(lambda x: sd.crba(model, x), q), atol=1e-7)


@pytest.mark.parametrize("bad, exc", [(3, ValueError), (-1, ValueError), (True, TypeError),
                                      ("2", TypeError), (1.0, TypeError)])
def test_derivatives_level_checked(bad, exc, tmp_path):
    with pytest.raises(exc, match="derivatives"):
        check_derivatives(bad)
    with pytest.raises(exc, match="derivatives"):
        generate_sources(from_spec("serial:2"), ["rnea"], tmp_path, derivatives=bad)


def test_cli_rejects_bad_derivatives_level(tmp_path, capsys):
    from symdyn.cli import main

    assert main(["codegen", "serial:2", "--out", str(tmp_path), "--derivatives", "5"]) == 2
    assert "--derivatives" in capsys.readouterr().err


def test_main_c_build_command_builds(tmp_path):
    """The command in main.c's comment, run as written in the build directory, compiles the
    example, which prints the same values as the Python build."""
    model = from_spec("serial:2")
    m = generate_sources(model, ["rnea", "crba"], tmp_path, derivatives=1)
    comment = re.search(r"^ \*   (cc .*)$", (tmp_path / "main.c").read_text(), re.M)
    assert comment, "main.c names no build command"
    cmd = shlex.split(comment.group(1))
    if shutil.which(cmd[0]) is None:
        cmd[0] = shutil.which("gcc") or "gcc"
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    run = subprocess.run(["./example"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    values = {}
    for line in run.stdout.splitlines():
        alg, name, i, v = line.split()
        values.setdefault((alg, name), []).append(float(v))
    ins = m["example_inputs"]
    np.testing.assert_allclose(values[("crba", "M")], sd.crba(model, ins["q"]).ravel(),
                               atol=1e-12)
    np.testing.assert_allclose(values[("rnea", "tau")],
                               sd.rnea(model, ins["q"], ins["qd"], ins["qdd"]), atol=1e-12)
