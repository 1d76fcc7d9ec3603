"""The JAX backend and symdyn.jax.compile (skipped without JAX).

* Every algorithm and toolkit function on the shared tree matrix (tests/test_matrix.py's trees:
  serial, branched, prismatic, helical, spherical, floating, planar) with JAX arrays equals NumPy,
  with the same structure (1-D vectors, nv x nv matrices, an (nv, nv, nv) Christoffel array).
* Under jit + vmap (symdyn.jax.compile) the batched results equal NumPy state by state.
* Autodiff against the analytical algorithms: jax.jacfwd of rnea equals IDSVA (rnea_derivatives)
  in the tangent space (through sd.integrate(model, q, dq) at dq = 0 for quaternion joints: the safe
  helpers' gradients at 0); jacfwd of crba gives Gamma_k + Gamma_k^T; grad of the kinetic energy
  in qd is M qd.
* Errors: mixing JAX with SymPy/CasADi inputs, float32 without opting in, NaN and non-unit
  quaternions in concrete inputs and batches, bad shapes, bad out= sets.
* The process-wide helpers of symdyn.jax.process are opt-in: the library never applies them.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import casadi as ca
import numpy as np
import pytest
import sympy as sp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import symdyn as sd  # noqa: E402
import symdyn.jax as sjax  # noqa: E402
from symdyn.algorithms import regressors  # noqa: E402
from symdyn.backends import BackendError, get_backend, kind_of  # noqa: E402
from symdyn.model import Mimic  # noqa: E402
from symdyn.models import planar_chain, serial_chain  # noqa: E402
from test_matrix import TREES  # noqa: E402  (the shared tree matrix)

TOL = 1e-10
KINDS = tuple(TREES)


def quaternions(model) -> bool:
    return any(j.type in ("spherical", "floating") for j in model.joints)


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    return (model.random_q(rng), rng.uniform(-3, 3, model.nv), rng.uniform(-3, 3, model.nv))


def close(a, b, tol=TOL, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
    err = float(np.abs(a - b).max()) if b.size else 0.0
    assert err <= tol * scale, f"{what}: max |diff| {err:.3e} (scale {scale:.3g})"


def leaves(x):
    return jax.tree_util.tree_leaves(x)


# Every algorithm: (function, argument kinds, options). 'q', 'v' (speeds/accelerations/torques).
# The dynamics algorithms run on every tree; the toolkit (frames, centre of mass, energies,
# regressors) on the trees of TOOLKIT_KINDS (eager JAX dispatches op by op: seconds per tree).
CORE = {
    "rnea": (sd.rnea, "qvv", {}),
    "crba": (sd.crba, "q", {}),
    "aba": (sd.aba, "qvv", {}),
    "nonlinear_effects": (sd.nonlinear_effects, "qv", {}),
    "gravity_vector": (sd.gravity_vector, "q", {}),
    "coriolis_body_christoffel": (sd.coriolis_matrix, "qv", {}),
    "coriolis_body_simple": (sd.coriolis_matrix, "qv", {"factorization": "simple"}),
    "coriolis_root_christoffel": (sd.coriolis_matrix, "qv", {"frame": "root"}),
    "coriolis_root_simple": (sd.coriolis_matrix, "qv", {"frame": "root",
                                                       "factorization": "simple"}),
    "coriolis_product": (sd.coriolis_product, "qvv", {}),
    "christoffel": (sd.christoffel, "q", {}),
    "rnea_derivatives": (sd.rnea_derivatives, "qvv", {}),
    "aba_derivatives_dmm": (sd.aba_derivatives, "qvv", {"method": "dmm"}),
    "aba_derivatives_aza": (sd.aba_derivatives, "qvv", {"method": "aza"}),
}
TOOLKIT = {
    "body_jacobians": (sd.body_jacobians, "q", {}),
    "kinetic_energy": (sd.kinetic_energy, "qv", {}),
    "potential_energy": (sd.potential_energy, "q", {}),
    "center_of_mass": (sd.center_of_mass, "q", {}),
    "com_jacobian": (sd.com_jacobian, "q", {}),
    "centroidal_momentum_matrix": (sd.centroidal_momentum_matrix, "q", {}),
    "centroidal_dAg": (sd.centroidal_momentum_matrix_time_variation, "qv", {}),
    "joint_torque_regressor": (regressors.joint_torque_regressor, "qvv", {}),
    "slotine_li_regressor": (regressors.slotine_li_regressor, "qvvv", {}),
    "kinetic_energy_regressor": (regressors.kinetic_energy_regressor, "qv", {}),
}
TOOLKIT_KINDS = ("floating", "planar")


def _args(model, kinds, seed=0):
    q, qd, qdd = state(model, seed)
    extra = np.random.default_rng(seed + 100).uniform(-1, 1, model.nv)
    vs = iter([qd, qdd, extra])
    return [q if k == "q" else next(vs) for k in kinds]


@pytest.mark.parametrize("kind", KINDS)
def test_every_algorithm_on_jax_arrays_equals_numpy(kind):
    """Eager JAX (concrete arrays, no jit): same values and structure as NumPy on every tree."""
    model = TREES[kind]
    algorithms = {**CORE, **TOOLKIT} if kind in TOOLKIT_KINDS else CORE
    for name, (fn, kinds, opts) in algorithms.items():
        args = _args(model, kinds)
        ref = fn(model, *args, **opts)
        got = fn(model, *(jnp.asarray(a) for a in args), **opts)
        assert type(got) is type(ref) or isinstance(got, jax.Array), (name, type(got))
        for g, r in zip(leaves(got), leaves(ref)):
            assert isinstance(g, jax.Array) and kind_of(g) == "jax", (name, type(g))
            close(g, r, what=f"{kind} {name}")
    if kind not in TOOLKIT_KINDS:
        return
    frame = model.names[-1]
    q, qd, qdd = state(model, 1)
    for fn, args in ((sd.frame_placement, (q,)), (sd.frame_jacobian, (q,)),
                     (sd.frame_velocity, (q, qd)), (sd.frame_jacobian_time_variation, (q, qd)),
                     (sd.frame_classical_acceleration, (q, qd, qdd))):
        ref = fn(model, *args, frame)
        got = fn(model, *(jnp.asarray(a) for a in args), frame)
        for g, r in zip(leaves(got), leaves(ref)):
            close(g, r, what=f"{kind} {fn.__name__}")


def test_christoffel_is_a_rank3_jax_array_and_sums_to_C():
    model = TREES["floating"]
    q, qd, _ = state(model, 3)
    G = sd.christoffel(model, jnp.asarray(q))
    B = get_backend("jax")
    assert isinstance(G, jax.Array) and G.shape == (model.nv,) * 3
    C = sd.coriolis_matrix(model, jnp.asarray(q), jnp.asarray(qd))[2]
    close(sum(p * qd[k] for k, p in enumerate(B.pages(G))), C)
    close(jnp.einsum("ijk,k->ij", G, qd), C)


# --- jit + vmap: symdyn.jax.compile -----------------------------------------------------------

COMPILED = ("rnea", "crba", "aba", "coriolis_matrix", "christoffel", "rnea_derivatives",
            "aba_derivatives", "nonlinear_effects", "gravity_vector")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["floating", "branched"])
def test_compiled_batches_equal_numpy(kind):
    """jit + vmap of every dynamics algorithm, traced with JAX arrays (floating tree), and three
    of them by the default route (branched tree: the lowered graph; each compile takes seconds).
    The graph and program routes on the whole tree matrix: tests/test_jax_routes.py."""
    model = TREES[kind]
    rng = np.random.default_rng(5)
    n = 4
    Q = np.stack([model.random_q(rng) for _ in range(n)])
    V = [rng.uniform(-3, 3, (n, model.nv)) for _ in range(3)]
    for name in COMPILED if kind == "floating" else ("rnea", "christoffel", "aba_derivatives"):
        f = sjax.compile(model, name, route="trace" if kind == "floating" else "auto")
        batch = [Q if a == "q" else V[k] for k, a in enumerate(f.args)]
        out = f(*batch)
        ref_fn = getattr(sd, name)
        for s in range(n):
            ref = ref_fn(model, *(x[s] for x in batch))
            for g, r in zip(leaves(out), leaves(ref)):
                assert g.shape == (n, *np.shape(r)), (name, g.shape)
                close(g[s], r, what=f"{kind} {name} state {s}")
    f = sjax.compile(model, "coriolis_matrix")
    batch = (Q, V[0])
    for g, r in zip(f.single(Q[2], V[0][2]), f(*batch)):                 # one state, jitted
        close(g, r[2], what="coriolis_matrix single")


def test_compile_options_and_toolkit_functions():
    model = TREES["spherical"]
    rng = np.random.default_rng(2)
    Q = np.stack([model.random_q(rng) for _ in range(3)])
    QD = rng.normal(size=(3, model.nv))
    f = sjax.compile(model, "coriolis_matrix", frame="root", factorization="simple")
    assert f.args == ("q", "qd") and f.sizes == (model.nq, model.nv)
    for got, ref in zip(f(Q, QD), sd.coriolis_matrix(model, Q[1], QD[1], "simple", frame="root")):
        close(got[1], ref)
    J = sjax.compile(model, "frame_jacobian", frame=model.names[-1], reference="world")
    assert J.args == ("q",)
    close(J(Q)[0], sd.frame_jacobian(model, Q[0], model.names[-1], "world"))
    T = sjax.compile(model, regressors.joint_torque_regressor)          # a function, not a name
    close(T(Q, QD, QD)[2], regressors.joint_torque_regressor(model, Q[2], QD[2], QD[2]))
    assert "rnea" in repr(sjax.compile(model, "rnea"))
    S = sjax.compile(model, "static_torque_derivatives")   # external forces batched, stacked
    assert S.args == ("q", "f_ext") and S.sizes == (model.nq, 6 * model.N)
    F = rng.normal(size=(3, 6 * model.N))
    close(S(Q, F)[1], sd.static_torque_derivatives(model, Q[1], F[1].reshape(model.N, 6)))


def test_compile_mimic_functions_take_reduced_coordinates():
    base = TREES["floating"]
    one_dof = [n for n, j in zip(base.joint_names, base.joints) if j.nq == j.nv == 1]
    model = base.replace(mimic={one_dof[-1]: Mimic(one_dof[0], -2.0, 0.1)})
    rng = np.random.default_rng(5)
    Q = np.stack([sd.reduce_mimic(model, model.random_q(rng)) for _ in range(3)])
    V = rng.normal(size=(2, 3, model.nv - 1))
    f = sjax.compile(model, "mimic_rnea")
    assert f.args == ("q_r", "qd_r", "qdd_r")
    assert f.sizes == (model.nq - 1, model.nv - 1, model.nv - 1)
    close(f(Q, *V)[1], sd.mimic_rnea(model, Q[1], V[0][1], V[1][1]))
    close(sjax.compile(model, "mimic_crba")(Q)[2], sd.mimic_crba(model, Q[2]))
    bad = Q.copy()
    bad[1, 3:7] *= 2.0                                  # the floating base's quaternion
    with pytest.raises(ValueError, match=r"q_r\[1, 3:7\].*unit quaternion"):
        f(bad, *V)
    # qd_r of coriolis_product is a full speed (no q_r: not the mimic layout)
    assert sjax.compile(model, "coriolis_product").sizes == (model.nq, model.nv, model.nv)


def test_compile_refuses_what_is_not_an_algorithm_of_batched_states():
    model = TREES["floating"]
    with pytest.raises(TypeError, match="not a symdyn algorithm of"):
        sjax.compile(model, "reference_rnea_derivatives")       # NumPy only: no backend=
    with pytest.raises(TypeError, match="total_mass takes no batched state"):
        sjax.compile(model, "total_mass")
    with pytest.raises(TypeError, match=r"'frame' is the same for every state.*"
                                        r"compile\(model, 'frame_placement', frame="):
        sjax.compile(model, "frame_placement")
    assert sjax.compile(model, "frame_placement", frame=model.names[-1]).args == ("q",)

    def own(model, q, gain, *, backend=None):            # your functions: other names are nv long
        return sd.rnea(model, q, gain, gain, backend=backend)
    assert sjax.compile(model, own).sizes == (model.nq, model.nv)
    own.__module__ = "symdyn.elsewhere"                 # symdyn's own: every name is known
    with pytest.raises(TypeError, match="argument 'gain' is not a batched state"):
        sjax.compile(model, own)


def test_compile_refuses_bad_calls():
    model = TREES["floating"]
    f = sjax.compile(model, "rnea")
    rng = np.random.default_rng(0)
    Q = np.stack([model.random_q(rng) for _ in range(2)])
    V = np.zeros((2, model.nv))
    with pytest.raises(TypeError, match="3 batched arguments"):
        f(Q, V)
    with pytest.raises(ValueError, match=r"qd must have shape \(batch, %d\)" % model.nv):
        f(Q, V[:, :-1], V)
    with pytest.raises(ValueError, match="different lengths"):
        f(Q, V[:1], V)
    bad = Q.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"q\[1\] contains NaN"):
        f(bad, V, V)
    a = model.q_idx[0][1] - 4
    bad = Q.copy()
    bad[1, a:a + 4] *= 1.5
    with pytest.raises(ValueError, match=r"q\[1, %d:%d\].*unit quaternion" % (a, a + 4)):
        f(bad, V, V)
    # the same checks for concrete JAX arrays (the same fast path) and where inputs are neither
    # (lists, integers, one state)
    J = [jnp.asarray(x) for x in (Q, V, V)]
    with pytest.raises(ValueError, match=r"q\[1, %d:%d\].*unit quaternion" % (a, a + 4)):
        f(jnp.asarray(bad), V, V)
    with pytest.raises(ValueError, match=r"qdd\[1\] contains NaN"):
        f(J[0], J[1], J[2].at[1, 0].set(jnp.nan))
    with pytest.raises(ValueError, match=r"qd must have shape \(batch, %d\)" % model.nv):
        f(J[0], J[1][:, :-1], J[2])
    with pytest.raises(ValueError, match="different lengths"):
        f(J[0], J[1][:1], J[2])
    np.testing.assert_array_equal(np.asarray(f(*J)), np.asarray(f(Q, V, V)))
    with pytest.raises(ValueError, match=r"qd\[0\] contains NaN"):
        f(Q, np.full((2, model.nv), np.nan).tolist(), V)
    with pytest.raises(ValueError, match=r"q must have shape \(batch, %d\)" % model.nq):
        f(Q[0], V[0], V[0])
    with pytest.raises(ValueError, match="different lengths"):
        f(Q, V.astype(int)[:1], V)
    out = sjax.compile(model, "rnea", check=False)(bad, V, V)           # unchecked: computes
    assert out.shape == (2, model.nv)
    with pytest.raises(ValueError, match="unknown algorithm"):
        sjax.compile(model, "no_such_thing")
    with pytest.raises(TypeError, match="no option 'frame'"):
        sjax.compile(model, "rnea", frame="root")
    with pytest.raises(BackendError, match="SymPy parameters"):
        sjax.compile(planar_chain(2, symbolic_params=True), "crba")


def test_single_checks_concrete_states_and_passes_tracers():
    model = TREES["floating"]
    f = sjax.compile(model, "rnea")
    q = model.random_q(np.random.default_rng(3))
    v = np.linspace(-1.0, 1.0, model.nv)
    close(f.single(list(q), v.tolist(), v), sd.rnea(model, q, v, v))       # lists too
    with pytest.raises(ValueError, match=r"^qd contains NaN or inf at index 2"):
        f.single(q, np.where(np.arange(model.nv) == 2, np.nan, v), v)
    with pytest.raises(ValueError, match=r"qdd contains NaN"):
        f.single(jnp.asarray(q), v, jnp.full(model.nv, jnp.inf))
    a = model.q_idx[0][1] - 4
    bad = q.copy()
    bad[a:a + 4] *= 3.0
    with pytest.raises(ValueError, match=r"^q\[%d:%d\] \(joint of body .*unit quaternion" % (a, a + 4)):
        f.single(bad, v, v)
    with pytest.raises(ValueError, match=r"q must have shape \(%d,\)" % model.nq):
        f.single(q[:-1], v, v)
    with pytest.raises(TypeError, match=r"rnea.single takes 3 arguments \(q, qd, qdd\), got 2"):
        f.single(q, v)
    with pytest.raises(TypeError, match="real numbers"):
        f.single(q, v.astype(complex), v)
    assert np.isnan(np.asarray(sjax.compile(model, "rnea", check=False).single(
        q, np.full(model.nv, np.nan), v))).all()                            # unchecked: computes
    # tracers (grad, jit) pass through unchecked
    g = jax.grad(lambda x: jnp.sum(f.single(q, x, v)))(jnp.asarray(v))
    assert g.shape == (model.nv,)
    close(jax.jit(f.single)(q, v, v), sd.rnea(model, q, v, v))


def test_compiled_checks_values_in_the_call_and_shapes_once_per_shape():
    model = TREES["floating"]
    f = sjax.compile(model, "rnea")
    rng = np.random.default_rng(3)
    Q = np.stack([model.random_q(rng) for _ in range(3)])
    V = rng.uniform(-1, 1, (3, model.nv))
    ref = np.asarray(f(Q, V, V))
    # values: a flag computed in the call; a sum that overflows to inf flags the batch, but no
    # value is NaN or inf, so the host finds nothing to name and the results are returned
    big = V.copy()
    big[1:, 0] = 1e308                     # states 1 and 2 may overflow in rnea; 0 may not
    with np.errstate(all="ignore"):
        out = np.asarray(f(Q, big, V))
    assert out.shape == (3, model.nv)
    np.testing.assert_array_equal(out[0], ref[0])
    bad = V.copy()
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"qd\[2\] contains NaN or inf at index 1"):
        f(Q, bad, V)
    # a failed call leaves the function usable, and the same (jitted) shapes compute
    np.testing.assert_array_equal(np.asarray(f(Q, V, V)), ref)
    # dtypes: integers are converted where the call is traced; objects and complex are named
    np.testing.assert_allclose(np.asarray(f(Q, np.zeros((3, model.nv), int), V)),
                               np.asarray(f(Q, np.zeros((3, model.nv)), V)))
    with pytest.raises(TypeError, match=r"qd must be a \(batch, %d\) array of real numbers, "
                       r"got dtype object" % model.nv):
        f(Q, V.astype(object), V)
    with pytest.raises(TypeError, match=r"qdd must be a .* real numbers, got dtype complex"):
        f(Q, V, V.astype(complex))
    # shapes: checked when traced, so a wrong shape raises on every call, not only the first
    for _ in range(2):
        with pytest.raises(ValueError, match=r"qdd must have shape \(batch, %d\)" % model.nv):
            f(Q, V, np.zeros((3, model.nv + 1)))
        with pytest.raises(ValueError, match="different lengths"):
            f(jnp.asarray(Q), jnp.asarray(V[:2]), jnp.asarray(V))
    # check=False: the values are not looked at, shapes still are
    g = sjax.compile(model, "rnea", check=False)
    assert np.isnan(np.asarray(g(Q, np.full_like(V, np.nan), V))).all()
    with pytest.raises(ValueError, match=r"qd must have shape"):
        g(Q, V[:, :-1], V)
    with pytest.raises(AttributeError):
        f.check = False                       # fixed at compile time


def test_synchronous_dispatch_is_opt_in_only():
    """Importing symdyn.jax and compiling leave JAX's dispatch as it is; the opt-in helper of
    symdyn.jax.process sets JAX's public option (before JAX starts), and sync=False sets it
    back."""
    import subprocess
    import sys
    code = ("import jax, symdyn.jax as s\n"
            "default = jax.config.values['jax_cpu_enable_async_dispatch']\n"
            "from symdyn.jax.process import synchronous_dispatch\n"
            "assert jax.config.values['jax_cpu_enable_async_dispatch'] == default\n"
            "synchronous_dispatch()\n"
            "assert jax.config.values['jax_cpu_enable_async_dispatch'] is False\n"
            "jax.config.update('jax_enable_x64', True)\n"
            "import numpy as np, symdyn as sd\n"
            "m = sd.models.serial_chain(3, seed=1)\n"
            "f = s.compile(m, 'crba')\n"
            "Q = np.zeros((4, 3))\n"
            "assert np.allclose(np.asarray(f(Q)), sd.crba(m, Q[0]))\n"
            "synchronous_dispatch(False)\n"
            "assert jax.config.values['jax_cpu_enable_async_dispatch'] is True\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


# --- autodiff against the analytical algorithms -----------------------------------------------

def _tangent_jacobians(model, q, qd, qdd):
    """jacfwd of rnea in (dq, qd) at dq = 0, q (+) dq through sd.integrate (all trees)."""
    def tau(dq, v):
        return sd.rnea(model, sd.integrate(model, jnp.asarray(q), dq), v, jnp.asarray(qdd))
    return jax.jacfwd(tau, argnums=(0, 1))(jnp.zeros(model.nv), jnp.asarray(qd))


@pytest.mark.parametrize("kind", KINDS)
def test_jacfwd_of_rnea_equals_idsva(kind):
    model = TREES[kind]
    q, qd, qdd = state(model, 4)
    dq_ref, dqd_ref = sd.rnea_derivatives(model, q, qd, qdd)
    if not quaternions(model):   # generalized coordinates: plain jacfwd in q
        dq, dqd = jax.jacfwd(lambda *x: sd.rnea(model, *x), argnums=(0, 1))(
            jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
        close(dq, dq_ref, 1e-9, f"{kind} dtau/dq")
        close(dqd, dqd_ref, 1e-9, f"{kind} dtau/dqd")
        if kind != "serial":
            return
    dq, dqd = _tangent_jacobians(model, q, qd, qdd)   # quaternion trees (and serial: same)
    assert np.all(np.isfinite(np.asarray(dq)))
    close(dq, dq_ref, 1e-9, f"{kind} dtau/dq (tangent)")
    close(dqd, dqd_ref, 1e-9, f"{kind} dtau/dqd (tangent)")


def test_jacfwd_of_crba_gives_christoffel_and_grad_of_energy_gives_momentum():
    model = TREES["helical"]
    q, qd, _ = state(model, 6)
    dM = jax.jacfwd(lambda x: sd.crba(model, x))(jnp.asarray(q))          # dM[i, j, k]
    G = np.asarray(sd.christoffel(model, jnp.asarray(q)))
    close(G + G.transpose(1, 0, 2), dM, 1e-9)                            # Gamma_k + Gamma_k^T
    p = jax.grad(lambda v: sd.kinetic_energy(model, jnp.asarray(q), v))(jnp.asarray(qd))
    close(p, sd.crba(model, q) @ qd)


@pytest.mark.slow
def test_aba_derivatives_equal_jacfwd_of_aba_under_vmap():
    model = TREES["branched"]
    rng = np.random.default_rng(8)
    Q = jnp.asarray(np.stack([model.random_q(rng) for _ in range(3)]))
    V, T = (jnp.asarray(rng.normal(size=(3, model.nv))) for _ in range(2))
    jac = jax.jit(jax.vmap(jax.jacfwd(lambda *x: sd.aba(model, *x), argnums=(0, 1, 2))))
    got = jac(Q, V, T)
    for s in range(3):
        ref = sd.aba_derivatives(model, np.asarray(Q[s]), np.asarray(V[s]), np.asarray(T[s]))
        for g, r in zip(got, ref):
            close(g[s], r, 1e-9)


@pytest.mark.parametrize("fname,c", [("sin_over_x", (1, -1 / 6, 1 / 120)),
                                     ("one_minus_cos_over_x2", (1 / 2, -1 / 24, 1 / 720)),
                                     ("x_minus_sin_over_x3", (1 / 6, -1 / 120, 1 / 5040))])
def test_safe_helpers_are_smooth_at_zero_under_jit_and_grad(fname, c):
    f = getattr(get_backend("jax"), fname)
    d1, d2 = jax.grad(f), jax.grad(jax.grad(f))
    vals = [float(g(0.0)) for g in (jax.jit(f), jax.jit(d1), jax.jit(d2))]
    np.testing.assert_allclose(vals, [c[0], c[1], 2 * c[2]], rtol=1e-14)
    for x2 in (1e-12, 3.999, 4.0, 4.001, 1e4, 1e30):                    # finite everywhere
        assert np.isfinite(float(d1(x2))) and np.isfinite(float(d2(x2)))
    np.testing.assert_allclose(float(f(9.0)), getattr(get_backend("numpy"), fname)(9.0),
                               rtol=1e-15)


# --- backend selection and errors ---------------------------------------------------------------

def test_backend_follows_jax_inputs_and_refuses_mixing():
    model = serial_chain(2, seed=3)
    q, z = jnp.asarray([0.3, -1.1]), np.zeros(2)
    assert isinstance(sd.rnea(model, q, z, [0.0, 1.0]), jax.Array)       # mixes with numbers
    assert isinstance(sd.crba(model, [0.3, -1.1], backend="jax"), jax.Array)
    with pytest.raises(BackendError, match="cannot mix"):
        sd.rnea(model, q, ca.SX.sym("v", 2), z)
    with pytest.raises(BackendError, match="cannot mix"):
        sd.rnea(model, q, sp.Matrix(sp.symbols("a b")), z)
    with pytest.raises(BackendError, match="jax expressions|inputs are jax"):
        sd.crba(model, q, backend="casadi")
    with pytest.raises(BackendError, match="JAX inputs"):
        sd.crba(planar_chain(2, symbolic_params=True), q)
    with pytest.raises(BackendError):
        sd.crba(planar_chain(2, symbolic_params=True), q, backend="jax")


def test_concrete_inputs_are_checked_tracers_are_not():
    model = TREES["floating"]
    q, qd, qdd = state(model, 2)
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="q contains NaN or inf at index"):
        sd.rnea(model, jnp.asarray(bad), qd, qdd)
    a = model.q_idx[0][1] - 4
    bad = q.copy()
    bad[a:a + 4] *= 2
    with pytest.raises(ValueError, match="unit quaternion"):
        sd.crba(model, jnp.asarray(bad))
    out = jax.jit(lambda x: sd.crba(model, x))(jnp.asarray(bad))         # traced: no value check
    assert out.shape == (model.nv, model.nv)
    with pytest.raises(ValueError, match=r"q must have shape \(%d,\)" % model.nq):
        sd.crba(model, jnp.zeros(model.nq + 1))
    with pytest.raises(TypeError, match="complex"):
        sd.crba(model, jnp.asarray(q, dtype=jnp.complex128))


def test_float32_is_refused_unless_opted_in():
    model = serial_chain(3, seed=1)
    q, qd, qdd = state(model)
    with pytest.raises(BackendError, match="float32.*allow_float32"):
        sd.rnea(model, jnp.asarray(q, jnp.float32), qd, qdd)
    with pytest.raises(BackendError, match="float32"):
        sjax.compile(model, "rnea")(jnp.asarray(q[None], jnp.float32), qd[None], qdd[None])
    sjax.allow_float32()
    try:
        got = sd.rnea(model, jnp.asarray(q, jnp.float32), qd, qdd)
        close(got, sd.rnea(model, q, qd, qdd), 1e-4)
    finally:
        sjax.allow_float32(False)
    jax.config.update("jax_enable_x64", False)                            # JAX's default
    try:
        with pytest.raises(BackendError, match="jax_enable_x64"):
            sd.crba(model, q, backend="jax")
        with pytest.raises(BackendError, match="jax_enable_x64"):
            sjax.compile(model, "crba")
    finally:
        jax.config.update("jax_enable_x64", True)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _mapped_bytes() -> int:
    """glibc's bytes in blocks mapped on their own (mallinfo2().hblkhd)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = _Mallinfo2
    return int(libc.mallinfo2().hblkhd)


def test_retain_freed_memory_serves_large_blocks_from_the_heap():
    """symdyn.jax.process.retain_freed_memory: a 40 MB block comes from malloc's heap, not a
    mapping of its own (XLA's per-call buffers are then reused); retain=False restores glibc's 128 KiB threshold,
    and the same block is mapped again."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name or not hasattr(ctypes.CDLL(libc_name), "mallinfo2"):
        pytest.skip("needs glibc >= 2.33 (mallinfo2)")
    from symdyn.jax.process import retain_freed_memory
    n = 5_000_000                                       # 40 MB of float64
    try:
        assert retain_freed_memory() is True
        before = _mapped_bytes()
        block = np.ones(n)
        assert _mapped_bytes() - before < n * 8 // 2
        del block
    finally:
        assert retain_freed_memory(False) is True
    before = _mapped_bytes()
    block = np.ones(n)
    assert _mapped_bytes() - before >= n * 8
    del block
    with pytest.raises(ValueError, match="threshold"):
        retain_freed_memory(threshold=0)


@pytest.mark.parametrize("route", ["graph", "trace"])
def test_out_writes_into_earlier_results(route):
    """f(*xs, out=earlier): the batch's results in the memory of earlier results (donated: the
    given arrays are deleted), with a fresh call's values (to rounding); one executable call
    after call; out= that is not a set of live JAX arrays of the results' shapes is refused by
    name."""
    model = TREES["floating"]
    f = sjax.compile(model, "coriolis_matrix", route=route)
    rng = np.random.default_rng(5)
    batches = [(np.stack([model.random_q(rng) for _ in range(6)]),
                rng.uniform(-1, 1, (6, model.nv))) for _ in range(4)]

    def memory(res):
        return [a.unsafe_buffer_pointer() for a in res]
    out = f(*batches[0])
    first = memory(out)
    for b in batches[1:]:
        given, out = out, f(*b, out=out)
        assert all(a.is_deleted() for a in given) and memory(out) == first
        for g, w in zip(out, f(*b)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-14, atol=1e-14)
    assert f._into._cache_size() == 1
    with pytest.raises(ValueError, match="donated to an earlier call"):
        f(*batches[0], out=given)
    with pytest.raises(TypeError, match="expected JAX arrays"):
        f(*batches[0], out=[np.asarray(a) for a in out])
    with pytest.raises(ValueError, match="shapes and dtypes"):
        f(*(x[:5] for x in batches[0]), out=out)
    with pytest.raises(ValueError, match="expected 3 arrays"):
        f(*batches[0], out=out[:2])
    with pytest.raises(TypeError, match="out= is for calls from Python"):
        jax.jit(lambda q, qd: f(q, qd, out=out))(*batches[0])
