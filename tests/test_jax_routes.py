"""symdyn.jax.compile's routes: the CasADi graph and the recorded program lowered to JAX.

* route="graph" and route="program" give NumPy's results state by state on the shared tree
  matrix (revolute, prismatic, helical, spherical, floating, planar joints), batched and single.
* route="auto" takes the graph for small graphs, the program past the JAX limits of
  symdyn.codegen.choose for the algorithms of PROGRAM_AUTO, the traced route for the others and
  for unregistered functions; the program folds the model's constants 0 and +-1 while its kernels stay within FOLD_MAX.
* Both routes are differentiable: jacfwd of rnea equals IDSVA (coordinates of a tree without
  quaternions), grad of a batched sum goes through the program's scan.
* The graph cut into bands of a few dependency levels (graph_batch's fusion boundaries) gives the
  same numbers as one band, and its values written in groups of rows those of one per array
  (in fewer XLA kernels); its shared values are kept on large batches, so XLA's optimized code
  holds about the graph's operations, not the multiple its fusion would recompute; an
  operation without a lowering is a LoweringError, and "auto" then traces.
* Large batches run in chunks (a loop over slices, the last overlapping the one before it):
  the same numbers as one pass, for either route, batched and differentiated; written into
  the arrays given as out= without filling them with zeros first.
* Top-level calls compile with symdyn.jax.compiler_options() (XLA's options); inside the
  caller's jit / grad the functions compose; options the jaxlib does not know are dropped.
* Bad calls: unknown route, routes an algorithm does not have, float32 without opting in, wrong
  shapes.
"""
from __future__ import annotations

import re
from collections import Counter

import casadi as ca
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import symdyn as sd  # noqa: E402
import symdyn.jax as sjax  # noqa: E402
from symdyn.backends import BackendError  # noqa: E402
from symdyn.codegen import choose  # noqa: E402
from symdyn.codegen.functions import casadi_function  # noqa: E402
from symdyn.jax import chunks, jitted, lowering, program, routes  # noqa: E402
from symdyn.models import serial_chain  # noqa: E402
from test_jax import close  # noqa: E402  (same tolerance as the traced route's tests)
from test_matrix import TREES  # noqa: E402

def batch_of(model, f, n=3, seed=4):
    rng = np.random.default_rng(seed)
    return [np.stack([model.random_q(rng) for _ in range(n)]) if a == "q"
            else rng.uniform(-2, 2, (n, size)) for a, size in zip(f.args, f.sizes)]


def check_against_numpy(model, f, xs, what, single=True):
    out = f(*xs)
    fn = getattr(sd, f.name)
    for s in range(xs[0].shape[0]):
        ref = fn(model, *(x[s] for x in xs), **f.options)
        for g, r in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
            close(g[s], r, what=f"{what} state {s}")
    if not single:                  # .single is another XLA compile (seconds for large graphs)
        return
    single = f.single(*(x[1] for x in xs))
    for g, r in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(out)):
        close(g, r[1], what=f"{what} single")


@pytest.mark.parametrize("seed", range(4))
def test_program_rows_never_overwrite_a_live_value(seed):
    """The program's workspace allocator (first fit over P-row windows, P per segment of
    steps): replaying random step sequences, every version a step reads (and every result source
    at the end) is still in its row, and no step writes past the workspace."""
    rng = np.random.default_rng(seed)
    n_inputs = int(rng.integers(2, 6))
    steps, top = [], n_inputs
    for _ in range(4):                         # segments of 50 steps, each its own P
        P = int(rng.integers(1, 9))
        for _ in range(50):
            read = rng.choice(top, size=int(rng.integers(0, min(top, 6) + 1)),
                              replace=False).tolist()
            m = int(rng.integers(1, P + 1))
            steps.append((read, top, m, P))
            top += m
    kept = rng.choice(np.arange(1, top), size=10, replace=False)
    row, total = program._rows(steps, top, n_inputs, kept)
    held = np.full(total, -1)                  # the version in each row
    held[:n_inputs] = np.arange(n_inputs)
    for read, first, m, P in steps:
        assert all(held[row[v]] == v for v in read)
        r = row[first]
        assert r + P <= total and all(row[first + i] == r + i for i in range(m))
        held[r:r + P] = -1                     # the padding rows carry values nothing reads
        held[r:r + m] = np.arange(first, first + m)
    assert all(held[row[v]] == v for v in kept.tolist() + [0])
    assert total < top + 8                     # dead rows were reused


@pytest.mark.parametrize("kernels, runs", [
    ([], []),
    ([0, 1, 1, 2], [(0, 1), (1, 3), (3, 4)]),
    ([0, 1, 0, 2, 3, 2, 4], [(0, 3), (3, 6), (6, 7)]),
    ([0, 1, 2, 1, 3, 0], [(0, 6)]),
])
def test_program_segments_share_no_kernel(kernels, runs):
    """The scans of a program: the finest cut of its calls into contiguous runs of which no two
    call one kernel (each kernel compiled into one scan's switch)."""
    assert program._segments(kernels) == runs


def test_program_step_rows_split_cheap_calls_not_heavy_ones():
    """P, the rows every scan step writes: calls whose rows share much work are not split (each
    part would repeat it), calls whose rows are cheap apart are, so that the many one-row calls
    do not carry their padding."""
    x = ca.SX.sym("x", 2)
    h = x[0]
    for _ in range(100):
        h = ca.sin(h) * x[1] + h
    heavy = ca.Function("heavy", [x], [ca.vertcat(*[h + i for i in range(8)])])
    cheap = ca.Function("cheap", [x], [ca.vertcat(*[x[0] * (i + 2) + x[1] for i in range(8)])])
    one = ca.Function("one", [x], [x[0] * x[1]])
    low = {f.name(): lowering.SXLowering(f) for f in (heavy, cheap, one)}
    ones = [(low["one"], 1)] * 10
    assert program._split([(low["heavy"], 8)] + ones) == 8
    assert program._split([(low["cheap"], 8)] + ones) == 1
    assert program._split([]) == 1


@pytest.mark.parametrize("kind", tuple(TREES))
def test_graph_and_program_routes_equal_numpy(kind):
    model = TREES[kind]
    pairs = [("rnea", "graph"), ("rnea", "program")]
    if kind in ("floating", "planar"):          # each XLA compile takes seconds
        pairs += [("coriolis_matrix", "graph"), ("crba", "program")]
    for name, route in pairs:
        f = sjax.compile(model, name, route=route)
        assert f.route == route and f.route_reason == "asked for"
        check_against_numpy(model, f, batch_of(model, f), f"{kind} {name} {route}",
                            single=name == "rnea")


@pytest.mark.parametrize("route", ["graph", "program", "trace"])
def test_a_batch_of_no_states_gives_empty_results(route):
    model = TREES["floating"]
    f = sjax.compile(model, "coriolis_matrix", route=route)
    empty = [np.zeros((0, n)) for n in f.sizes]
    for got in (f(*empty), f.batch(*empty)):
        assert [np.shape(x) for x in got] == [(0, model.nv, model.nv)] * 3


@pytest.mark.slow
def test_every_recordable_algorithm_as_a_program():
    model = TREES["floating"]
    for name in ("aba", "christoffel"):
        f = sjax.compile(model, name, route="program")
        check_against_numpy(model, f, batch_of(model, f, n=2), f"floating {name} program",
                            single=False)


def test_program_runs_its_passes_as_scans_of_their_own_rows():
    """aba's passes write different numbers of rows a call (its backward pass the most): the
    program runs as several scans (one per segment of :func:`program._segments` with its
    own row count), and gives NumPy's results."""
    model = TREES["floating"]
    f = sjax.compile(model, "aba", route="program")
    fn = program.program_function(routes.record(f), [(model.nv,)])
    assert fn.n_scans > 1
    xs = batch_of(model, f)
    out = fn(*(jnp.asarray(x) for x in xs))[0]
    for s in range(xs[0].shape[0]):
        close(out[s], sd.aba(model, *(x[s] for x in xs)), what=f"aba program state {s}")


def test_program_kernels_write_kept_values_in_groups(monkeypatch):
    """A kernel keeping at least PROGRAM_GROUP_MIN values writes them GROUP to an array
    (SXLowering.call_grouped, one XLA kernel a group): the numbers of one value per array, and
    a program of such kernels gives NumPy's results."""
    model = TREES["floating"]
    f = casadi_function(model, "aba", layout="numpy")
    X = batch_of(model, sjax.compile(model, "aba", route="trace"), n=6)
    rows = [jnp.asarray(x.T) for x in X]                  # per input: its entries as rows
    low = lowering.SXLowering(f, work=0)
    assert len(low.shared(6)) > 8
    as_row = lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.float64), (6,))   # noqa: E731
    one = low(rows)
    for group in (1, 3, 8):
        grouped = low.call_grouped(rows, {}, 6, as_row, group)
        close(jnp.stack([as_row(v) for v in grouped[0]]),
              jnp.stack([as_row(v) for v in one[0]]), what=f"kept values in groups of {group}")
    used = []
    real = lowering.SXLowering.call_grouped

    def spy(self, *args, **kwargs):
        used.append(len(self.shared(args[2])))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(lowering.SXLowering, "call_grouped", spy)
    monkeypatch.setattr(program, "PROGRAM_GROUP_MIN", 2)
    g = sjax.compile(model, "aba", route="program")
    check_against_numpy(model, g, batch_of(model, g), "program, kept values grouped",
                        single=False)
    assert used and min(used) >= 2


def test_program_rows_stacked_in_groups_on_small_batches(monkeypatch):
    """A step writing more than GROUP rows stacks them in kept groups of GROUP on batches of
    fewer than GROUPED_ROWS_BELOW states, as one stack on larger ones: NumPy's results either
    way."""
    model = TREES["floating"]
    monkeypatch.setattr(program, "GROUP", 2)
    monkeypatch.setattr(program, "GROUPED_ROWS_BELOW", 6)
    stacked = []
    real = program.rows_stacked

    def spy(rows, inputs, group=8):
        stacked.append((rows[0].shape[-1], len(rows), group))
        return real(rows, inputs, group)
    monkeypatch.setattr(program, "rows_stacked", spy)
    for n in (5, 7):
        stacked.clear()
        f = sjax.compile(model, "aba", route="program")
        check_against_numpy(model, f, batch_of(model, f, n=n), f"aba program, {n} states",
                            single=False)
        rows = [r for B, r, group in stacked if group == 2 and B == n]
        assert bool(rows) == (n < 6) and all(r > 2 for r in rows), stacked


def test_program_wrappers_compile_with_compiler_options(monkeypatch):
    """A program's batch and the functions that wrap it (checks, out=) compile with
    compiler_options()."""
    model = TREES["floating"]
    g = sjax.compile(model, "aba", route="program")
    assert g.batch.options == {"compiler_options": sjax.compiler_options()}
    monkeypatch.setattr(jitted, "_compiler_options", {"xla_no_such_option": True})
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_no_such_option"):
        sjax.compile(model, "aba", route="program").batch(*batch_of(model, g))


def test_auto_route_choice(monkeypatch):
    model = TREES["branched"]
    assert sjax.compile(model, "rnea").route == "graph"
    # every graph too large (its size measured: no work bound)
    monkeypatch.setattr(choose, "JAX", choose.Limits(max_unrolled=100, work_ratio=10 ** 6))
    f = sjax.compile(model, "rnea")
    assert f.route == "program" and "> 100 instructions" in f.route_reason
    assert "route='program'" in repr(f)
    check_against_numpy(model, f, batch_of(model, f), "auto program rnea")
    g = sjax.compile(model, "rnea_derivatives")            # not in PROGRAM_AUTO: traced
    assert g.route == "trace" and "> 100 instructions" in g.route_reason

    def my_tau(model, q, qd, qdd, *, backend=None):
        return sd.rnea(model, q, qd, qdd, backend=backend)
    assert sjax.compile(model, my_tau).route == "trace"          # not a registered algorithm


@pytest.mark.parametrize("route", ["graph", "program", "trace"])
def test_compiler_options_reach_xla_at_the_top_level_only(route, monkeypatch):
    """Calls from Python compile with symdyn.jax.compiler_options() (shown with an option XLA
    does not know: the call then fails in XLA), also through .lower().compile(); the same
    function inside the caller's jit / grad compiles with the enclosing function and works."""
    model = TREES["branched"]
    assert sjax.compiler_options() == jitted.COMPILER_OPTIONS       # this jaxlib knows them
    monkeypatch.setattr(jitted, "_compiler_options", {"xla_no_such_option": True})
    f = sjax.compile(model, "rnea", route=route)
    xs = batch_of(model, f)
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_no_such_option"):
        f.batch(*xs)
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_no_such_option"):
        f.batch.lower(*xs).compile()
    nested = jax.jit(lambda q, qd, qdd: f.batch(q, qd, qdd) * 2.0)(*xs)
    close(nested, 2.0 * np.asarray(jax.jit(f.batch.fn)(*xs)), what=f"{route} nested in jit")
    grad = jax.grad(lambda qd: jnp.sum(f.single(xs[0][0], qd, xs[2][0])))(jnp.asarray(xs[1][0]))
    close(grad, np.sum(sd.rnea_derivatives(model, xs[0][0], xs[1][0], xs[2][0])[1], axis=0),
          what=f"{route} grad")
    monkeypatch.setattr(jitted, "_compiler_options", None)
    f = sjax.compile(model, "rnea", route=route)
    check_against_numpy(model, f, xs, f"{route} with the options", single=False)


def test_unknown_compiler_options_are_dropped(monkeypatch):
    """A jaxlib that does not know an option of COMPILER_OPTIONS compiles without options."""
    monkeypatch.setattr(jitted, "COMPILER_OPTIONS", {"xla_no_such_option": True})
    monkeypatch.setattr(jitted, "_compiler_options", None)
    assert sjax.compiler_options() == {}
    model = TREES["branched"]
    f = sjax.compile(model, "crba", route="graph")
    check_against_numpy(model, f, batch_of(model, f), "graph crba without options", single=False)


def test_program_folds_constants_within_its_budget(monkeypatch):
    """route="program" folds the model's constants 0 and +-1 into its kernels (UR5: identity
    tree rotations, zero offsets) while the folded kernels stay within FOLD_MAX instructions,
    and reads them from the constant table beyond; both give NumPy's numbers."""
    from symdyn.codegen.functions import exact_rotations
    model = exact_rotations(sd.load_robot("ur5"))
    works = {}
    for fold_max, folded in ((routes.FOLD_MAX, True), (0, False)):
        monkeypatch.setattr(routes, "FOLD_MAX", fold_max)
        f = sjax.compile(model, "rnea", route="program")
        stats = routes.record(f).stats
        assert stats["fold"] is folded
        works[folded] = stats["work"]
        check_against_numpy(model, f, batch_of(model, f), f"ur5 rnea program fold={folded}",
                            single=folded)
    assert works[True] < 0.7 * works[False]


def test_jacfwd_through_graph_and_program_equals_idsva():
    model = TREES["helical"]                                     # q in coordinates
    rng = np.random.default_rng(3)
    q, qd, qdd = model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-2, 2, model.nv)
    dq_ref, dqd_ref = sd.rnea_derivatives(model, q, qd, qdd)
    for route in ("graph", "program"):
        f = sjax.compile(model, "rnea", route=route)
        dq, dqd = jax.jacfwd(f.single, argnums=(0, 1))(jnp.asarray(q), jnp.asarray(qd),
                                                       jnp.asarray(qdd))
        close(dq, dq_ref, what=f"{route} d tau / dq")
        close(dqd, dqd_ref, what=f"{route} d tau / dqd")
    # reverse mode through the program's scan: d/dqd_s of sum_s w_s . tau_s = dtau/dqd_s^T w_s
    f = sjax.compile(model, "rnea", route="program")
    Q = np.stack([model.random_q(rng) for _ in range(2)])
    QD, QDD, W = (rng.uniform(-1, 1, (2, model.nv)) for _ in range(3))
    grad = jax.grad(lambda v: jnp.sum(W * f.batch(jnp.asarray(Q), v, jnp.asarray(QDD))))(
        jnp.asarray(QD))
    for s in range(2):
        close(grad[s], sd.rnea_derivatives(model, Q[s], QD[s], QDD[s])[1].T @ W[s],
              what=f"grad state {s}")


def test_banded_graph_equals_one_band():
    model = TREES["branched"]
    f = casadi_function(model, "crba", layout="numpy")
    xs = [jnp.asarray(x) for x in batch_of(model, sjax.compile(model, "crba", route="trace"))]
    shape = [(model.nv, model.nv)]
    one = jax.jit(lowering.graph_batch(f, shape, band=10 ** 6))(*xs)
    for band in (1, 7):
        many = jax.jit(lowering.graph_batch(f, shape, band=band))(*xs)
        close(many[0], one[0], what=f"band {band}")
    ref = [sd.crba(model, *(x[s] for x in xs)) for s in range(xs[0].shape[0])]
    close(one[0], np.stack(ref), what="crba graph")


def test_grouped_values_equal_one_per_array():
    """Values computed once are written in groups of rows (one XLA kernel each): any group size,
    with bands or without, gives the numbers of one value per array (group=1) and NumPy's; the
    values of a group need none of each other, every kept value is in exactly one group."""
    model = TREES["branched"]
    f = casadi_function(model, "aba", layout="numpy")
    xs = [jnp.asarray(x) for x in batch_of(model, sjax.compile(model, "aba", route="trace"))]
    shape = [(model.nv,)]
    one = jax.jit(lowering.graph_batch(f, shape, group=1))(*xs)
    for group, band in ((3, 7), (8, 10 ** 6), (lowering.GROUP, lowering.BAND)):
        got = jax.jit(lowering.graph_batch(f, shape, band=band, group=group))(*xs)
        close(got[0], one[0], what=f"group {group} band {band}")
    ref = [sd.aba(model, *(x[s] for x in xs)) for s in range(xs[0].shape[0])]
    close(one[0], np.stack(ref), what="aba graph")
    low = lowering.SXLowering(f)
    targets = sorted({v for *_, v in low.outputs_at})
    plan = low.plan_groups(targets, low.trig_inputs, 2048, 8)
    grouped = [k for _, groups in plan for g in groups for k in g]
    assert grouped and all(len(g) <= 8 for _, groups in plan for g in groups)
    assert sorted(grouped) == sorted(set(grouped)) == sorted(
        k for k in low.shared(2048) if low._needed(targets, low.trig_inputs)[k])
    for _, groups in plan:
        for g in groups:
            for k in g:
                assert not set(g) - {k} & {a for a, need in enumerate(low._needed([k]))
                                           if need and a != k}, f"{k} needs its group's {g}"


def test_grouped_values_run_fewer_kernels():
    """XLA's CPU backend runs every fusion (and every unfused concatenation) as a kernel of its
    own; groups of 8 rows, and results gathered from them, run far fewer kernels than one value
    per array at 100 states (ur5 coriolis_matrix: 147 -> 74; panda christoffel: 506 -> 87)."""
    model = sd.load_robot("ur5")
    f = casadi_function(model, "coriolis_matrix", layout="numpy")
    xs = [jnp.zeros((100, f.size1_in(i))) for i in range(f.n_in())]
    shapes = [tuple(f.size_out(i)) for i in range(f.n_out())]
    kernels = []
    for group in (1, 8):
        text = jax.jit(lowering.graph_batch(f, shapes, group=group)).lower(
            *xs).compile().as_text()
        kernels.append(len(re.findall(r" (?:fusion|concatenate)\(", text)))
    assert kernels[1] <= 0.6 * kernels[0], kernels


@pytest.mark.parametrize("n", [3, 8, 9, 20, 29])
def test_stacked_rows_are_one_kernel(n):
    """More than 8 rows (g1's 29 joint angles) stacked as blocks of 8 divided by an opaque one:
    the same numbers as jnp.stack, and one kernel where XLA's CPU backend runs a plain stack of
    more than 8 rows as one kernel per row and a copy."""
    x = jnp.asarray(np.random.default_rng(n).normal(size=(5, 100)))

    def rows(x):
        return [x[i % 5] * (i + 1.5) - x[(i + 2) % 5] for i in range(n)]
    stacked = jax.jit(lambda x: lowering.rows_stacked(rows(x), [x]))
    plain = jax.jit(lambda x: jnp.stack(rows(x)))
    np.testing.assert_array_equal(np.asarray(stacked(x)), np.asarray(plain(x)))
    entry = [f.lower(x).compile().as_text().split("ENTRY", 1)[1] for f in (stacked, plain)]
    kernels = [len(re.findall(r" (?:fusion|concatenate|copy)\(", e)) for e in entry]
    assert kernels[0] == 1 and kernels[1] == (1 if n <= 8 else n + 1), kernels


def _elementwise_hlo_operations(f, min_cone, monkeypatch) -> int:
    """Arithmetic operations in XLA's optimized code of ``graph_batch(f)`` for 2048 states
    (compiled, not run) with shared values of cones of ``min_cone`` operations kept."""
    monkeypatch.setattr(lowering, "SHARED_MIN", min_cone)
    shapes = [tuple(f.size_out(i)) for i in range(f.n_out())]
    xs = [jnp.zeros((2048, f.size1_in(i))) for i in range(f.n_in())]
    text = jax.jit(lowering.graph_batch(f, shapes)).lower(*xs).compile().as_text()
    return len(re.findall(r"= f64\[2048\]\S* (?:multiply|add|subtract|divide|negate)\(", text))


def test_shared_values_are_computed_once(monkeypatch):
    """XLA duplicates cheap producers into each fusion using them; the lowering keeps the shared
    values of larger cones (a division by a one XLA cannot fold), so the optimized code holds
    about the graph's own operations, not a multiple of them, and gives the same numbers."""
    model = sd.load_robot("ur5")
    f = casadi_function(model, "coriolis_matrix", layout="numpy")
    low = lowering.SXLowering(f)
    assert low.shared(2048) and all(low.code[k][0] >= 0 for k in low.shared(2048))
    assert len(low.shared(10)) < len(low.shared(2048))    # small batches: larger cones only
    kept = _elementwise_hlo_operations(f, lowering.SHARED_MIN, monkeypatch)
    recomputed = _elementwise_hlo_operations(f, 10 ** 9, monkeypatch)
    assert kept <= 1.5 * f.n_instructions() < recomputed, (kept, f.n_instructions(), recomputed)
    monkeypatch.setattr(lowering, "SHARED_MIN", 4)
    monkeypatch.setattr(lowering, "SHARED_WORK", 0)    # every batch as a large one
    c = sjax.compile(model, "coriolis_matrix", route="graph")
    Q, QD = batch_of(model, c)
    for got, s in zip(c(Q, QD)[2], range(len(Q))):
        close(got, sd.coriolis_matrix(model, Q[s], QD[s])[2], what=f"C state {s}")


def test_shared_values_weighed_by_their_further_users():
    """On a small batch a shared value is kept where recomputing it for each further user would
    repeat enough work, (uses - 1) * cone >= SHARED_WORK / batch: a 10-operation chain used by
    20 products is kept at 100 states, the same chain used twice is not; on a large batch both
    are (cones of at least SHARED_MIN operations); the values stay the function's."""
    x = ca.SX.sym("x", 2)
    few, many = x[0], x[0]
    for i in range(5):                                   # cones of 10 operations each
        few = few * x[1] + (i + 1)
        many = many * x[1] - (i + 2)
    y = few * x[0] + few * x[1]
    z = sum(many * (x[0] + j) for j in range(1, 21))
    f = ca.Function("f", [x], [y, z])
    low = lowering.SXLowering(f)
    uses = Counter(a for op, args, _ in low.code if op >= 0 for a in args)
    [few_k] = [k for k, n in uses.items() if n == 2 and low.code[k][0] >= 0]
    [many_k] = [k for k, n in uses.items() if n == 20 and low.code[k][0] >= 0]
    assert lowering.SHARED_WORK // 100 > 2 * 10      # neither cone alone reaches it
    assert many_k in low.shared(100) and few_k not in low.shared(100)
    assert {few_k, many_k} <= low.shared(10 ** 4)
    xs = np.random.default_rng(3).uniform(-1, 1, (100, 2))
    got = jax.jit(lowering.graph_batch(f, [(1,), (1,)]))(jnp.asarray(xs))
    want = np.array([[float(v) for v in f(s)] for s in xs])
    close(np.hstack([np.asarray(g).reshape(100, 1) for g in got]), want, what="y, z")


@pytest.mark.parametrize("route", ["graph", "program"])
def test_large_batches_run_in_chunks(route, monkeypatch):
    """On a CPU, a batch of at least CHUNKS_MIN (programs) or CHUNKS_MIN_GRAPH chunks runs as a
    loop over chunks of equal size (one state more than the least chunked batch, in chunks of
    3: the last chunk overlapping), giving one pass's numbers, NumPy's; smaller batches, and
    batches traced for a GPU, run in one pass; reverse mode goes through the loop."""
    model = TREES["branched"]
    monkeypatch.setattr(chunks, f"CHUNK_{route.upper()}", 3)
    least = 3 * (chunks.CHUNKS_MIN_GRAPH if route == "graph" else chunks.CHUNKS_MIN)
    n_states = least + 1
    f = sjax.compile(model, "rnea", route=route)
    xs = batch_of(model, f, n=n_states, seed=7)
    loops = [f.batch.lower(*(x[:n] for x in xs)).as_text().count("stablehlo.while")
             for n in (n_states, least, least - 1)]
    assert loops[0] == loops[1], loops
    assert loops[1] == loops[2] + 1, loops
    monkeypatch.setattr(chunks, "on_cpu", lambda: False)     # as if traced for a GPU
    gpu = sjax.compile(model, "rnea", route=route)
    assert gpu.batch.lower(*xs).as_text().count("stablehlo.while") == loops[2]
    check_against_numpy(model, f, xs, f"chunked {route} rnea", single=False)
    one = lowering.graph_batch(casadi_function(model, "rnea", layout="numpy"),
                                   [(model.nv,)])
    W = np.random.default_rng(1).uniform(-1, 1, (n_states, model.nv))

    def loss(fn, qd):
        return jnp.sum(W * fn(jnp.asarray(xs[0]), qd, jnp.asarray(xs[2])))
    grad = jax.grad(lambda qd: loss(f.batch, qd))(jnp.asarray(xs[1]))
    close(grad, jax.grad(lambda qd: loss(lambda *a: one(*a)[0], qd))(jnp.asarray(xs[1])),
          what=f"chunked {route} grad")


def test_program_chunks_shrink_with_the_rows_its_results_are_gathered_from(monkeypatch):
    """program_chunk: CHUNK_PROGRAM states where the workspace rows a program's results are
    gathered from fit PROGRAM_CHUNK_BYTES, else the largest power of two of states that fits, at
    least CHUNK_PROGRAM_MIN; a compiled program runs in chunks of that size (from CHUNKS_MIN of
    them on), with NumPy's values."""
    B, top = chunks.PROGRAM_CHUNK_BYTES, chunks.CHUNK_PROGRAM
    assert chunks.program_chunk(1) == top
    assert chunks.program_chunk(B // (8 * top)) == top
    assert chunks.program_chunk(B // (8 * top) + 1) == top // 2
    assert chunks.program_chunk(B // (8 * 200)) == 128
    assert chunks.program_chunk(10 ** 9) == chunks.CHUNK_PROGRAM_MIN
    model = TREES["branched"]
    least = 2 * chunks.CHUNKS_MIN

    def loops(n: int) -> tuple:
        f = sjax.compile(model, "christoffel", route="program")
        xs = batch_of(model, f, n=n, seed=4)
        return f.batch.lower(*xs).as_text().count("stablehlo.while"), f, xs
    plain, _, _ = loops(least)
    monkeypatch.setattr(chunks, "PROGRAM_CHUNK_BYTES", 8)   # no rows fit: least chunk
    monkeypatch.setattr(chunks, "CHUNK_PROGRAM_MIN", 2)
    (fewer, _, _), (chunked, f, xs) = loops(least - 1), loops(least)
    assert fewer == plain and chunked == plain + 1, (plain, fewer, chunked)
    check_against_numpy(model, f, xs, "christoffel in chunks of 2", single=False)


@pytest.mark.parametrize("route", ["graph", "program"])
def test_chunked_batches_written_into_out(route, monkeypatch):
    """f(*xs, out=earlier): a chunked batch starts its loop from the donated arrays instead of
    zeros (no result-sized fill in the function: every entry is overwritten by a chunk, the last
    overlapping); the values are those of fresh calls (to rounding), call after call, and the
    donated arrays are gone."""
    model = TREES["floating"]
    monkeypatch.setattr(chunks, f"CHUNK_{route.upper()}", 3)
    least = 3 * (chunks.CHUNKS_MIN_GRAPH if route == "graph" else chunks.CHUNKS_MIN)
    f = sjax.compile(model, "coriolis_matrix", route=route)
    batches = [batch_of(model, f, n=least + 1, seed=s) for s in (1, 2, 3)]
    out = f(*batches[0])
    for k in range(1, 5):
        xs = batches[k % 3]
        want = f(*xs)
        given = out
        out = f(*xs, out=given)
        assert all(a.is_deleted() for a in given)
        for g, w in zip(out, want):          # two executables: equal to rounding (an entry left
            np.testing.assert_allclose(      # from another batch would differ by O(1))
                np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-13)
    assert f._into._cache_size() == 1
    shapes = [tuple(a.shape) for a in out]
    sets = [jnp.full(s, np.nan) for s in shapes]

    def fills(traced) -> list[str]:         # results-sized broadcasts (jnp.zeros of a result)
        sized = [f"f64[{','.join(map(str, s))}] = broadcast_in_dim" for s in shapes]
        return [line for line in str(traced.jaxpr).splitlines() if any(z in line for z in sized)]
    assert not fills(f._into.trace(*batches[0], *sets))
    assert fills(jax.jit(f.batch.fn).trace(*batches[0]))     # without a set: the zero fill
    chunked = chunks.in_chunks(lambda x: (2 * x,), [(2,)], 3)
    close(jax.jit(chunked)(jnp.ones((13, 2)), out=(jnp.full((13, 2), np.nan),))[0],
          np.full((13, 2), 2.0), what="written into a NaN set")
    with pytest.raises(ValueError, match="shapes"):
        chunked(jnp.ones((13, 2)), out=(jnp.zeros((13, 3)),))


def test_program_writes_into_a_set_without_its_zero_entries(monkeypatch):
    """Given a result set (zeros, or earlier results: what out= donates), a program
    writes only its boxes of entries that are not always zero, in one pass and in chunks: the
    values of fresh calls call after call, and a set's entries outside the boxes left as they
    were (so that a NaN set shows which: exactly entries that are zero for every state)."""
    model = TREES["branched"]                # christoffel: 3 in 4 entries always zero
    monkeypatch.setattr(chunks, "CHUNK_PROGRAM", 3)
    f = sjax.compile(model, "christoffel", route="program")
    plain = sjax.compile(model, "christoffel", route="program")
    for n in (7, 13):                        # one pass (< 4 chunks of 3), chunks (overlapping)
        batches = [batch_of(model, f, n=n, seed=s) for s in (1, 2, 3)]
        got = f(*batches[0])
        for k in range(1, 4):
            xs = batches[k % 3]
            got = f(*xs, out=got)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(plain(*xs)))
        nan = jax.jit(f.batch.fn)(*batches[0], out=(jnp.full((n,) + (model.nv,) * 3, np.nan),))
        skipped = np.isnan(np.asarray(nan))
        assert skipped.any() and not skipped.all()
        zero = np.all([np.asarray(plain(*b)) == 0 for b in batches], axis=0)
        assert np.all(zero[skipped])
        close(np.asarray(nan)[~skipped], np.asarray(plain(*batches[0]))[~skipped],
              what="the entries written")
    boxes = program._boxes(np.eye(4, dtype=bool).reshape(2, 2, 4))
    assert boxes == [((0, 0, 0), (1, 2, 2)), ((1, 0, 2), (1, 2, 2))]
    monkeypatch.setattr(program, "BOXES_MAX", 1)   # too many boxes: one over the result
    assert program._boxes(np.eye(4, dtype=bool).reshape(2, 2, 4)) == [((0, 0, 0), (2, 2, 4))]


def test_lowering_of_single_operations():
    x = ca.SX.sym("x", 2)
    f = ca.Function("f", [x], [ca.erf(x[0]) + x[1]])
    with pytest.raises(lowering.LoweringError, match="OP_ERF"):
        lowering.SXLowering(f)
    g = ca.Function("g", [x], [ca.sin(x[0]) * x[1], x[0] / x[1],
                               ca.if_else(x[0] < 0.5, 2 * x[0], ca.atan2(x[1], x[0]))])
    lowered = lowering.graph_function(g, [(), (), ()])
    for x0 in (0.25, 0.75):                    # both sides of the if_else, values and gradients
        point = jnp.asarray([x0, 2.0])
        for got, want in zip(lowered(point), g(np.asarray(point))):
            close(got, float(want))
        jac = ca.Function("j", [x], [ca.jacobian(g(x)[2], x)])(np.asarray(point))
        close(jax.grad(lambda p: lowered(p)[2])(point), np.asarray(jac).ravel())


def test_route_errors():
    model = serial_chain(3, seed=1)
    with pytest.raises(ValueError, match="unknown route 'fast'"):
        sjax.compile(model, "rnea", route="fast")
    with pytest.raises(ValueError, match="route='program' is not available"):
        sjax.compile(model, "aba_derivatives", route="program", method="dmm")
    with pytest.raises(ValueError, match="registered algorithms"):
        sjax.compile(model, lambda model, q, *, backend=None: q, route="graph")
    f = sjax.compile(model, "rnea", route="graph")
    q = np.zeros(3)
    with pytest.raises(BackendError, match="float32"):
        f.single(jnp.asarray(q, jnp.float32), q, q)
    with pytest.raises(ValueError, match=r"qd must have shape \(3,\)"):
        f.single(q, np.zeros(4), q)
    with pytest.raises(ValueError, match=r"shape \(batch, 3\)"):
        f(np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(BackendError, match="float32"):        # NumPy float32 too
        f(np.zeros((2, 3), np.float32), np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"qd\[1\] contains NaN"):
        f(np.zeros((2, 3)), np.array([[0.0, 0, 0], [0, np.nan, 0]]), np.zeros((2, 3)))
