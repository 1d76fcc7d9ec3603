"""symdyn.batch on a local Dask cluster with two worker processes (skipped without dask and
distributed): blocks of a Dask array of states evaluated by the compiled C library and by the JAX
kernel equal NumPy state by state."""
from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import symdyn as sd  # noqa: E402
import symdyn.batch  # noqa: E402
from symdyn.models import branched_tree  # noqa: E402

MODEL = branched_tree(4, 2, seed=5, joint=("spherical", "revolute", "prismatic"))


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _states(n=40, chunk=10, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.stack([MODEL.random_q(rng) for _ in range(n)])
    QD, QDD = rng.normal(size=(n, MODEL.nv)), rng.normal(size=(n, MODEL.nv))
    return Q, QD, QDD, [da.from_array(x, chunks=(chunk, -1)) for x in (Q, QD, QDD)]


def _compiler_or_skip():
    from symdyn.codegen import BuildError, compiler_info
    try:
        compiler_info()
    except BuildError as exc:
        pytest.skip(f"no C compiler: {exc}")


def test_jax_engine_on_two_worker_processes(client):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    Q, QD, QDD, (dQ, dQD, dQDD) = _states()
    tau = symdyn.batch.evaluate(MODEL, "rnea", dQ, dQD, dQDD, engine="jax")
    assert isinstance(tau, da.Array) and tau.shape == (40, MODEL.nv)
    tau = client.compute(tau, sync=True)
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
    for s in (0, 17, 39):
        np.testing.assert_allclose(tau[s], sd.rnea(MODEL, Q[s], QD[s], QDD[s]), atol=1e-12)


def test_compiled_engine_on_two_worker_processes(client):
    _compiler_or_skip()
    Q, QD, QDD, (dQ, dQD, dQDD) = _states(seed=1)
    G = symdyn.batch.evaluate(MODEL, "christoffel", dQ)
    M, Mdot, C = symdyn.batch.evaluate(MODEL, "coriolis_matrix", dQ, dQD)    # several outputs
    tau = symdyn.batch.evaluate(MODEL, "rnea", Q, QD, QDD, chunk=15)     # NumPy in: chunked
    assert tau.chunks[0] == (15, 15, 10)
    G, M, C, tau = client.compute([G, M, C, tau], sync=True)
    assert G.shape == (40, MODEL.nv, MODEL.nv, MODEL.nv)
    for s in (3, 38):
        np.testing.assert_allclose(G[s], sd.christoffel(MODEL, Q[s]), atol=1e-10)
        np.testing.assert_allclose(tau[s], sd.rnea(MODEL, Q[s], QD[s], QDD[s]), atol=1e-10)
        ref = sd.coriolis_matrix(MODEL, Q[s], QD[s])
        np.testing.assert_allclose(M[s], ref[0], atol=1e-10)
        np.testing.assert_allclose(C[s], ref[2], atol=1e-10)
    bad = Q.copy()
    bad[12, 0:4] *= 3                                                     # the root's quaternion
    with pytest.raises(ValueError, match=r"block of states 10\.\.19 .*state 2: .*quaternion"):
        symdyn.batch.evaluate(MODEL, "crba", da.from_array(bad, chunks=(10, -1))).compute()


def test_bad_calls():
    _, _, _, (dQ, dQD, _) = _states()
    with pytest.raises(ValueError, match="unknown engine"):
        symdyn.batch.evaluate(MODEL, "rnea", dQ, dQD, dQD, engine="torch")
    pytest.importorskip("jax").config.update("jax_enable_x64", True)
    with pytest.raises(TypeError, match="3 arrays of states"):
        symdyn.batch.evaluate(MODEL, "rnea", dQ, dQD, engine="jax")
    with pytest.raises(ValueError, match=r"qd must have shape \(n_states, %d\)" % MODEL.nv):
        symdyn.batch.evaluate(MODEL, "rnea", dQ, dQ, dQD, engine="jax")
    with pytest.raises(ValueError, match=r"q must have shape \(n_states, %d\), got \(%d,\)"
                       % (MODEL.nq, MODEL.nq)):
        symdyn.batch.evaluate(MODEL, "crba", np.zeros(MODEL.nq), engine="jax")    # one state
    for chunk in (0, -5, 2.5):
        with pytest.raises(ValueError, match="chunk must be a positive number of states"):
            symdyn.batch.evaluate(MODEL, "crba", np.zeros((3, MODEL.nq)), chunk=chunk)
    Q, QD, QDD, _ = _states(n=6)
    QD[4, 1] = np.nan                                      # named by its block and place in it
    with pytest.raises(ValueError, match=r"block of states 3\.\.5 \(indices below count from "
                                         r"3\): qd\[1\] contains NaN"):
        symdyn.batch.evaluate(MODEL, "rnea", Q, QD, QDD, engine="jax", chunk=3).compute(
            scheduler="synchronous")


@pytest.mark.parametrize("algorithm,n_in,options", [
    ("frame_jacobian", 1, {"reference": "world"}),                   # 'frame_jacobian:<frame>'
    ("frame_velocity", 2, {"reference": "local_world_aligned"}),
    ("coriolis_matrix", 2, {"factorization": "simple"}),             # several outputs
])
def test_compiled_engine_with_keyword_options(algorithm, n_in, options):
    """Keyword options reach the build, and a frame function (keyed by its frame in the build)
    is the one evaluated; results equal NumPy's with the same options."""
    _compiler_or_skip()
    Q, QD, QDD, _ = _states(n=6, seed=2)
    if algorithm.startswith("frame_"):
        options = {"frame": MODEL.names[-1], **options}
    ins = (Q, QD, QDD)[:n_in]
    out = symdyn.batch.evaluate(MODEL, algorithm, *ins, chunk=4, **options)
    several = isinstance(out, tuple)
    out = [o.compute(scheduler="synchronous") for o in (out if several else (out,))]
    for s in (0, 5):
        ref = getattr(sd, algorithm)(MODEL, *(x[s] for x in ins), **options)
        for got, want in zip(out, ref if several else (ref,)):
            np.testing.assert_allclose(got[s], want, atol=1e-10)


def test_one_frame_per_evaluate():
    Q, _, _, _ = _states(n=3)
    with pytest.raises(ValueError, match="one frame"):
        symdyn.batch.evaluate(MODEL, "frame_jacobian", Q, frame=[MODEL.names[0], MODEL.names[1]])
