"""symdyn.jax.compile_many and Compiled.warm_up: compiling ahead of the first call.

* warm_up(B) compiles what a call with a NumPy batch of B states runs (the checked call): that
  call then compiles nothing of its own (JAX's compile log), while the same call on a function
  not warmed up does.
* The results' shapes a batch needs (to check out=) come from one state's shapes: equal to
  JAX's eval_shape of the batch on every route.
* compile_many gives compile()'s functions, in order, with the same values on one thread as on
  several; it takes (algorithm, options) pairs and compile()'s keywords, and refuses names
  given twice, bad workers and bad items with clear errors; an error in one compile is raised.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import symdyn as sd  # noqa: E402
import symdyn.jax as sjax  # noqa: E402
from symdyn.models import serial_chain  # noqa: E402
from test_jax_routes import batch_of, check_against_numpy  # noqa: E402
from test_matrix import TREES  # noqa: E402


def compiled_names(caplog) -> list[str]:
    """The functions JAX compiled (its compile log), the result sets' zero fill left out."""
    names = []
    for r in caplog.records:
        msg = r.getMessage()
        if msg.startswith("Finished XLA compilation of "):
            name = msg.split(" of ", 1)[1].split(" in ")[0]
            if "broadcast_in_dim" not in name:
                names.append(name)
    return names


def test_warm_up_compiles_what_the_call_runs(caplog):
    model = serial_chain(3)
    caplog.set_level(logging.DEBUG)
    warm, cold = (sjax.compile(model, "crba", route="graph") for _ in range(2))
    assert warm.warm_up(5, 2) is warm
    xs = batch_of(model, warm, n=5)
    for n in (5, 2):
        with jax.log_compiles(True):
            caplog.clear()
            jax.block_until_ready(warm(*(x[:n] for x in xs)))
            assert compiled_names(caplog) == [], n
        check_against_numpy(model, warm, [x[:n] for x in xs], f"warmed up, {n} states",
                            single=False)
    with jax.log_compiles(True):
        caplog.clear()
        cold(*xs)                                     # the same call compiles when not warmed
        assert len(compiled_names(caplog)) == 1
    for bad in (-1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="batch sizes must be integers"):
            warm.warm_up(bad)


@pytest.mark.parametrize("route", ["trace", "graph", "program"])
def test_result_shapes_of_a_batch_from_one_state(route):
    model = TREES["floating"]
    for alg in ("crba", "coriolis_matrix"):
        f = sjax.compile(model, alg, route=route)
        xs = [jax.ShapeDtypeStruct((7, n), np.float64) for n in f.sizes]
        want = jax.tree_util.tree_leaves(jax.eval_shape(f.batch.fn, *xs))
        assert [(o.shape, o.dtype) for o in f._result_shapes(xs, 7)] == \
            [(o.shape, o.dtype) for o in want]
        assert [o.shape[0] for o in f._result_shapes(xs, 0)] == [0] * len(want)


def test_compile_many_gives_compiles_functions_in_order():
    model = TREES["branched"]
    frame = model.names[-1]
    algs = ["rnea", "christoffel", ("frame_jacobian", {"frame": frame}),
            ("crba", {"route": "program"})]
    one = sjax.compile_many(model, algs, workers=1)
    many = sjax.compile_many(model, algs, batch_sizes=(3,), workers=3, check=False)
    assert list(one) == list(many) == ["rnea", "christoffel", "frame_jacobian", "crba"]
    assert many["crba"].route == "program" and one["crba"].route == "program"
    assert many["rnea"].check is False and one["rnea"].check is True
    for name, f in many.items():
        xs = batch_of(model, f)
        check_against_numpy(model, f, xs, f"compile_many {name}", single=False)
        for a, b in zip(jax.tree_util.tree_leaves(f(*xs)),
                        jax.tree_util.tree_leaves(one[name](*xs))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert sjax.compile_many(model, []) == {}


def test_compile_many_refuses_bad_calls():
    model = serial_chain(2)
    with pytest.raises(ValueError, match="'rnea' appears more than once"):
        sjax.compile_many(model, ["rnea", sd.rnea])
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="workers must be an integer >= 1"):
            sjax.compile_many(model, ["rnea", "crba"], workers=bad)
    with pytest.raises(TypeError, match="an algorithm or an"):
        sjax.compile_many(model, [("rnea", "graph")])
    with pytest.raises(ValueError, match="unknown algorithm 'rnae'"):
        sjax.compile_many(model, ["crba", "rnae"])
    with pytest.raises(TypeError, match="'frame' is the same for every state"):
        sjax.compile_many(model, ["crba", "frame_jacobian"], workers=2)
    with pytest.raises(ValueError, match="batch sizes must be integers"):
        sjax.compile_many(model, ["crba", "rnea"], batch_sizes=(-3,), workers=2)
