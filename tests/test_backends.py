"""Backend resolution, native result types, backend primitives, and the import rule for
symdyn/algorithms/ (no numpy, sympy or casadi there)."""
from __future__ import annotations

import ast
import pathlib

import casadi as ca
import numpy as np
import pytest
import sympy as sp
from conftest import BACKENDS, assert_close, evaluate

import symdyn as sd
from symdyn.backends import BackendError, get_backend, resolve_backend
from symdyn.models import planar_chain, serial_chain

MODEL = serial_chain(2, seed=3)
Q = [0.3, -1.1]


def test_numpy_is_the_default():
    assert resolve_backend([0.1, 0.2], np.zeros(2), None, 1.5).name == "numpy"
    assert resolve_backend().name == "numpy"


def test_inputs_choose_the_backend():
    x = sp.symbols("x")
    assert resolve_backend(sp.Matrix([x, 1]), [0.0, 1.0]).name == "sympy"
    assert resolve_backend([x, 0.5]).name == "sympy"  # a list holding a SymPy symbol
    assert resolve_backend(ca.SX.sym("q", 2), np.ones(2)).name == "casadi"
    assert resolve_backend(ca.DM([1, 2])).name == "numpy"  # DM is numbers


@pytest.mark.parametrize("backend,cls", [("numpy", np.ndarray), ("sympy", sp.MatrixBase),
                                         ("casadi", ca.SX)])
def test_same_crba_returns_native_type(backend, cls):
    q = {"numpy": np.array(Q), "sympy": sp.Matrix(sp.symbols("q0:2")),
         "casadi": ca.SX.sym("q", 2)}[backend]
    M = sd.crba(MODEL, q)
    assert isinstance(M, cls)
    assert tuple(M.shape) == (2, 2)
    tau = sd.rnea(MODEL, q, [0.0, 0.0], [0.0, 0.0])
    assert isinstance(tau, cls)


@pytest.mark.parametrize("backend,cls", [("numpy", np.ndarray), ("sympy", sp.MatrixBase),
                                         ("casadi", ca.SX)])
def test_explicit_backend_with_numbers(backend, cls):
    M = sd.crba(MODEL, Q, backend=backend)
    assert isinstance(M, cls)
    assert_close(evaluate(M), sd.crba(MODEL, Q))


def test_mixing_sympy_and_casadi_is_refused():
    q = sp.Matrix(sp.symbols("q0:2"))
    qd = ca.SX.sym("qd", 2)
    with pytest.raises(BackendError, match="(?i)cannot mix") as err:
        sd.rnea(MODEL, q, qd, [0, 0])
    assert "sympy" in str(err.value).lower() and "casadi" in str(err.value).lower()
    with pytest.raises(BackendError, match="mixes casadi and sympy"):
        sd.crba(MODEL, [sp.Symbol("a"), ca.SX.sym("b")])


def test_casadi_mx_is_refused_clearly():
    with pytest.raises(BackendError, match="casadi.MX"):
        sd.crba(MODEL, ca.MX.sym("q", 2))


def test_explicit_backend_conflicting_with_inputs():
    with pytest.raises(BackendError, match="backend='numpy' was asked for"):
        sd.crba(MODEL, ca.SX.sym("q", 2), backend="numpy")
    with pytest.raises(BackendError, match="backend='casadi' was asked for"):
        sd.crba(MODEL, sp.Matrix(sp.symbols("q0:2")), backend="casadi")
    with pytest.raises(BackendError, match="unknown backend 'tensorflow'"):
        sd.crba(MODEL, Q, backend="tensorflow")


def test_symbolic_model_forces_sympy():
    m = planar_chain(2, symbolic_params=True)
    M = sd.crba(m, Q)
    assert isinstance(M, sp.MatrixBase) and M.free_symbols  # numbers in, parameters out
    assert isinstance(sd.crba(m, Q, backend="sympy"), sp.MatrixBase)
    for b in ("numpy", "casadi"):
        with pytest.raises(BackendError, match="SymPy parameters"):
            sd.crba(m, Q, backend=b)
    with pytest.raises(BackendError, match="cannot take CasADi"):
        sd.crba(m, ca.SX.sym("q", 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_primitives_agree(backend):
    B = get_backend(backend)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=3)
    Ab, bb = B.const(A), B.const(b)
    assert_close(evaluate(B.solve(Ab, bb)).reshape(-1), np.linalg.solve(A, b), 1e-12)
    assert_close(evaluate(B.inv(Ab)), np.linalg.inv(A), 1e-12)
    assert_close(evaluate(B.inv(B.const([[4.0]]))), [[0.25]])
    assert_close(evaluate(B.block([[Ab, B.zeros(3, 2)], [B.zeros(1, 3), B.eye(2)[0:1, :]]])),
                 np.block([[A, np.zeros((3, 2))], [np.zeros((1, 3)), np.eye(2)[:1]]]))
    v = evaluate(B.vcat([B.rows(bb, 0, 2), B.vector([1.0, 2.0])])).reshape(-1)
    assert_close(v, np.concatenate([b[:2], [1.0, 2.0]]))
    assert_close(evaluate(B.hcat([B.cols(Ab, 0, 1), B.cols(Ab, 2, 3)])), A[:, [0, 2]])
    assert_close(evaluate(B.matrix([[B.sin(0.3), B.cos(0.3)], [B.sqrt(2.0), 1]])),
                 [[np.sin(0.3), np.cos(0.3)], [np.sqrt(2), 1]])
    assert_close(evaluate(B.zeros(2)).reshape(-1), np.zeros(2))
    assert B.is_zero(B.zeros(2, 2)) and not B.is_zero(Ab)


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_vectors_validated(backend):
    B = get_backend(backend)
    with pytest.raises(ValueError, match="x must have"):
        B.to_vector([1.0, 2.0, 3.0], 2, "x")
    with pytest.raises(ValueError, match="NaN or inf"):
        B.to_vector([1.0, float("nan")], 2, "x")


ALGORITHMS = pathlib.Path(sd.__file__).parent / "algorithms"
FORBIDDEN = {"numpy", "sympy", "casadi", "symengine", "scipy"}


def test_algorithms_import_no_array_library():
    """Modules in symdyn/algorithms/ allocate only through the backend resolved at entry."""
    files = sorted(ALGORITHMS.glob("*.py"))
    assert any(f.name == "rnea.py" for f in files)
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__":
                names = [getattr(a, "value", "") for a in node.args[:1]]
            else:
                continue
            bad = [n for n in names if str(n).split(".")[0] in FORBIDDEN]
            assert not bad, f"{path.name}:{node.lineno} imports {bad}"
        text = path.read_text()
        assert "import_module(" not in text or not any(f'"{m}' in text for m in FORBIDDEN), path
