"""symdyn.jax.trig: sine and cosine as vectorizable float64 arithmetic for the JAX routes.

* sincos is within 1 ulp of the C library's sin / cos over the whole range it claims (|x| <=
  LIMIT): small and large arguments, both signs, zeros, multiples of pi/2 (where the argument
  reduction cancels most), and gives NaN for NaN and +-inf.
* The graph and program routes compute the joints' sines and cosines with it where every
  argument of the batch is within LIMIT, with jnp.sin / jnp.cos otherwise (a joint turned 1e7
  rad), and give NumPy's results either way; a graph whose trigonometric inputs include tan
  keeps jnp's.
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import symdyn as sd  # noqa: E402
from symdyn.jax import lowering as jax_lowering  # noqa: E402
from symdyn.jax import trig as jax_trig  # noqa: E402
from symdyn.codegen.functions import casadi_function  # noqa: E402


def ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


@pytest.mark.parametrize("half_width", [1.0, 4.0, 1e3, jax_trig.LIMIT])
def test_sincos_within_one_ulp(half_width):
    rng = np.random.default_rng(7)
    x = rng.uniform(-half_width, half_width, 200_000)
    k = np.arange(-400, 401)
    x = np.concatenate([x, [0.0, -0.0, half_width, -half_width], k * np.pi / 2,
                        np.nextafter(k * np.pi / 2, np.inf)])
    x = x[np.abs(x) <= jax_trig.LIMIT]
    s, c = (np.asarray(a) for a in jax.jit(jax_trig.sincos)(jnp.asarray(x)))
    assert ulps(s, np.sin(x)).max() <= 1.0
    assert ulps(c, np.cos(x)).max() <= 1.0


def test_sincos_of_nan_and_inf_is_nan():
    s, c = jax_trig.sincos(jnp.array([np.nan, np.inf, -np.inf]))
    assert np.isnan(np.asarray(s)).all() and np.isnan(np.asarray(c)).all()


def test_graph_route_sines_in_and_beyond_the_polynomials_range():
    model = sd.load_robot("ur5")
    f = casadi_function(model, "crba", layout="numpy")
    rng = np.random.default_rng(3)
    Q = rng.uniform(-3, 3, (5, model.nq))
    fast = jax.jit(jax_lowering.graph_batch(f, [(model.nv, model.nv)]))
    libm = jax.jit(jax_lowering.graph_batch(f, [(model.nv, model.nv)], sincos=False))
    for q in (Q, np.vstack([Q, [[1e7] + [0.5] * (model.nq - 1)]])):   # the last: jnp.sin's
        got = np.asarray(fast(jnp.asarray(q))[0])
        np.testing.assert_allclose(got, np.asarray(libm(jnp.asarray(q))[0]), rtol=1e-13,
                                   atol=1e-13)
        for s in range(len(q)):
            np.testing.assert_allclose(got[s], sd.crba(model, q[s]), rtol=1e-11, atol=1e-11)


def test_graph_with_tan_keeps_jnp():
    x = ca.SX.sym("x", 2)
    f = ca.Function("f", [x], [ca.vertcat(ca.tan(x[0]) * ca.sin(x[1]), ca.cos(x[1]))])
    xs = np.random.default_rng(1).uniform(-1, 1, (4, 2))
    got = np.asarray(jax.jit(jax_lowering.graph_batch(f, [(2,)]))(jnp.asarray(xs))[0])
    want = np.stack([np.tan(xs[:, 0]) * np.sin(xs[:, 1]), np.cos(xs[:, 1])], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_program_route_sines_in_and_beyond_the_polynomials_range(monkeypatch):
    """The program's kernels take their joints' sines and cosines the same way (a conditional
    per kernel call on its arguments)."""
    import symdyn.jax as sjax
    model = sd.load_robot("ur5")
    fast = sjax.compile(model, "crba", route="program")
    monkeypatch.setattr(jax_lowering, "SINCOS", False)
    libm = sjax.compile(model, "crba", route="program")
    rng = np.random.default_rng(4)
    Q = rng.uniform(-3, 3, (5, model.nq))
    for q in (Q, np.vstack([Q, [[0.5] * (model.nq - 1) + [-1e7]]])):
        got = np.asarray(fast(q))
        np.testing.assert_allclose(got, np.asarray(libm(q)), rtol=1e-13, atol=1e-13)
        for s in range(len(q)):
            np.testing.assert_allclose(got[s], sd.crba(model, q[s]), rtol=1e-11, atol=1e-11)
