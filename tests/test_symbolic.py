"""Closed-form output (issue 6): textbook anchors, Algorithm 2 == eq. (4) exactly, simplification
normal form, generated LaTeX/Python/C, CLI round trip."""
from __future__ import annotations

import ctypes
import importlib.util
import re
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn import symbolic as S
from symdyn.algorithms.christoffel import christoffel as christoffel_numeric
from symdyn.algorithms.coriolis import coriolis_matrix as coriolis_numeric
from symdyn.cli import main
from symdyn.models import planar_chain
from symdyn.symbolic.core import symbolize_inertias

ENGINES = ["sympy", "symengine"]


@pytest.fixture(scope="module")
def two_link():
    return planar_chain(2, symbolic_params=True)


def _values(res, rng=None):
    rng = np.random.default_rng(rng)
    return {s: float(rng.uniform(0.5, 2.0)) for s in res.params}


@pytest.mark.parametrize("engine", ENGINES)
def test_two_link_textbook_closed_form(two_link, engine):
    """Spong's two-link arm: Gamma built from h = -m2 l1 lc2 sin q2."""
    m1, m2, l1, lc1, lc2, I1, I2 = sp.symbols("m1 m2 l1 lc1 lc2 I1 I2", positive=True)
    res = S.christoffel(two_link, engine=engine)
    q1, q2 = res.q
    h = -m2 * l1 * lc2 * sp.sin(q2)
    expected = {(0, 0, 1): h, (0, 1, 1): h, (1, 0, 0): -h}  # j <= k stored, Gamma_ijk = Gamma_ikj
    G = res.full()
    for i in range(2):
        for j in range(2):
            for k in range(2):
                want = expected.get((i, min(j, k), max(j, k)), 0)
                assert sp.simplify(G[i, j, k] - want) == 0, (i, j, k, G[i, j, k])
    M = S.mass_matrix(two_link, engine=engine).full()
    M11 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * sp.cos(q2)) + I1 + I2
    M12 = m2 * (lc2**2 + l1 * lc2 * sp.cos(q2)) + I2
    M22 = m2 * lc2**2 + I2
    assert sp.simplify(M - sp.Matrix([[M11, M12], [M12, M22]])) == sp.zeros(2, 2)
    C = S.coriolis_matrix(two_link, engine=engine).full()
    qd1, qd2 = res.qd
    assert sp.simplify(C - sp.Matrix([[h * qd2, h * (qd1 + qd2)], [-h * qd1, 0]])) == sp.zeros(2, 2)


def _spatial_chain_3dof():
    """A spatial 3-DoF chain (axes z, y, x; exact offsets) with symbolic inertial parameters."""
    axes, offsets = ["z", "y", "x"], [(0, 0, 0), (0, 0, 0.5), (1, 0, 0.25)]
    bodies = [sd.Body(f"b{i + 1}", None if i == 0 else f"b{i}", sd.Revolute(ax), 1.0, (0.1, 0.2, 0.3),
                      np.diag([0.3, 0.4, 0.5]), sd.Transform(np.eye(3), np.array(off, float)))
              for i, (ax, off) in enumerate(zip(axes, offsets))]
    return symbolize_inertias(sd.Model(bodies, name="spatial3"))


@pytest.mark.parametrize("engine", ENGINES)
def test_algorithm2_equals_eq4_exactly_spatial_chain(engine):
    model = _spatial_chain_3dof()
    assert model.is_symbolic and len(model.parameters()) == 30
    a2 = S.christoffel(model, method="algorithm2", engine=engine)
    e4 = S.christoffel(model, method="eq4", engine=engine)
    keys = set(a2.entries) | set(e4.entries)
    assert keys, "no nonzero symbols"
    for key in keys:
        assert S.equal(a2.entries.get(key, 0), e4.entries.get(key, 0), a2.q), key
    # normal forms are canonical: equal results print identically
    assert a2.entries == e4.entries


def test_normal_form_identities():
    q1, q2, q3, a = sp.symbols("q1 q2 q3 a", real=True)
    q = [q1, q2, q3]
    nf = S.trig_normal_form
    assert nf(sp.sin(q1) ** 2 + sp.cos(q1) ** 2, q) == 1
    assert nf(sp.cos(q1) * sp.cos(q2) - sp.sin(q1) * sp.sin(q2), q) == sp.cos(q1 + q2)
    assert nf(2 * sp.sin(q1) * sp.cos(q1), q) == sp.sin(2 * q1)
    assert nf(sp.sin(q1 + q2 - q3) - (sp.sin(q1 + q2) * sp.cos(q3) - sp.cos(q1 + q2) * sp.sin(q3)), q) == 0
    assert S.equal(a * sp.cos(q2) ** 2, a / 2 + a * sp.cos(2 * q2) / 2, q)
    assert not S.equal(a * sp.cos(q2), a * sp.sin(q2), q)
    # prismatic-style polynomial appearances of q and non-polynomial parts are kept exactly
    assert sp.simplify(nf(q1 * sp.sin(q2) + a / q3, q) - (q1 * sp.sin(q2) + a / q3)) == 0


def test_simplification_shrinks_and_matches_numbers():
    model = planar_chain(4, symbolic_params=True)
    raw = S.mass_matrix(model, simplify=False, measure=True)
    simp = S.mass_matrix(model, measure=True)
    assert simp.operations < raw.ops_raw
    assert simp.cse_operations() <= simp.operations
    vals = _values(simp, 1)
    num = model.subs(vals)
    q = np.random.default_rng(2).uniform(0, 2 * np.pi, 4)
    f = S.lambdify(simp)
    assert np.allclose(f(q, [vals[s] for s in simp.params]), sd.crba(num, q), atol=1e-12)


@pytest.fixture(scope="module")
def planar3_results():
    model = planar_chain(3, symbolic_params=True)
    return model, S.christoffel(model), S.coriolis_matrix(model)


def test_generated_python_matches_numpy(planar3_results, tmp_path):
    model, G, C = planar3_results
    vals = _values(G, 3)
    p = [vals[s] for s in G.params]
    num = model.subs(vals)
    rng = np.random.default_rng(4)
    q, qd = rng.uniform(0, 2 * np.pi, 3), rng.uniform(0, 10, 3)
    path = tmp_path / "gamma_mod.py"
    path.write_text(S.to_python(G, "gamma"))
    spec = importlib.util.spec_from_file_location("gamma_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert np.allclose(mod.gamma(q, p), christoffel_numeric(num, q), atol=1e-12)
    Cf = S.lambdify(C)
    assert np.allclose(Cf(q, qd, [vals[s] for s in C.params]), coriolis_numeric(num, q, qd)[2], atol=1e-11)
    with pytest.raises(ValueError, match="parameters"):
        mod.gamma(q)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_generated_c_matches_numpy(planar3_results, tmp_path):
    model, G, _ = planar3_results
    src = tmp_path / "gamma.c"
    src.write_text(S.to_c(G, "gamma3"))
    lib = tmp_path / "libgamma.so"
    subprocess.run(["gcc", "-O1", "-Wall", "-Werror", "-shared", "-fPIC", str(src), "-o", str(lib), "-lm"],
                   check=True, capture_output=True)
    fn = ctypes.CDLL(str(lib)).gamma3
    vals = _values(G, 5)
    p = np.array([vals[s] for s in G.params])
    q = np.random.default_rng(6).uniform(0, 2 * np.pi, 3)
    out = np.full(27, np.nan)
    dp = ctypes.POINTER(ctypes.c_double)
    fn(q.ctypes.data_as(dp), p.ctypes.data_as(dp), out.ctypes.data_as(dp))
    assert np.allclose(out.reshape(3, 3, 3), christoffel_numeric(model.subs(vals), q), atol=1e-12)


def _check_latex(tex: str, res) -> None:
    assert tex.count("{") == tex.count("}")
    for env in ("document", "align*"):
        assert tex.count(rf"\begin{{{env}}}") == tex.count(rf"\end{{{env}}}") >= 1
    # every symbol in the entries is a coordinate, a speed or a listed parameter
    allowed = set(res.q) | set(res.qd) | set(res.params)
    for e in res.entries.values():
        assert e.free_symbols <= allowed


def test_latex_document(planar3_results):
    _, G, C = planar3_results
    tex = S.to_latex(G)
    _check_latex(tex, G)
    assert r"\Gamma_{1,1,2} = \Gamma_{1,2,1}" in tex and r"C^\star_{1,1}" in tex
    assert tex.count(r"\Gamma_{") >= len(G.entries)
    _check_latex(S.to_latex(C), C)
    if shutil.which("pdflatex"):
        pytest.skip("pdflatex present: compile check is done in test_latex_compiles")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no LaTeX installed")
def test_latex_compiles(planar3_results, tmp_path):
    _, G, _ = planar3_results
    (tmp_path / "g.tex").write_text(S.to_latex(G))
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "g.tex"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "g.py"
    assert main(["christoffel", "planar:2", "--symbolic", "--symbolic-params", "--format", "python",
                 "--out", str(out)]) == 0
    spec = importlib.util.spec_from_file_location("g_cli", out)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = re.search(r"Parameters p \(in order\): (.*)\.", out.read_text()).group(1).split(", ")
    model = planar_chain(2, symbolic_params=True)
    syms = {s.name: s for s in model.parameters()}
    vals = {syms[n]: v for n, v in zip(names, np.linspace(0.5, 1.7, len(names)))}
    q = np.array([0.3, 1.1])
    assert np.allclose(mod.christoffel(q, [vals[syms[n]] for n in names]),
                       christoffel_numeric(model.subs(vals), q), atol=1e-12)
    tex = tmp_path / "g.tex"
    assert main(["christoffel", "planar:2", "--symbolic", "--symbolic-params", "--format", "latex",
                 "--out", str(tex)]) == 0
    assert r"\begin{document}" in tex.read_text()
    assert main(["mass-matrix", "planar:2", "--symbolic", "--format", "c"]) == 0
    assert "void mass_matrix(" in capsys.readouterr().out


def test_cli_errors(capsys):
    assert main(["christoffel", "nonsense:3", "--symbolic"]) == 2
    assert main(["christoffel", "planar:2", "--symbolic-params", "--format", "text"]) == 2
    assert "numeric mode" in capsys.readouterr().err


def test_bad_method():
    with pytest.raises(ValueError, match="unknown method"):
        S.christoffel(planar_chain(2, symbolic_params=True), method="magic")


# --- bad input and progress (issue 12) -------------------------------------------------------------

@pytest.mark.parametrize("fn", [S.christoffel, S.coriolis_matrix, S.mass_matrix, S.symbolize_inertias])
@pytest.mark.parametrize("bad", [None, 42, ["planar", 2]])
def test_non_model_is_a_clear_type_error(fn, bad):
    with pytest.raises(TypeError, match=r"expected a symdyn Model .* or a model spec string"):
        fn(bad)


def test_spec_string_is_accepted_as_a_model(two_link):
    by_spec = S.mass_matrix("planar:2:symbolic")
    assert by_spec.entries == S.mass_matrix(two_link).entries
    assert by_spec.model_name == two_link.name
    from symdyn.io.specs import SpecError

    with pytest.raises(SpecError, match="unknown model spec 'nosuch:2'"):
        S.christoffel("nosuch:2")


def test_generated_code_renames_names_it_cannot_use(tmp_path):
    """Parameters named like a Python keyword or a math.h function are renamed in the generated
    code, and a C function may not take a math.h name (flat results as structured ones)."""
    q1, lam, gam = sp.symbols("q1 lambda gamma", real=True)
    res = S.SymbolicResult("mass_matrix", "toy", (1, 1), {(0, 0): lam * sp.cos(q1) ** 2 + gam},
                           [q1], [], [lam, gam], symmetric=True)
    expected = 2.0 * np.cos(0.3) ** 2 + 3.0
    ns: dict = {}
    exec(S.to_python(res, "m"), ns)
    assert np.isclose(ns["m"]([0.3], [2.0, 3.0])[0, 0], expected, rtol=1e-15)
    src = S.to_c(res, "toy_m")
    assert "const double s_gamma = p[1];" in src and "cos(q1)*cos(q1)" in src
    with pytest.raises(ValueError, match="math.h"):
        S.to_c(res, "sin")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "m.c").write_text(src)
    lib = tmp_path / "libm_toy.so"
    subprocess.run([cc, "-O1", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib),
                    str(tmp_path / "m.c"), "-lm"], check=True, capture_output=True)
    out, dp = np.zeros(1), ctypes.POINTER(ctypes.c_double)
    q, p = np.array([0.3]), np.array([2.0, 3.0])
    ctypes.CDLL(str(lib)).toy_m(q.ctypes.data_as(dp), p.ctypes.data_as(dp), out.ctypes.data_as(dp))
    assert np.isclose(out[0], expected, rtol=1e-15)


@pytest.mark.parametrize("fn", [S.to_latex, S.to_python, S.to_c, S.lambdify,
                                S.coriolis_from_christoffel])
def test_exporters_need_a_symbolic_result(fn, two_link):
    with pytest.raises(TypeError, match="expected a SymbolicResult"):
        fn(two_link)
    with pytest.raises(TypeError, match="expected a SymbolicResult .* got NoneType"):
        fn(None)


def test_lambdify_checks_its_arguments(planar3_results):
    model, G, C = planar3_results
    p = np.ones(len(G.params))
    q = np.array([0.1, 0.2, 0.3])
    g, c = S.lambdify(G), S.lambdify(C)
    assert g(q, p).shape == (3, 3, 3) and c(q, q, p).shape == (3, 3)
    assert np.allclose(g(q.reshape(3, 1), list(p)), g(q, p))       # any array-like of 3 numbers
    with pytest.raises(ValueError, match=r"q must hold 3 values \(the joint coordinates\), got 4"):
        g(np.zeros(4), p)          # used to ignore the 4th value silently
    with pytest.raises(ValueError, match="q must hold 3 values .* got 2"):
        g(np.zeros(2), p)
    with pytest.raises(ValueError, match=rf"p must hold {len(p)} values \(the parameters I1"):
        g(q, p[:-1])
    with pytest.raises(ValueError, match="qd must hold 3 values .* got 1"):
        c(q, [1.0], p)
    with pytest.raises(ValueError, match="q must be 3 numbers"):
        g(["a", "b", "c"], p)
    with pytest.raises(TypeError, match=rf"f\(q, p\) takes q \(3 joint coordinates\), "
                                        rf"p \({len(p)} parameters: I1"):
        g(q, p, p)
    with pytest.raises(TypeError, match=r"f\(q, qd, p\) takes q \(3 joint coordinates\), "
                                        r"qd \(3 joint velocities\)"):
        c(q, p=p)
    numeric = S.lambdify(S.mass_matrix(planar_chain(2)))
    assert numeric([0.1, 0.2]).shape == (2, 2)
    with pytest.raises(ValueError, match="no parameters"):
        numeric([0.1, 0.2], [1.0])


def test_full_holds_sympy_objects(planar3_results):
    _, G, C = planar3_results
    for res in (G, C):
        F = res.full()
        elements = list(F) if isinstance(F, sp.MatrixBase) else sp.flatten(F.tolist())
        assert len(elements) == np.prod(res.shape)
        assert all(isinstance(x, sp.Basic) for x in elements)
        assert F.free_symbols <= set(res.q) | set(res.qd) | set(res.params)
        assert F.free_symbols                       # used to fail on the Python-int zeros
    made = S.SymbolicResult("christoffel", "by hand", (2, 2, 2), {(0, 0, 1): 3, (1, 0, 0): 0.5},
                            [], [], [])
    assert all(isinstance(e, sp.Basic) for e in made.entries.values())
    assert made.full().free_symbols == set() and made.full()[0, 0, 1] == 3


def _progress_lines(err: str) -> list[str]:
    assert "\r" not in err and "\033" not in err      # no terminal control in a log
    return err.splitlines()


def test_progress_in_a_log_is_whole_lines(capsys):
    """capsys's stderr is no TTY: one line per stage, no carriage returns."""
    S.christoffel(planar_chain(3, symbolic_params=True), progress=True)
    lines = _progress_lines(capsys.readouterr().err)
    label = "christoffel of planar3_symbolic: "
    assert all(ln.startswith(label) for ln in lines), lines
    text = [ln[len(label):] for ln in lines]
    assert text[0].startswith("building expressions (")
    assert text[1].startswith("built the expressions in ")
    assert re.fullmatch(r"simplifying \d+ entries", text[2])
    assert re.fullmatch(r"simplified (\d+)/\1 entries in [\d.]+ s", text[-1])
    S.mass_matrix(planar_chain(2), progress=False)
    assert capsys.readouterr().err == ""


def test_progress_lines_at_most_every_interval():
    import io

    from symdyn.progress import Progress

    now = [0.0]
    out = io.StringIO()
    prog = Progress("job", stream=out, interval=10.0, tty=False, clock=lambda: now[0])
    report = prog.loop("simplifying", 100)
    for k in range(1, 101):       # one entry per second: 100 s in all
        now[0] += 1.0
        report(k)
    lines = _progress_lines(out.getvalue())
    assert lines[0] == "job: simplifying 100 entries"
    assert lines[-1] == "job: simplified 100/100 entries in 100.0 s"
    middle = lines[1:-1]
    assert 8 <= len(middle) <= 10, lines               # about one per 10 s, never more
    assert middle[0] == "job: simplified 10/100 entries (10.0 s)"
    tty = io.StringIO()
    prog = Progress("job", stream=tty, tty=True, clock=lambda: now[0])
    report = prog.loop("simplifying", 3)
    for k in range(1, 4):
        now[0] += 1.0
        report(k)
    assert "\r" in tty.getvalue() and tty.getvalue().endswith("in 3.0 s\n")  # terminal: in place


def test_progress_heartbeat_during_a_long_step():
    import io
    import time

    from symdyn.progress import Progress

    out = io.StringIO()
    prog = Progress("job", stream=out, interval=0.05, tty=False)
    with prog.running("building expressions", "test"):
        time.sleep(0.4)
    lines = _progress_lines(out.getvalue())
    assert lines[0] == "job: building expressions (test)"
    assert any(re.fullmatch(r"job: still building expressions \(\d+ s\)", ln) for ln in lines[1:])
    with pytest.raises(ValueError, match="interval"):
        Progress("job", interval=-1)
    with pytest.raises(TypeError, match="progress must be"):
        S.mass_matrix(planar_chain(2), progress="yes")


def test_cli_shows_progress_unless_quiet(capsys):
    assert main(["mass-matrix", "planar:2", "--symbolic"]) == 0
    err = capsys.readouterr().err
    assert "mass_matrix of planar2: building expressions" in _progress_lines(err)[0]
    assert main(["mass-matrix", "planar:2", "--symbolic", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
