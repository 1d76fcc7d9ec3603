"""The recursion-keeping compiled form (symdyn.codegen.recursive): the recorded program equals
NumPy on every test tree (run in Python and compiled), its size does not grow with N, its
workspace holds only live values, and the form choice is validated and recorded."""
from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import build
from symdyn.codegen.functions import exact_rotations
from symdyn.codegen.recursive import (AUTO_CALL_COST, AUTO_COMPARE_MIN, AUTO_MAX_UNROLLED,
                                      AUTO_WORK_PER_INSTRUCTION, AUTO_WORK_RATIO,
                                      RECURSIVE_ALGORITHMS, OverBudget,
                                      choose_by_size, choose_form, evaluate, record)
from symdyn.models import serial_chain

from conftest import (MODEL_NAMES, MODELS, model_for, random_forces, random_state,
                      requires_cc, run)

ARM = MODELS["floating"].replace(armature=np.linspace(0.1, 0.5, MODELS["floating"].nv))
# armature 0 and 1 on some joints: folded literals in the armature's diagonal too
ARM_PANDA = exact_rotations(sd.load_robot("panda")).replace(
    armature=[0.0, 1.0, 0.3, 0.0, 1.0, 0.2, 0.1, 0.0, 0.0])
# the options the recursive form records with (symdyn.codegen asks for them explicitly): "aza"
# is aba_derivatives' method made of steps
OPTIONS = {"aba_derivatives": {"method": "aza"}}
# the first-order algorithms run on every test tree; the second-order ones (recorded in seconds,
# not milliseconds) on one tree each way below
FIRST_ORDER = [a for a in RECURSIVE_ALGORITHMS if "second" not in a
               and a != "constraint_dynamics_derivatives"]   # contacts: test_codegen_contact
SECOND_ORDER = [a for a in RECURSIVE_ALGORITHMS if "second" in a]


def _stacked_forces(model):
    """random_forces stacked as compiled functions take them (None: zeros)."""
    return np.concatenate([np.zeros(6) if f is None else f for f in random_forces(model)])


def _reference(model, alg, q, qd, qdd):
    fn = getattr(sd, alg)
    args = {"generalized_gravity_derivatives": (q,),
            "static_torque_derivatives": (q, _stacked_forces(model)),
            "rnea": (q, qd, qdd), "crba": (q,), "aba": (q, qd, qdd),
            "nonlinear_effects": (q, qd), "gravity_vector": (q,), "coriolis_matrix": (q, qd),
            "christoffel": (q,), "rnea_derivatives": (q, qd, qdd),
            "aba_derivatives": (q, qd, qdd), "rnea_second_derivatives": (q, qd, qdd),
            "aba_second_derivatives": (q, qd, qdd)}[alg]
    out = fn(model, *args)
    return (list(out) if isinstance(out, tuple) else [out]), args


@pytest.mark.parametrize("alg", FIRST_ORDER)
@pytest.mark.parametrize("name", [*MODELS, "armature"])
def test_recorded_program_equals_numpy(name, alg):
    model = ARM if name == "armature" else MODELS[name]
    q, qd, qdd = random_state(model, seed=3)
    ref, args = _reference(model, alg, q, qd, qdd)
    prog = record(model, getattr(sd, alg), [len(a) for a in args], name=f"t_{alg}",
                  **OPTIONS.get(alg, {}))
    for out, r in zip(evaluate(prog, *args), ref, strict=True):
        np.testing.assert_allclose(out.reshape(np.shape(r)), r, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("frame", ["body", "root"])
@pytest.mark.parametrize("factorization", ["christoffel", "simple"])
@pytest.mark.parametrize("name", ["mixed", "floating"])
def test_recorded_coriolis_matrix_in_both_frames(name, frame, factorization):
    model = MODELS[name]
    q, qd, _ = random_state(model, seed=4)
    ref = sd.coriolis_matrix(model, q, qd, factorization, frame=frame)

    def alg(m, q, qd, backend):
        return sd.coriolis_matrix(m, q, qd, factorization, frame=frame, backend=backend)

    prog = record(model, alg, [model.nq, model.nv], name="t")
    for out, r in zip(evaluate(prog, q, qd), ref, strict=True):
        np.testing.assert_allclose(out, r, rtol=1e-12, atol=1e-10)


def test_kernels_do_not_grow_with_the_number_of_bodies():
    """Bodies share kernels by joint kind (x, y, z or a general axis read from the table): once
    every pair of kinds has occurred, more bodies add calls, not kernels."""
    sizes: dict = {}
    for n in (40, 120, 240):
        model = serial_chain(n, seed=1)
        q = model.random_q(0)
        sizes[n] = record(model, sd.crba, [len(q)], name="t").stats
    assert sizes[40]["n_kernels"] <= sizes[120]["n_kernels"] == sizes[240]["n_kernels"] <= 60
    assert sizes[120]["n_instructions"] == sizes[240]["n_instructions"]
    assert sizes[240]["n_calls"] > 3 * sizes[120]["n_calls"]


def test_aba_derivatives_kernels_do_not_grow_with_the_number_of_bodies():
    """aba_derivatives (AZA on per-body column chunks): more bodies add calls, not kernels
    (before fusion; fused runs of 2..FUSE calls add at most FUSE - 1 variants of a kernel);
    the recorded program still equals NumPy."""
    sizes: dict = {}
    for n in (12, 24, 48):
        model = serial_chain(n, seed=1)
        q, qd, tau = random_state(model, seed=1)
        prog = record(model, sd.aba_derivatives, [model.nq, model.nv, model.nv], name="t",
                      fuse=1, method="aza")
        sizes[n] = prog.stats
    for out, r in zip(evaluate(prog, q, qd, tau), sd.aba_derivatives(model, q, qd, tau),
                      strict=True):
        np.testing.assert_allclose(out, r, rtol=1e-10, atol=1e-9)
    assert sizes[24]["n_kernels"] == sizes[48]["n_kernels"] <= 80
    assert sizes[24]["n_instructions"] == sizes[48]["n_instructions"]
    assert sizes[48]["n_calls"] > 3 * sizes[24]["n_calls"]


def test_recorded_aba_derivatives_with_external_forces():
    """Body forces (numbers) are literals of the kernels; the closed-form columns of a free
    root hold with them."""
    model = MODELS["floating"]
    forces = random_forces(model)
    q, qd, tau = random_state(model, seed=8)
    prog = record(model, lambda m, q, qd, tau, backend: sd.aba_derivatives(
        m, q, qd, tau, forces, method="aza", backend=backend), [model.nq, model.nv, model.nv],
        name="t")
    for out, r in zip(evaluate(prog, q, qd, tau), sd.aba_derivatives(model, q, qd, tau, forces),
                      strict=True):
        np.testing.assert_allclose(out, r, rtol=1e-12, atol=1e-10)


def test_workspace_holds_only_live_values():
    """crba computes O(N^2) force blocks but keeps only M's entries and the blocks in flight."""
    model = serial_chain(40, seed=1)
    prog = record(model, sd.crba, [model.nq], name="t")
    n_entries = model.nv * (model.nv + 1) // 2
    assert prog.workspace < n_entries + 60 * model.N   # without reuse: > 7 * n_entries
    q = model.random_q(1)
    np.testing.assert_allclose(evaluate(prog, q)[0], sd.crba(model, q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("alg", FIRST_ORDER)
def test_folded_constants_give_the_same_results_with_less_work(alg):
    """fold=True: the model's constants 0 and +-1 (Panda's tree rotations by +-pi/2, its zero
    offsets) become literals of the kernels; the program runs fewer operations, same numbers."""
    model = ARM_PANDA if alg == "crba" else exact_rotations(sd.load_robot("panda"))
    q, qd, qdd = random_state(model, seed=5)
    ref, args = _reference(model, alg, q, qd, qdd)
    progs = {fold: record(model, getattr(sd, alg), [len(a) for a in args], name="t", fold=fold,
                          **OPTIONS.get(alg, {}))
             for fold in (False, True)}
    assert progs[True].stats["fold"] and not progs[False].stats["fold"]
    # (the derivatives' work is mostly products of the state's terms: 0.85x, the others 0.46-0.62x)
    assert progs[True].stats["work"] < 0.9 * progs[False].stats["work"]
    for out, r in zip(evaluate(progs[True], *args), ref, strict=True):
        np.testing.assert_allclose(out.reshape(np.shape(r)), r, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("alg", ["rnea", "christoffel"])
def test_instruction_budget_stops_exactly_past_the_program_size(alg):
    """max_instructions: with fuse=1 the kernels traced with results are the program's, so the
    recording stops (OverBudget) exactly when the finished program would hold more."""
    model = exact_rotations(sd.load_robot("panda"))
    q, qd, qdd = random_state(model, seed=5)
    _, args = _reference(model, alg, q, qd, qdd)
    sizes = [len(a) for a in args]
    n = record(model, getattr(sd, alg), sizes, name="t", fuse=1, fold=True).stats[
        "n_instructions"]
    within = record(model, getattr(sd, alg), sizes, name="t", fuse=1, fold=True,
                    max_instructions=n)
    assert within.stats["n_instructions"] == n
    with pytest.raises(OverBudget, match=f"exceed {n - 1} SX instructions"):
        record(model, getattr(sd, alg), sizes, name="t", fuse=1, fold=True,
               max_instructions=n - 1)


def test_constant_external_forces_are_baked_in():
    """Numbers passed to a recorded algorithm (here body forces) are literals of the kernels."""
    model = MODELS["branched"]
    forces = random_forces(model)
    q, qd, qdd = random_state(model, seed=2)
    prog = record(model, lambda m, q, qd, qdd, backend: sd.rnea(m, q, qd, qdd, forces,
                                                                backend=backend),
                  [model.nq, model.nv, model.nv], name="t")
    np.testing.assert_allclose(evaluate(prog, q, qd, qdd)[0].ravel(),
                               sd.rnea(model, q, qd, qdd, forces), rtol=1e-12, atol=1e-10)


def test_algorithms_outside_steps_are_refused_clearly():
    model = MODELS["serial"]
    with pytest.raises(TypeError, match="arithmetic on a recorded value outside a step"):
        record(model, sd.coriolis_transpose_product, [model.nq, model.nv], name="t")


@pytest.mark.parametrize("method", ["dmm", "ltdl", "auto"])
def test_aba_derivatives_methods_outside_steps_fail_in_the_recorder(method):
    """aba_derivatives runs the method asked for on every backend; the recorder refuses the
    ones that compute outside steps ("auto" is "dmm" below 20 dof) with its own error."""
    small = serial_chain(5, seed=1)
    with pytest.raises(TypeError, match="arithmetic on a recorded value outside a step"):
        record(small, lambda m, q, qd, tau, backend: sd.aba_derivatives(
            m, q, qd, tau, method=method, backend=backend), [small.nq, small.nv, small.nv],
            name="t")


def test_form_choice():
    small = serial_chain(5, seed=1)
    assert choose_form(small, "crba") == ("measure", "auto")
    assert choose_form(small, "aba_derivatives") == ("measure", "auto")
    assert choose_form(small, "aba_derivatives", options={"method": "aza"})[0] == "measure"
    assert choose_form(small, "aba_derivatives", options={"method": "ltdl"}) == \
        ("unrolled", "no recursive form with method='ltdl'")
    assert choose_form(small, "crba", parameters="inertial")[0] == "unrolled"
    assert choose_form(small, "crba", "recursive") == ("recursive", "asked for")
    with pytest.raises(ValueError, match="not available"):
        choose_form(small, "aba_derivatives", "recursive", options={"method": "dmm"})
    with pytest.raises(ValueError, match="unknown form"):
        choose_form(small, "crba", "rolled")


def test_choose_by_size():
    """Unrolled while its graph is within AUTO_MAX_UNROLLED instructions, unless it has at
    least AUTO_COMPARE_MIN and the recorded work, plus AUTO_CALL_COST per step call, per unrolled
    instruction is at most AUTO_WORK_PER_INSTRUCTION; a large recorded program skips tracing the unrolled graph."""
    small = serial_chain(4, seed=1)
    prog = record(small, sd.crba, [small.nq], name="t")
    traced = []

    def trace(n):
        return lambda: traced.append(n) or type("F", (), {"n_instructions": lambda self: n})()

    assert choose_by_size(prog, trace(AUTO_COMPARE_MIN - 1))[0] == "unrolled"
    assert choose_by_size(prog, trace(AUTO_MAX_UNROLLED + 1))[0] == "recursive"
    # from AUTO_COMPARE_MIN on, by recorded work per unrolled instruction
    n0 = AUTO_COMPARE_MIN
    for work, form in ((AUTO_WORK_PER_INSTRUCTION * n0, "recursive"),
                       (AUTO_WORK_PER_INSTRUCTION * n0 + 1, "unrolled")):
        stub = type("P", (), {"stats": {"work": work}})()
        assert choose_by_size(stub, trace(n0))[0] == form
    # each step call counts AUTO_CALL_COST operations on top of the work
    work = AUTO_WORK_PER_INSTRUCTION * n0 - 10 * AUTO_CALL_COST
    for calls, form in ((10, "recursive"), (11, "unrolled")):
        stub = type("P", (), {"stats": {"work": work, "n_calls": calls}})()
        assert choose_by_size(stub, trace(n0))[0] == form
    stub = type("P", (), {"stats": {"work": 2 * AUTO_MAX_UNROLLED}})()
    assert choose_by_size(stub, trace(AUTO_MAX_UNROLLED))[0] == "unrolled"
    big = serial_chain(40, seed=1)
    prog = record(big, sd.christoffel, [big.nq], name="t")
    assert prog.stats["work"] > AUTO_WORK_RATIO * AUTO_MAX_UNROLLED
    n = len(traced)
    assert choose_by_size(prog, trace(0))[0] == "recursive" and len(traced) == n


@requires_cc
@pytest.mark.parametrize("name", ["floating", "mixed", "armature"])
def test_compiled_recursive_equals_numpy(name, tmp_path):
    model = ARM if name == "armature" else MODELS[name]
    lib = build(model, FIRST_ORDER, form="recursive", cache_dir=tmp_path,
                opt="-O1", progress=False)
    for fd in lib.manifest["functions"]:
        assert fd["form"] == "recursive" and fd["recursive"]["n_kernels"] > 0
    rng = np.random.default_rng(0)
    states = [random_state(model, seed=s) for s in range(3)]
    for q, qd, qdd in states:
        for alg in FIRST_ORDER:
            ref, args = _reference(model, alg, q, qd, qdd)
            out = getattr(lib, alg)(*args)
            for o, r in zip(out if isinstance(out, tuple) else [out], ref, strict=True):
                np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-10)
    Q = np.array([s[0] for s in states])
    QD = rng.uniform(-1, 1, (3, model.nv))
    M = lib.crba.batch(Q)
    tau = lib.rnea.batch(Q, QD, QD)
    for k in range(3):
        np.testing.assert_allclose(M[k], sd.crba(model, Q[k]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tau[k], sd.rnea(model, Q[k], QD[k], QD[k]), rtol=1e-12,
                                   atol=1e-10)
    bad = Q[0].copy()
    bad[0] = np.nan
    with pytest.raises(ValueError):
        lib.crba(bad)


@requires_cc
def test_auto_form_recorded_in_manifest(tmp_path):
    small = serial_chain(3, seed=1)
    lib = build(small, ["rnea"], cache_dir=tmp_path, opt="-O1", progress=False)
    fd = lib.manifest["functions"][0]
    assert fd["form"] == "unrolled" and fd["form_reason"].startswith("auto: unrolled graph")


@pytest.mark.parametrize("backend", ["numpy", "casadi", "sympy"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_crba_root_frame_equals_body_frame(backend, name):
    """crba(frame="root") (composites as sums in root coordinates) is the same M."""
    model = model_for(backend, name)
    q, _, _ = random_state(model, seed=5)
    ref = sd.crba(model, q)
    M = run(backend, lambda m, q: sd.crba(m, q, frame="root", backend=backend), model, q)
    np.testing.assert_allclose(M, ref, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="frame"):
        sd.crba(model, q, frame="world")


@pytest.mark.parametrize("backend", ["numpy", "casadi", "sympy"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_christoffel_root_frame_equals_body_frame(backend, name):
    """christoffel(frame="root") (no transforms below the root poses) gives the same symbols,
    for every joint kind (planar rates of Phi moved to root coordinates)."""
    model = model_for(backend, name)
    q, _, _ = random_state(model, seed=6)
    ref = sd.christoffel(model, q)
    G = run(backend, lambda m, q: sd.christoffel(m, q, frame="root", backend=backend), model, q)
    np.testing.assert_allclose(G, ref, rtol=1e-10, atol=1e-10)


@requires_cc
def test_tables_as_byte_strings(tmp_path, monkeypatch):
    """Large tables (program, constants, output maps) are written as byte strings (gcc would
    need gigabytes for initializer lists of a million numbers); force that path on a small
    model and compare with NumPy."""
    from symdyn.codegen.recursive import csource

    monkeypatch.setattr(csource, "_BLOB_MIN", 1)
    model = MODELS["floating"]
    lib = build(model, ["christoffel", "coriolis_matrix"], form="recursive", cache_dir=tmp_path,
                opt="-O1", progress=False)
    src = (lib.path / lib.manifest["functions"][0]["source"]).read_text()
    assert "char bytes[" in src
    q, qd, _ = random_state(model, seed=7)
    np.testing.assert_allclose(lib.christoffel(q), sd.christoffel(model, q), rtol=1e-12,
                               atol=1e-10)
    for a, b in zip(lib.coriolis_matrix(q, qd), sd.coriolis_matrix(model, q, qd)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-10)


def test_recording_backend_records_the_backend_functions():
    """The recording backend is a whole backend: its functions that compute (trigonometry, dot,
    inv, ...) record one kernel each outside steps, and values known while recording answer
    is_zero/to_numpy; the program equals the same calls on NumPy."""
    model = MODELS["serial"]

    def alg(m, q, backend):
        B = backend
        x0, x1 = B.rows(q, 0, 1), B.rows(q, 1, 2)
        x = B.rows(q, 0, 3)
        assert B.is_zero(B.zeros(2, 2)) and not B.is_zero(x)
        np.testing.assert_array_equal(B.to_numpy(B.eye(2)), np.eye(2))
        scalars = B.vector([B.sin(x0), B.cos(x1), B.sqrt(B.dot(x, x)), B.sign(x1),
                            B.sin_over_x(B.dot(x, x)), 2.0])
        return scalars, B.inv(B.matrix([[x0, 1.0], [0.0, x1]])), B.skew(x)

    q = np.array([0.3, -1.2, 0.7, 0.1, 0.2, 0.4])[:model.nq]
    prog = record(model, alg, [model.nq], name="t")
    a, b, c = q[0], q[1], q[:3]
    n2 = float(c @ c)
    expect = [np.array([[np.sin(a)], [np.cos(b)], [np.sqrt(n2)], [np.sign(b)],
                        [np.sin(np.sqrt(n2)) / np.sqrt(n2)], [2.0]]),
              np.linalg.inv([[a, 1.0], [0.0, b]]),
              np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])]
    for out, r in zip(evaluate(prog, q), expect, strict=True):
        np.testing.assert_allclose(out, r, rtol=1e-12, atol=1e-14)
    assert prog.stats["n_kernels"] >= 7


@pytest.mark.parametrize("alg", ["crba", "christoffel", "aba_derivatives"])
def test_lowered_graph_runs_the_program_as_the_c_loop_does(alg):
    """recursive.lower inlines the program C runs (fused calls, results written by kernels,
    reused workspace) into one graph with the same values as evaluate."""
    import casadi as ca

    from symdyn.codegen.recursive import lower

    model = MODELS["branched"]
    q, qd, qdd = random_state(model, seed=6)
    _, args = _reference(model, alg, q, qd, qdd)
    options = OPTIONS.get(alg, {"frame": "root"})     # root: ancestor loops fuse
    prog = record(model, getattr(sd, alg), [len(a) for a in args], name=f"t_{alg}", **options)
    assert any(k.out_tree is None for k in prog.kernels)        # fused variants are called
    syms = [ca.SX.sym(f"x{i}", len(a)) for i, a in enumerate(args)]
    graph = ca.Function("g", syms, [ca.vertcat(*e) for e in lower(prog, syms)])
    got = graph(*args)
    for g, want in zip(got if isinstance(got, tuple) else [got], evaluate(prog, *args)):
        np.testing.assert_allclose(np.asarray(g).reshape(-1), want.reshape(-1), rtol=1e-13,
                                   atol=1e-13)


@pytest.mark.parametrize("alg", ["rnea", "crba", "christoffel", "aba"])
def test_lowered_graph_is_no_larger_than_tracing_the_algorithm(alg):
    """The unrolled graph comes from the recorded program (every kernel inlined, the constant
    table folded in), and is never larger than the algorithm traced on the CasADi backend."""
    import casadi as ca

    from symdyn.codegen import casadi_function
    from symdyn.codegen.functions import algorithm_spec

    model = exact_rotations(sd.load_robot("panda"))
    spec = algorithm_spec(alg)
    syms = [ca.SX.sym(n, s) for n, s in zip(spec.input_names, spec.input_sizes(model))]
    opts = {"frame": "body"} if alg in ("crba", "christoffel") else {}
    raw = spec.function(model, *syms, backend="casadi", **opts)
    pages = sd.get_backend("casadi").pages(raw) if alg == "christoffel" else [raw]
    traced = ca.Function("t", syms, [ca.vec(p) for p in pages], {"cse": True})
    lowered = casadi_function(model, alg, layout="numpy", **opts)
    assert lowered.n_instructions() <= traced.n_instructions()


def test_algorithms_without_steps_are_recorded_as_one_kernel():
    """Frame functions, parameters= and aba_derivatives' "ltdl" have no steps: the whole
    algorithm is one kernel of the program, lowered like any other."""
    from symdyn.codegen.functions import algorithm_spec, record_algorithm

    model = MODELS["branched"]
    q, qd, qdd = random_state(model, seed=7)
    for alg, options, args, want in [
            ("frame_jacobian", {"frame": model.N - 1, "reference": "world"}, (q,),
             [sd.frame_jacobian(model, q, model.N - 1, "world")]),
            ("aba_derivatives", {"method": "ltdl"}, (q, qd, qdd),
             list(sd.aba_derivatives(model, q, qd, qdd, method="ltdl")))]:
        prog, shapes = record_algorithm(model, algorithm_spec(alg), options, name="t")
        assert len(prog.instructions) == 1 and len(prog.used) == 1
        for got, w, s in zip(evaluate(prog, *args), want, shapes.values()):
            assert s == np.shape(w)
            np.testing.assert_allclose(got.reshape(s), w, rtol=1e-12, atol=1e-12)


@pytest.mark.slow          # recording 60-120 kernels, and gcc over them
@pytest.mark.parametrize("alg", SECOND_ORDER)
def test_second_order_derivatives_record_and_compile_in_the_recursive_form(alg, tmp_path):
    """SO-IDSVA and its forward-dynamics route are made of steps: recorded, their program equals
    NumPy on a floating-base tree with a spherical joint, and so does its compiled C loop."""
    model = MODELS["floating"]
    q, qd, qdd = random_state(model, seed=8)
    ref, args = _reference(model, alg, q, qd, qdd)
    prog = record(model, getattr(sd, alg), [len(a) for a in args], name=f"t_{alg}")
    for out, r in zip(evaluate(prog, *args), ref, strict=True):
        np.testing.assert_allclose(out.reshape(np.shape(r)), r, rtol=1e-12, atol=1e-10)
    if alg == "rnea_second_derivatives":
        lib = build(model, [alg], form="recursive", cache_dir=tmp_path, opt="-O1",
                    progress=False)
        assert lib.manifest["functions"][0]["form"] == "recursive"
        for o, r in zip(lib[alg](*args), ref, strict=True):
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-10)


@requires_cc
def test_dense_steps_gather_their_arguments_and_share_kernels(tmp_path):
    """The products of aba_second_derivatives read pages of tensors assembled from many steps
    (literal zeros, negated entries): recorded with gathers, each argument is first copied into
    a block of its own, so that calls of the same shapes share a kernel (without: one kernel
    per call pattern). The program, and its compiled C loop (scalar and every vector target of
    this CPU, signed gathers included), equal NumPy."""
    from symdyn.codegen import simd
    from symdyn.codegen.compiler import compiler_info

    model = serial_chain(7, seed=3)
    q, qd, tau = random_state(model, seed=2)
    sizes = [model.nq, model.nv, model.nv]
    ref = sd.aba_second_derivatives(model, q, qd, tau)
    plain = record(model, sd.aba_second_derivatives, sizes, name="t", fuse=1, gather=False)
    prog = record(model, sd.aba_second_derivatives, sizes, name="t", fuse=1)
    assert not plain.gathers and prog.stats["n_gathers"] == len(prog.gathers) > 0
    assert any((g < 0).any() for g in prog.gathers)               # a signed gather occurs
    gathered = {k for k, _, _ in prog.instructions if k >= 0
                and prog.kernels[k].step in ("product", "negated_sum")}
    by_call = {k for k, _, _ in plain.instructions if plain.kernels[k].step in ("product",
                                                                                 "negated_sum")}
    assert len(gathered) <= 8 < len(by_call)
    products = [prog.kernels[k] for k in gathered if prog.kernels[k].step == "product"]
    assert products and all(kern.native == ("matmul", *kern.native[1:3], 7, 7, 7)
                            for kern in products)          # native product loops in C
    assert not any(kern.native for kern in plain.kernels)  # gather=False: traced kernels
    assert prog.stats["n_instructions"] < 0.75 * plain.stats["n_instructions"]
    for out, r in zip(evaluate(prog, q, qd, tau), ref, strict=True):
        np.testing.assert_allclose(out, r, rtol=1e-12, atol=1e-10)
    targets = simd.host_targets(compiler_info()[0])
    lib = build(model, ["aba_second_derivatives"], form="recursive", cache_dir=tmp_path,
                opt="-O1", simd=targets, progress=False)
    f = lib["aba_second_derivatives"]
    for o, r in zip(f(q, qd, tau), ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-10)
    rng = np.random.default_rng(4)
    Q = np.array([model.random_q(rng) for _ in range(11)])
    V, T = rng.uniform(-1, 1, (2, 11, model.nv))
    for batch in (f.batch(Q, V, T), f.batch(Q, V, T, simd=False)):
        for b in (0, 7, 10):
            for o, r in zip(batch, sd.aba_second_derivatives(model, Q[b], V[b], T[b])):
                np.testing.assert_allclose(o[b], r, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("m, k, n", [(3, 45, 45), (5, 2, 3), (1, 7, 37), (4, 9, 1)])
def test_native_products_equal_numpy(tmp_path, m, k, n):
    """A product step (symdyn.algorithms.dense.product) of gathered arguments is a native loop
    of the C program: every path of it (blocks of four vectors, single vectors, scalar
    columns) equals NumPy; the traced kernel (evaluate) too."""
    import ctypes
    import subprocess

    from symdyn.algorithms.dense import product
    from symdyn.codegen.compiler import compiler_info, native_target
    from symdyn.codegen.recursive import write_c

    def alg(model, a, x, *, backend):
        B = backend
        A = B.hcat([B.rows(a, j * m, (j + 1) * m) for j in range(k)])      # a.reshape(k, m).T
        X = B.hcat([B.rows(x, j * k, (j + 1) * k) for j in range(n)])      # x.reshape(n, k).T
        return product(B, A, X)

    prog = record(None, alg, [m * k, k * n], name="mm")
    (kern,) = prog.kernels
    assert kern.native[0] == "matmul" and kern.native[3:] == (m, k, n)
    rng = np.random.default_rng(m * k * n)
    a, x = rng.standard_normal(m * k), rng.standard_normal(k * n)
    ref = a.reshape(k, m).T @ x.reshape(n, k).T
    np.testing.assert_allclose(evaluate(prog, a, x)[0], ref, rtol=1e-13, atol=1e-13)
    write_c(prog, "mm", tmp_path)
    cc = compiler_info()[0]
    lib = tmp_path / "mm.so"
    subprocess.run([cc, "-O2", *native_target(cc)[0], "-shared", "-fPIC", str(tmp_path / "mm.c"),
                    "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    sizes = [ctypes.c_longlong() for _ in range(4)]
    so.mm_work(*[ctypes.byref(v) for v in sizes])
    w = np.zeros(max(1, sizes[3].value))
    iw = (ctypes.c_longlong * max(1, sizes[2].value))()
    out = np.full(m * n, np.nan)
    dbl = ctypes.POINTER(ctypes.c_double)
    args = (dbl * 2)(a.ctypes.data_as(dbl), x.ctypes.data_as(dbl))
    res = (dbl * 1)(out.ctypes.data_as(dbl))
    assert so.mm(args, res, iw, w.ctypes.data_as(dbl), 0) == 0
    out = out.reshape(m, n)      # the result's entries in row-major order
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-13)


# --- loops recorded as one (steps.loop_step, Recorder.call_loop) -----------------------------

from symdyn.algorithms.steps import loop_step, step  # noqa: E402
from symdyn.codegen.recursive import program as recorded  # noqa: E402


@step
def _scaled(B, x, c: float):
    return c * x


@step
def _mixed(B, a, y):
    return a * y[0, 0] + y[1:3, :]


def _loop_algorithm(model, x, backend=None):
    """Blocks of one pattern in blocks of their own (recorded like the first), one negated and
    one literal (other patterns: full calls), one changed in place between two loops,
    entries of the pattern lying across two blocks, and a block on the other side (in address
    order) of a shared argument."""
    B = backend                                      # the recording backend itself
    y = B.rows(x, 0, 3)
    parts = [_scaled(B, B.rows(x, 3, 5), float(c)) for c in range(2, 6)]   # (2 x 1 blocks)
    calls = [(p, y) for p in parts] + [(-parts[1], y), (B.const(np.array([[1.0], [2.0]])), y)]
    first = loop_step(B, _mixed, calls)
    changed = parts[2]
    B.assign(changed, 0, 0, B.rows(x, 5, 6))        # in place: its pattern is not the same
    second = loop_step(B, _mixed, [(parts[0], y), (changed, y), (parts[3], y)])
    # entries of two neighbouring blocks: their pattern, but not one block
    p6, p7 = (_scaled(B, B.rows(x, 3, 5), c) for c in (6.0, 7.0))
    across = B.vcat([B.rows(p6, 1, 2), B.rows(p7, 0, 1)])
    third = loop_step(B, _mixed, [(parts[0], y), (across, y)])
    # a block after the shared argument's where the first call's was before it (other order)
    y2 = _scaled(B, y, 1.5)
    p8 = _scaled(B, B.rows(x, 3, 5), 8.0)
    fourth = loop_step(B, _mixed, [(parts[0], y2), (p8, y2)])
    return B.vcat(first + second + third + fourth)


def _loop_reference(x):
    y = x[0:3].reshape(3, 1)
    parts = [c * x[3:5].reshape(2, 1) for c in range(2, 6)]
    calls = parts + [-parts[1], np.array([[1.0], [2.0]])]
    first = [a * y[0, 0] + y[1:3] for a in calls]
    changed = parts[2].copy()
    changed[0, 0] = x[5]
    second = [a * y[0, 0] + y[1:3] for a in (parts[0], changed, parts[3])]
    across = np.array([[6.0 * x[4]], [7.0 * x[3]]])
    third = [a * y[0, 0] + y[1:3] for a in (parts[0], across)]
    y2 = 1.5 * y
    fourth = [a * y2[0, 0] + y2[1:3] for a in (parts[0], 8.0 * x[3:5].reshape(2, 1))]
    return np.vstack(first + second + third + fourth)


def test_loop_recorded_as_one_equals_each_call_recorded(monkeypatch):
    """call_loop takes calls whose varying arguments are other blocks of one pattern from the
    first call's kernel and argument groups; other patterns (negated, literal, changed in place
    since) are full calls. The program runs to the same numbers as NumPy and is the program of
    calls recorded one by one."""
    model = serial_chain(1, seed=1)
    x = np.array([0.5, -1.5, 2.0, 0.25, -0.75, 3.0])
    prog = record(model, _loop_algorithm, [6], name="t_loop")
    np.testing.assert_allclose(evaluate(prog, x)[0], _loop_reference(x), rtol=1e-15)
    full = []
    orig = recorded.Recorder.call

    def counted(self, fn, args):
        full.append(fn.__name__)
        return orig(self, fn, args)

    monkeypatch.setattr(recorded.Recorder, "call", counted)
    record(model, _loop_algorithm, [6], name="t_loop")
    loops = [n for n in full if n == "_mixed"]
    # the first call of each loop; the negated and the literal block; the block changed in
    # place (now of entries in two blocks) and the one after it (unlike the changed one); the
    # entries across two blocks; the block on the other side of the shared one
    assert len(loops) == 1 + 2 + 1 + 2 + 1 + 1 + 1 + 1, loops
    monkeypatch.setattr(recorded.Recorder, "_like", lambda *a: None)
    one_by_one = record(model, _loop_algorithm, [6], name="t_loop")
    assert one_by_one.instructions == prog.instructions


@pytest.mark.parametrize("name", ["serial", "mixed", "floating"])
def test_christoffel_loops_record_the_program_of_single_calls(name, monkeypatch):
    """christoffel(frame="root") records its ancestor loops as loops: the same program as
    recording every call."""
    model = exact_rotations(MODELS[name]) if name in MODELS else serial_chain(12, seed=1)

    def rec():
        return record(model, sd.christoffel, [model.nq], name="t_chr", frame="root")

    prog = rec()
    monkeypatch.setattr(recorded.Recorder, "_like", lambda *a: None)
    single = rec()
    assert prog.instructions == single.instructions
    for a, b in zip(prog.outputs, single.outputs):
        for u, v in zip(a[:3], b[:3]):
            np.testing.assert_array_equal(u, v)
