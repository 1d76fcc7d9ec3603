"""One test matrix: backends x tree kinds x algorithms, checking identities that can fail.

Backends: numpy, sympy, symengine (skipped when ``import symengine`` fails), casadi.
Tree kinds (3-5 bodies): serial (revolute), branched (revolute/prismatic/helical mix),
prismatic-heavy chain, helical chain, spherical-joint tree, floating-base tree, and a tree with
planar joints (q-dependent motion subspace, Sring != 0; generalized coordinates like 1-DoF joints).
Algorithms: rnea, crba, aba, nonlinear_effects, gravity_vector, body_jacobians, coriolis_matrix
(factorization christoffel/simple x frame body/root), christoffel, christoffel_from_mass_matrix
(eq. (4), trees without quaternion joints), rnea_derivatives, aba_derivatives (dmm and aza).

Every quantity is computed once per (backend, tree) (``results``); the symbolic backends take
symbols, are evaluated at the numeric state and (a) compared with NumPy on the same tree
(``test_symbolic_backend_equals_numpy``) and (b) put through the same identities as NumPy. The
identities are ones that can fail, not ones the code makes true by construction:

* rnea = M qdd + C qd + g with M from crba, C from coriolis_matrix (each factorization and frame)
  and g from gravity_vector; nonlinear_effects = C qd + g; aba(rnea(qdd)) = qdd;
  M symmetric positive definite and M = sum_k J_k^T I_k J_k from body_jacobians (another route).
* coriolis_matrix: M = crba; C qd = nonlinear_effects - gravity_vector; Mdot equals the time
  derivative of CRBA along (q, qd) taken independently: CasADi AD of crba traced on SX through
  ``q (+) e`` (sd.integrate), times qd; C + C^T = Mdot and Mdot - 2C skew (both hold for any
  admissible C, so they are checked for both factorizations); root frame = body frame.
* christoffel: C* = sum_k Gamma[:, :, k] qd[k]; Gamma_k + Gamma_k^T = dM/de_k, the AD derivative of
  CRBA (every tree, quaternion joints included); without quaternion joints Gamma[i, j, k] =
  Gamma[i, k, j] and Gamma equals eq. (4) formed from that AD derivative, and
  christoffel_from_mass_matrix (the library's eq. (4) route) agrees; with them Gamma is not
  symmetric.
* rnea_derivatives: dtau/dqd[i, j] = sum_k (Gamma[i, j, k] + Gamma[i, k, j]) qd[k] (= 2 C* without
  quaternion joints); dtau/dq and dtau/dqd equal CasADi AD of rnea (q in the tangent space).
* aba_derivatives (dmm, aza): Minv = inv(crba); dqdd/dq = -Minv dtau/dq and dqdd/dqd =
  -Minv dtau/dqd with the AD references, at tau = rnea(qdd), where aba = qdd.

What runs where (every algorithm runs on every backend and tree kind):

============  ===================  ==================================================
backend       trees                inputs
============  ===================  ==================================================
numpy         random geometry      numbers
symengine     random geometry      symbols for q, qd, qdd/tau
casadi        random geometry      SX symbols for q, qd, qdd/tau
sympy         simple geometry      symbols for q, qd, qdd/tau; on the spherical and
              (fewer bodies)       floating trees ABA takes numeric q and the rnea/aba
                                   derivatives take numbers for every argument
============  ===================  ==================================================

SymPy is the slow one: its expressions with random Float rotations take seconds per call, so it
runs on the deterministic builders' geometry (identity rotations, unit links) with 3-4 bodies, and
on quaternion trees the symbolic ABA and derivatives (articulated-inertia inverses of 3x3 and 6x6
symbolic blocks) would take tens of seconds, so there it runs on SymPy numbers. Random geometry
under SymPy stays in test_dynamics and test_coriolis. The references (AD derivatives of CRBA and
RNEA) are computed with CasADi at numbers on the same tree, independently of Algorithm 1,
Algorithm 2 and IDSVA. The module runs in about 35 s of CPU (SymPy about 30 s of it).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import assert_close, random_state
from matrix_support import (call, christoffel_eq4, mass_matrix_derivative, se,
                            tangent_jacobian, velocity_jacobian)

import symdyn as sd
from symdyn.models import branched_tree, random_tree, serial_chain

BACKENDS = ("numpy", "sympy", "symengine", "casadi")
FACTORIZATIONS = ("christoffel", "simple")
FRAMES = ("body", "root")
TOL = 1e-9          # symbolic evaluated at numbers vs NumPy, and every identity (relative)
AD_TOL = 1e-9       # against the CasADi AD references


def trees() -> dict:
    """Random-geometry trees for NumPy, SymEngine and CasADi."""
    return {
        "serial": serial_chain(4, seed=1),
        "branched": branched_tree(5, 2, seed=2, joint=("revolute", "prismatic", "helical")),
        "prismatic": serial_chain(4, seed=3, joint=("prismatic", "revolute", "prismatic")),
        "helical": serial_chain(4, seed=4, joint="helical"),
        "spherical": branched_tree(4, 2, seed=5, joint=("spherical", "revolute", "prismatic")),
        "floating": random_tree(4, seed=22, joint_kinds=("revolute", "helical", "spherical"),
                                floating_base=True),
        "planar": random_tree(4, seed=8, joint_kinds=("planar", "revolute", "helical")),
    }


def sympy_trees() -> dict:
    """The same kinds with simple geometry and fewer bodies for SymPy."""
    return {
        "serial": serial_chain(3),
        "branched": branched_tree(4, 2, joint=("revolute", "prismatic", "helical")),
        "prismatic": serial_chain(3, joint=("prismatic", "revolute", "prismatic")),
        "helical": serial_chain(3, joint="helical"),
        "spherical": branched_tree(3, 2, joint=("spherical", "revolute")),
        "floating": branched_tree(3, 2, joint=("floating", "revolute", "helical")),
        "planar": branched_tree(3, 2, joint=("revolute", "planar", "helical")),
    }


TREES, SYMPY_TREES = trees(), sympy_trees()
KINDS = tuple(TREES)
SYMPY_NUMERIC_Q = ("spherical", "floating")


def geometry(backend: str) -> str:
    """'simple' (SymPy's trees) or 'random' (everyone else's)."""
    return "simple" if backend == "sympy" else "random"


def tree(geom: str, kind: str):
    return (SYMPY_TREES if geom == "simple" else TREES)[kind]


def coordinates(model) -> bool:
    """Generalized coordinates with qd = dq/dt (no quaternion joints)."""
    return all(j.type not in ("spherical", "floating") for j in model.joints)


def _param(backend, kind):
    marks: tuple = ()
    if backend == "symengine" and se is None:
        marks = (pytest.mark.skip(reason="symengine not installed"),)
    if backend in ("sympy", "symengine") and kind != "prismatic":
        # the symbolic backends build every expression in full (seconds a tree): one tree in the
        # default run, the others in the slow remainder (`pytest -m slow`)
        marks = (*marks, pytest.mark.slow)
    return marks


CASES = [pytest.param(b, k, id=f"{b}-{k}", marks=_param(b, k)) for b in BACKENDS for k in KINDS]


@functools.lru_cache(maxsize=None)
def reference(geom: str, kind: str) -> dict:
    """NumPy state and independent references (CasADi AD) for tree ``kind`` of ``geom``."""
    m = tree(geom, kind)
    q, qd, qdd = random_state(m, seed=7)
    dM = mass_matrix_derivative(m, q)
    return {
        "model": m, "q": q, "qd": qd, "qdd": qdd,
        "tau": sd.rnea(m, q, qd, qdd),
        "dM": dM,
        "Mdot": dM @ qd,
        "dtau_dq": tangent_jacobian(m, sd.rnea, q, qd, qdd),
        "dtau_dqd": velocity_jacobian(m, sd.rnea, q, qd, qdd),
        "Gamma4": christoffel_eq4(dM) if coordinates(m) else None,
    }


@functools.lru_cache(maxsize=None)
def results(backend: str, kind: str, geom: str | None = None) -> dict:
    """Every algorithm's output for (backend, tree) at the reference state, as NumPy arrays
    (``geom``: which tree set; by default the backend's own)."""
    ref = reference(geom or geometry(backend), kind)
    m, q, qd, qdd, tau = ref["model"], ref["q"], ref["qd"], ref["qdd"], ref["tau"]
    slow_q = backend == "sympy" and kind in SYMPY_NUMERIC_Q
    num_q = (0,) if slow_q else ()
    num_all = (0, 1, 2) if slow_q else ()
    out = {}

    def ev(name, fn, args, kinds, numeric=(), **kw):
        val, pt = call(backend, fn, m, args, kinds, numeric=numeric, **kw)
        if name in ("Gamma", "Gamma4"):   # ndarray, NDimArray, list of pages or Tensor3
            val = pt.gamma(val)
        elif isinstance(val, (tuple, list)):
            val = pt.many(val)
        else:
            val = pt.matrix(val)
        out[name] = val

    ev("M", sd.crba, (q,), ("q",))
    ev("tau", sd.rnea, (q, qd, qdd), ("q", "v", "v"))
    ev("nle", sd.nonlinear_effects, (q, qd), ("q", "v"))
    ev("g", sd.gravity_vector, (q,), ("q",))
    ev("J", sd.body_jacobians, (q,), ("q",))
    ev("aba", sd.aba, (q, qd, tau), ("q", "v", "v"), numeric=num_q)
    for fac in FACTORIZATIONS:
        for frame in FRAMES:
            ev(("cor", fac, frame), sd.coriolis_matrix, (q, qd), ("q", "v"),
               factorization=fac, frame=frame)
    ev("Gamma", sd.christoffel, (q,), ("q",))
    if coordinates(m):
        ev("Gamma4", sd.christoffel_from_mass_matrix, (q,), ("q",))
    ev("rnea_d", sd.rnea_derivatives, (q, qd, qdd), ("q", "v", "v"), numeric=num_all)
    for method in ("dmm", "aza"):
        ev(("aba_d", method), sd.aba_derivatives, (q, qd, tau), ("q", "v", "v"), numeric=num_all,
           method=method)
    for k, v in out.items():
        out[k] = [np.asarray(x, float) for x in v] if isinstance(v, list) else np.asarray(v, float)
    return out


def vec(x):
    return np.asarray(x, float).reshape(-1)


def case(backend, kind):
    return reference(geometry(backend), kind), results(backend, kind)


# --- every backend equals NumPy at the same numbers ---------------------------------------------

@pytest.mark.parametrize("backend,kind", [c for c in CASES if c.values[0] != "numpy"])
def test_symbolic_backend_equals_numpy(backend, kind):
    """Each symbolic result, evaluated at the state, equals the NumPy call on the same tree."""
    got, ref = results(backend, kind), results("numpy", kind, geometry(backend))
    for key, val in ref.items():
        if isinstance(val, list):
            for a, b in zip(got[key], val):
                assert_close(a, b, TOL, what=str(key))
        else:
            assert_close(got[key], val, TOL, what=str(key))


# --- rnea, crba, aba -------------------------------------------------------------------------------

@pytest.mark.parametrize("backend,kind", CASES)
def test_rnea_is_M_qdd_plus_C_qd_plus_g(backend, kind):
    """rnea = M qdd + C qd + g with M = crba, C = coriolis_matrix (every factorization and frame,
    all admissible), g = gravity_vector; nonlinear_effects = C qd + g."""
    ref, r = case(backend, kind)
    qd, qdd = ref["qd"], ref["qdd"]
    M, g = r["M"], vec(r["g"])
    assert np.abs(g).max() > 1e-3 and np.abs(M @ qdd).max() > 1e-3   # every term matters
    for fac in FACTORIZATIONS:
        for frame in FRAMES:
            C = r[("cor", fac, frame)][2]
            assert np.abs(C @ qd).max() > 1e-3
            assert_close(M @ qdd + C @ qd + g, vec(r["tau"]), TOL, f"rnea ({fac}, {frame})")
            assert_close(C @ qd + g, vec(r["nle"]), TOL, f"nonlinear_effects ({fac}, {frame})")
    assert_close(vec(r["tau"]), ref["tau"], TOL, "rnea vs NumPy")


@pytest.mark.parametrize("backend,kind", CASES)
def test_aba_inverts_rnea(backend, kind):
    ref, r = case(backend, kind)
    assert_close(vec(r["aba"]), ref["qdd"], TOL, "aba(q, qd, rnea(q, qd, qdd)) - qdd")


@pytest.mark.parametrize("backend,kind", CASES)
def test_crba_symmetric_positive_definite_and_lagrangian(backend, kind):
    """M = M^T > 0 and M = sum_k J_k^T I_k J_k with the body Jacobians (an independent route)."""
    ref, r = case(backend, kind)
    m, M = ref["model"], r["M"]
    assert M.shape == (m.nv, m.nv)
    assert_close(M, M.T, 1e-13, "M - M^T")
    assert np.linalg.eigvalsh(M).min() > 0
    lag = sum(J.T @ np.asarray(m.I[k], float) @ J for k, J in enumerate(r["J"]))
    assert_close(lag, M, TOL, "sum J^T I J - crba")


# --- coriolis_matrix: 2 factorizations x 2 frames ------------------------------------------------

@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
@pytest.mark.parametrize("backend,kind", CASES)
def test_coriolis_matrix(backend, kind, factorization, frame):
    """M = crba; C qd = nle - g; Mdot = d/dt M(q (+) t qd) by CasADi AD of CRBA; C + C^T = Mdot
    (Mdot - 2C skew); the body-frame and root-frame forms agree."""
    ref, r = case(backend, kind)
    qd = ref["qd"]
    M, Mdot, C = r[("cor", factorization, frame)]
    assert_close(M, r["M"], TOL, "M - crba")
    assert_close(C @ qd, vec(r["nle"]) - vec(r["g"]), TOL, "C qd - (nle - g)")
    assert np.abs(ref["Mdot"]).max() > 1e-3
    assert_close(Mdot, ref["Mdot"], AD_TOL, "Mdot - AD derivative of crba")
    assert_close(C + C.T, Mdot, TOL, "C + C^T - Mdot")
    N = Mdot - 2 * C
    assert_close(N, -N.T, TOL, "Mdot - 2C skew")
    if frame == "root":
        for a, b, what in zip(r[("cor", factorization, "root")],
                              r[("cor", factorization, "body")], ("M", "Mdot", "C")):
            assert_close(a, b, TOL, f"root frame {what} - body frame")


# --- christoffel -----------------------------------------------------------------------------------

@pytest.mark.parametrize("backend,kind", CASES)
def test_christoffel(backend, kind):
    """C* = sum_k Gamma[:, :, k] qd[k]; dM/de_k = Gamma_k + Gamma_k^T (AD of CRBA, every tree);
    1-DoF trees: Gamma[i, j, k] = Gamma[i, k, j] = eq. (4), and christoffel_from_mass_matrix agrees."""
    ref, r = case(backend, kind)
    m, qd, G = ref["model"], ref["qd"], r["Gamma"]
    assert G.shape == (m.nv,) * 3
    C = r[("cor", "christoffel", "body")][2]
    assert_close(G @ qd, C, TOL, "sum_k Gamma_k qd_k - C*")
    assert_close(G + G.transpose(1, 0, 2), ref["dM"], AD_TOL, "Gamma_k + Gamma_k^T - dM/de_k")
    if coordinates(m):
        assert_close(G, G.transpose(0, 2, 1), TOL, "Gamma[i, j, k] - Gamma[i, k, j]")
        assert_close(G, ref["Gamma4"], AD_TOL, "Gamma - eq. (4) from AD of M")
        assert_close(r["Gamma4"], ref["Gamma4"], AD_TOL, "christoffel_from_mass_matrix - eq. (4)")
    else:  # generalized speeds: not symmetric inside spherical/floating joints
        assert np.abs(G - G.transpose(0, 2, 1)).max() > 1e-3


# --- rnea_derivatives ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend,kind", CASES)
def test_rnea_derivatives(backend, kind):
    """dtau/dqd[i, j] = sum_k (Gamma[i, j, k] + Gamma[i, k, j]) qd[k] (2 C* on 1-DoF trees);
    dtau/dq (tangent space) and dtau/dqd = CasADi AD of rnea."""
    ref, r = case(backend, kind)
    m, qd, G = ref["model"], ref["qd"], r["Gamma"]
    dq, dqd = r["rnea_d"]
    expected = np.einsum("ijk,k->ij", G + G.transpose(0, 2, 1), qd)
    assert_close(dqd, expected, TOL, "dtau/dqd - sum_k (Gamma_ijk + Gamma_ikj) qd_k")
    if coordinates(m):
        assert_close(dqd, 2 * r[("cor", "christoffel", "body")][2], TOL, "dtau/dqd - 2 C*")
    assert_close(dq, ref["dtau_dq"], AD_TOL, "dtau/dq - AD")
    assert_close(dqd, ref["dtau_dqd"], AD_TOL, "dtau/dqd - AD")


# --- aba_derivatives -------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ("dmm", "aza"))
@pytest.mark.parametrize("backend,kind", CASES)
def test_aba_derivatives(backend, kind, method):
    """Minv = inv(crba); dqdd/dq = -Minv dtau/dq and dqdd/dqd = -Minv dtau/dqd at
    tau = rnea(qdd) (so that aba = qdd), with dtau/dq and dtau/dqd from CasADi AD of rnea."""
    ref, r = case(backend, kind)
    dq, dqd, Minv = r[("aba_d", method)]
    assert_close(Minv @ r["M"], np.eye(ref["model"].nv), TOL, "Minv crba - I")
    assert_close(Minv, np.linalg.inv(r["M"]), TOL, "Minv - inv(crba)")
    assert_close(dq, -Minv @ ref["dtau_dq"], AD_TOL, "dqdd/dq + Minv dtau/dq")
    assert_close(dqd, -Minv @ ref["dtau_dqd"], AD_TOL, "dqdd/dqd + Minv dtau/dqd")
