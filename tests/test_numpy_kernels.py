"""The NumPy backend's fast paths: its kernels (``numpy_backend.kernels``) agree with the generic
3x3-block forms of symdyn.spatial, every algorithm gives the same results with and without them,
the cheaper primitives (block, skew, to_vector) keep their behaviour, the entry fast path
resolves inputs as resolve_backend does, and steps run directly on backend modules."""
from __future__ import annotations

import pickle
import types

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn import spatial
from symdyn.algorithms.steps import step
from symdyn.backends import Backend, get_backend
from symdyn.joints import Prismatic, Revolute, Spherical
from symdyn.models import random_inertia, random_rotation, random_tree
from symdyn.spatial import Transform

NP = get_backend("numpy")
RNG = np.random.default_rng(7)
V, W = RNG.normal(size=6), RNG.normal(size=6)
MAT = RNG.normal(size=(6, 3))
X1 = Transform(random_rotation(RNG), RNG.normal(size=3))
KINDS = ("revolute", "prismatic", "helical", "spherical", "planar")


def generic_numpy() -> Backend:
    """The NumPy backend without its kernels (every other name of the module), given to the
    algorithms as a Backend of its own: spatial and assemble_blocks take their generic forms."""
    ns = types.SimpleNamespace(**{k: getattr(NP, k) for k in dir(NP)
                                  if not k.startswith("__") and k != "kernels"})
    assert isinstance(ns, Backend) and not hasattr(ns, "kernels")
    return ns  # type: ignore[return-value]


G = generic_numpy()


def close(a, b, tol=1e-14):
    """|a - b| <= tol * max(1, |b|) entrywise-max (arrays or tuples of arrays)."""
    if isinstance(b, tuple):
        for x, y in zip(a, b):
            close(x, y, tol)
        return
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    assert np.max(np.abs(a - b), initial=0.0) <= tol * max(1.0, np.max(np.abs(b), initial=0.0))


# --- kernels against the generic forms ----------------------------------------------------------

def test_cross_product_kernels_equal_the_block_forms():
    K = NP.kernels
    for kernel, name in ((K.crm, "crm"), (K.crf, "crf"), (K.crfbar, "crfbar")):
        assert np.array_equal(kernel(V), getattr(spatial, name)(G, V)), name
    assert np.array_equal(NP.skew(V[:3]), spatial.skew(G, V[:3]))
    assert np.array_equal(NP.skew([1, 2, 3]), [[0, -3, 2], [3, 0, -1], [-2, 1, 0]])
    close(K.motion_matrix(X1.E, X1.r), spatial.to_matrix(G, X1), 1e-15)


@pytest.mark.parametrize("m", [V, MAT], ids=["vector", "6x3"])
def test_spatial_functions_agree_with_and_without_kernels(m):
    I6 = spatial.mcI(NP, *random_inertia(RNG))
    A = RNG.normal(size=(6, 6))
    X2 = Transform(random_rotation(RNG), RNG.normal(size=3))
    for fn, args in ((spatial.xform_motion, (X1, m)), (spatial.xform_force_T, (X1, m)),
                     (spatial.cross_motion, (W, m)), (spatial.cross_force, (W, m)),
                     (spatial.inertia_congruence, (X1, I6)), (spatial.congruence, (X1, A)),
                     (spatial.inertia_congruence_sym, (X1, I6)), (spatial.crm, (W,))):
        close(fn(NP, *args), fn(G, *args), 1e-13)
    X12 = spatial.compose(NP, X2, X1)
    assert isinstance(X12, Transform)
    close(X12, spatial.compose(G, X2, X1), 1e-15)


def test_composed_transform_keeps_its_matrix_and_stays_a_pair():
    X = spatial.compose(NP, X1, Transform(np.eye(3), np.zeros(3)))
    assert "numpy" not in X.__dict__                     # built on first use only
    v = spatial.xform_motion(NP, X, V)
    assert np.array_equal(v, X.__dict__["numpy"] @ V)   # then kept in the transform
    E, r = X
    assert len(X) == 2 and X._fields == ("E", "r") and E is X.E and r is X.r
    Y = pickle.loads(pickle.dumps(X))
    assert isinstance(Y, Transform) and np.array_equal(Y.E, X.E)


def test_a_callers_transform_changed_in_place_is_applied_as_it_is_now():
    X = Transform(X1.E.copy(), X1.r.copy())
    first = spatial.xform_motion(NP, X, V)
    X.E[:] = np.eye(3)
    X.r[:] = 0.0
    assert np.allclose(first, spatial.xform_motion(G, X1, V))
    assert np.array_equal(spatial.xform_motion(NP, X, V), V)          # identity now
    assert np.array_equal(spatial.xform_force_T(NP, X, V), V)


# --- algorithms ----------------------------------------------------------------------------------

def state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = np.array(model.random_q(rng))
    return q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
def test_algorithms_agree_with_and_without_kernels(floating):
    model = random_tree(7, seed=3, joint_kinds=KINDS, floating_base=floating)
    q, qd, qdd = state(model)
    fext = [None] * model.N
    fext[2] = RNG.normal(size=6)
    for fn, args in ((sd.rnea, (q, qd, qdd)), (sd.rnea, (q, qd, qdd, fext)), (sd.crba, (q,)),
                     (sd.aba, (q, qd, qdd)), (sd.coriolis_matrix, (q, qd)),
                     (sd.christoffel, (q,))):
        close(fn(model, *args), fn(model, *args, backend=G), 1e-13)
    close(sd.crba(model, q, frame="root"), sd.crba(model, q, frame="root", backend=G), 1e-13)


def test_assemble_kernel_places_blocks_as_the_grid_does():
    K, rows, cols = NP.kernels, [(0, 1), (1, 4), (4, 6)], [(0, 3), (3, 4)]
    blocks = {(0, 0): RNG.normal(size=(1, 3)), (1, 1): RNG.normal(size=(3, 1)),
              (2, 0): RNG.normal(size=(2, 3))}
    grid = [[blocks.get((i, j), np.zeros((b - a, d - c))) for j, (c, d) in enumerate(cols)]
            for i, (a, b) in enumerate(rows)]
    assert np.array_equal(K.assemble(blocks, rows, cols), np.block(grid))
    with pytest.raises(ValueError, match=r"block \(1, 1\) has shape \(2, 1\), expected \(3, 1\)"):
        K.assemble({(1, 1): np.zeros((2, 1))}, rows, cols)
    ones = [(k, k + 1) for k in range(3)]
    scalar = {(0, 0): np.full((1, 1), 2.0), (2, 1): np.full((1, 1), 3.0)}
    assert np.array_equal(K.assemble(scalar, ones, ones), [[2, 0, 0], [0, 0, 0], [0, 3, 0]])
    with pytest.raises(ValueError, match=r"block \(0, 0\) has shape \(2, 2\)"):
        K.assemble({(0, 0): np.ones((2, 2))}, ones, ones)


# --- primitives ----------------------------------------------------------------------------------

def test_block_matches_np_block():
    E = RNG.normal(size=(3, 3))
    scalars = [[RNG.normal(size=(1, 1)) for _ in range(4)] for _ in range(3)]
    for grid in (scalars, [[E, E[:, :1]], [E[:2], E[:2, :1]]], [[np.zeros((2, 0)), E[:2]]]):
        assert np.array_equal(NP.block(grid), np.block(grid))
    assert np.array_equal(NP.block([[np.ones(2), np.zeros(1)]]), [[1, 1, 0]])   # 1-D: np.block
    with pytest.raises(ValueError):
        NP.block([[E, E], [E]])


def test_to_vector_fast_path_checks_as_before():
    x = RNG.normal(size=4)
    assert NP.to_vector(x, 4, "qd") is x
    assert np.array_equal(NP.to_vector([1e200, 2, 3, 4], 4, "qd"), [1e200, 2, 3, 4])
    big = np.array([1.5e308, 1.5e308])                 # finite entries whose sum overflows
    assert NP.to_vector(big, 2, "qd") is big
    for y in (x.copy(), np.zeros(100)):                # short: the fast check; long: the full one
        for bad in (np.nan, np.inf, -np.inf):
            y[2] = bad
            with pytest.raises(ValueError, match=r"qd contains NaN or inf at index \[2\]"):
                NP.to_vector(y, len(y), "qd")
    with pytest.raises(ValueError, match=r"qd must have shape \(5,\)"):
        NP.to_vector(x, 5, "qd")


def test_entry_fast_path_resolves_as_resolve_backend():
    model = random_tree(3, seed=1)
    q, qd, qdd = state(model)
    assert isinstance(sd.rnea(model, q.astype(np.float32), qd, qdd), np.ndarray)
    assert isinstance(sd.rnea(model, np.zeros(3, dtype=int), qd, qdd), np.ndarray)
    with pytest.raises(TypeError, match="complex"):
        sd.rnea(model, q.astype(complex), qd, qdd)
    syms = np.array(sp.symbols("a b c"), dtype=object)    # object array: SymPy entries
    tau = sd.rnea(model, syms, qd, qdd)
    assert not isinstance(tau, np.ndarray) and tau.free_symbols == set(syms)


# --- steps and joint constants -------------------------------------------------------------------

def test_steps_run_directly_on_backend_modules_and_through_other_hooks():
    seen = []

    @step
    def double(B, x):
        seen.append(B)
        return 2 * x

    class Recorder:
        calls: list = []

        def call_step(self, fn, args):
            self.calls.append(fn.__name__)
            return fn(self, *args)

    rec = Recorder()
    assert double(NP, 3) == 6 and seen == [NP]
    assert double(rec, 4) == 8 and rec.calls == ["double"] and seen[-1] is rec


def test_constant_motion_subspaces_are_kept_per_numeric_backend():
    for joint, q in ((Revolute("x"), [0.3]), (Prismatic((0, 0.6, 0.8)), [0.2]),
                     (Spherical(), [0, 0, 0, 1.0])):
        S1, S2 = joint.calc(NP, np.array(q))[1], joint.calc(NP, np.array(q) / 2)[1]
        assert S1 is S2
        Y = get_backend("sympy")
        assert joint.calc(Y, sp.Matrix(q))[1] is not joint.calc(Y, sp.Matrix(q))[1]
        assert np.array_equal(S1, np.asarray(joint.calc(Y, sp.Matrix(q))[1], dtype=float))
