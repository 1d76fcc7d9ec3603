"""Structured closed forms of real arms (issue 14, item 4): definitions in recursion order, then
entries; values equal NumPy, operation counts within 1.5x the CasADi graph, regressor form linear
in the inertial parameters, exports (Python, C, LaTeX) and the CLI."""
from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn import symbolic as S
from symdyn.algorithms.regressors import joint_torque_regressor
from symdyn.cli import main
from symdyn.models import planar_chain
from symdyn.identification.parameters import inertial_parameters, with_inertial_parameters
from symdyn.symbolic import structured as st

PANDA_LOCK = ["panda_finger_joint1", "panda_finger_joint2"]


@pytest.fixture(scope="module")
def ur5():
    return sd.load_robot("ur5")


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max()))


def _numeric(model, kind, q, qd):
    if kind == "christoffel":
        return sd.christoffel(model, q)
    if kind == "mass_matrix":
        return sd.crba(model, q)
    return sd.coriolis_matrix(model, q, qd)[2]


@pytest.mark.parametrize("kind", ["christoffel", "mass_matrix", "coriolis_matrix"])
def test_ur5_values_and_size(ur5, kind):
    res = st.structured(ur5, kind)
    assert isinstance(res, st.StructuredResult)
    assert res.operations <= 1.5 * res.casadi_instructions
    # definitions come before their use, each in terms of inputs and earlier names only
    known = set(res.q) | set(res.qd)
    for sym, e in res.definitions:
        assert e.free_symbols <= known, sym
        known.add(sym)
    for e in res.entries.values():
        assert e.free_symbols <= known
    f = res.lambdify()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = ur5.random_q(rng), rng.uniform(-3, 3, ur5.nv)
        got = f(q, qd) if kind == "coriolis_matrix" else f(q)
        assert _rel(got, _numeric(ur5, kind, q, qd)) < 1e-10


@pytest.mark.parametrize("spec", ["quadruped:4:floating", "random:4:seed=3"])
def test_floating_base_and_random_geometry(spec):
    """Generalized speeds (floating base: Gamma not symmetric in j, k) and random geometry."""
    from symdyn.io.specs import from_spec

    model = from_spec(spec)
    rng = np.random.default_rng(4)
    for kind in ("christoffel", "coriolis_matrix"):
        res = st.structured(model, kind)
        q, qd = model.random_q(rng), rng.normal(size=model.nv)
        got = res.evaluate(q, qd) if kind == "coriolis_matrix" else res.evaluate(q)
        assert _rel(got, _numeric(model, kind, q, qd)) < 1e-10


def test_structured_through_the_core_api(ur5):
    res = S.christoffel(ur5, structured=True)
    assert isinstance(res, S.StructuredResult) and res.symmetric_jk
    assert res.shape == (6, 6, 6) and all(j <= k for _, j, k in res.entries)
    with pytest.raises(ValueError, match="Algorithm 2"):
        S.christoffel(ur5, structured=True, method="eq4")
    with pytest.raises(ValueError, match="numeric model parameters"):
        st.mass_matrix("planar:2:symbolic")


@pytest.mark.parametrize("kind", ["mass_matrix", "christoffel"])
def test_small_model_equals_the_flat_closed_form(kind):
    """On a model small enough to expand, the structured form with every definition substituted
    has the canonical normal form of the flat closed form (up to float rounding of constants)."""
    model = planar_chain(3)
    flat = getattr(S, kind)(model)
    expanded = getattr(st, kind)(model).flat_entries()
    q = flat.q
    for key in set(flat.entries) | set(expanded):
        d = S.trig_normal_form(sp.sympify(expanded.get(key, 0)) - flat.entries.get(key, 0), q)
        coeffs = [abs(float(t.as_coeff_Mul()[0])) for t in sp.Add.make_args(d) if t != 0]
        assert max(coeffs, default=0.0) < 1e-12, (key, d)


def test_panda_christoffel_within_targets():
    """Issue 14: closed-form Gamma of the Panda (fingers locked): values equal NumPy, operations
    <= 1.5x the CasADi graph (the time target is measured in experiments/closed_forms.py)."""
    panda = sd.load_robot("panda", lock=PANDA_LOCK)
    res = st.christoffel(panda)
    assert panda.nv == 7 and res.operations <= 1.5 * res.casadi_instructions
    f = res.lambdify()
    rng = np.random.default_rng(0)
    for _ in range(2):
        q = panda.random_q(rng)
        assert _rel(f(q), sd.christoffel(panda, q)) < 1e-10


def test_regressor_closed_form(ur5):
    """Y(q, qd, qdd) with tau = Y pi: equals the NumPy regressor and gives rnea."""
    Y = st.regressor(ur5)
    assert Y.shape == (6, 60) and not Y.params
    f = Y.lambdify()
    rng = np.random.default_rng(1)
    pi = inertial_parameters(ur5)
    for _ in range(2):
        q, qd, qdd = ur5.random_q(rng), rng.normal(size=6), rng.normal(size=6)
        got = f(q, qd, qdd)
        assert _rel(got, joint_torque_regressor(ur5, q, qd, qdd)) < 1e-10
        assert _rel(got @ pi, sd.rnea(ur5, q, qd, qdd)) < 1e-10


def test_inertial_parameters_give_linear_entries(ur5):
    """parameters='inertial': every entry is sum_p Y_p(q) pi_p, homogeneous linear in pi, and
    evaluates to M of the model with those parameters."""
    res = S.mass_matrix(ur5, structured=True, parameters="inertial")
    pi = res.params
    assert len(pi) == 60
    for sym, e in res.definitions:
        assert not (e.free_symbols & set(pi)), sym
    for e in res.entries.values():
        for term in sp.Add.make_args(e):
            assert sum(sp.degree(term, p) for p in pi if term.has(p)) == 1, term
    f = res.lambdify()
    rng = np.random.default_rng(2)
    q = ur5.random_q(rng)
    p0 = inertial_parameters(ur5)
    assert _rel(f(q, p0), sd.crba(ur5, q)) < 1e-10
    p1 = p0 * np.repeat(rng.uniform(0.5, 1.5, ur5.N), 10)   # each body scaled: still physical
    p2 = rng.normal(size=p0.size)
    assert _rel(f(q, 2 * p1 - 3 * p2), 2 * f(q, p1) - 3 * f(q, p2)) < 1e-10
    other = with_inertial_parameters(ur5, p1)
    assert _rel(f(q, p1), sd.crba(other, q)) < 1e-10


def test_exports(ur5, tmp_path):
    res = st.christoffel(ur5)
    tex = S.to_latex(res)
    assert r"\subsection*{Definitions}" in tex and r"\subsection*{Entries}" in tex
    assert tex.index("Definitions") < tex.index("Entries") and r"s_{2} &=" in tex
    src = S.to_python(res, "gamma")
    spec = importlib.util.spec_from_loader("gamma_mod", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(src, mod.__dict__)
    q = ur5.random_q(5)
    assert _rel(mod.gamma(q), sd.christoffel(ur5, q)) < 1e-10
    with pytest.raises(ValueError, match="q must hold 6"):
        mod.gamma(q[:3])
    with pytest.raises(ValueError, match="math.h"):
        S.to_c(res, "gamma")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "g.c").write_text(S.to_c(res, "gamma_ur5"))
    lib = tmp_path / "libg.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "g.c"), "-lm"],
                   check=True)
    so = ctypes.CDLL(str(lib))
    out = np.zeros(216)
    qa = np.ascontiguousarray(q, dtype=float)
    so.gamma_ur5(qa.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
    assert _rel(out.reshape(6, 6, 6), sd.christoffel(ur5, q)) < 1e-10


def test_cli_structured_default_and_progress(tmp_path, capsys):
    out = tmp_path / "g.py"
    assert main(["christoffel", "robot:ur5", "--symbolic", "--format", "python",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "structured" in err and "CasADi instructions" in err and "definitions" in err
    ns: dict = {}
    exec(out.read_text(), ns)
    m = sd.load_robot("ur5")
    q = m.random_q(1)
    assert _rel(ns["christoffel"](q), sd.christoffel(m, q)) < 1e-10
    # small models keep the flat form unless asked
    assert main(["mass-matrix", "planar:2", "--symbolic", "--quiet", "--structured",
                 "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("<StructuredResult mass_matrix") and "c2 = cos(q2)" in text
    assert main(["mass-matrix", "planar:2", "--symbolic", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("<SymbolicResult")
    assert main(["mass-matrix", "planar:2", "--symbolic", "--quiet", "--symbolic-params",
                 "--structured"]) == 2
