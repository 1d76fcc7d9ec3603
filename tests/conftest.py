"""Shared test helpers: backends, small random trees, random states, symbolic evaluation.

``run(backend, fn, model, *args)`` calls ``fn(model, *args)`` with the arguments turned into
SymPy or CasADi symbols (for the symbolic backends), then evaluates the symbolic result at the
numeric arguments and returns NumPy arrays: symbolic results are compared with NumPy at numbers.
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

from symdyn.backends import get_backend
from symdyn.models import branched_tree, random_tree, serial_chain

BACKENDS = ("numpy", "sympy", "casadi")


def have_cc() -> bool:
    """A C compiler is found by the lookup the build itself does ($CC, else cc, gcc, clang)."""
    from symdyn.codegen import BuildError, compiler_info

    try:
        compiler_info()
    except BuildError:
        return False
    return True


requires_cc = pytest.mark.skipif(not have_cc(), reason="no C compiler (gcc/clang, or $CC)")
TOL = 1e-10


ALL_KINDS = ("revolute", "prismatic", "helical", "spherical", "planar")


def tree_models() -> dict:
    """Small random trees covering serial, branched, every joint type and a floating base."""
    return {
        "serial": serial_chain(3, seed=1),
        "branched": branched_tree(6, 2, seed=2, joint=("revolute", "prismatic", "helical")),
        "mixed": branched_tree(5, 2, seed=3, joint=ALL_KINDS),
        "random": random_tree(5, seed=5, joint_kinds=("revolute", "prismatic", "helical")),
        "floating": branched_tree(5, 2, seed=4, joint=("floating", "revolute", "spherical",
                                                       "prismatic", "helical")),
    }


def sympy_models() -> dict:
    """The same topologies and joint types with simple geometry (identity rotations, round
    numbers): SymPy expressions with random Float rotations take seconds per call, and the
    random geometry is covered by the NumPy and CasADi runs."""
    return {
        "serial": serial_chain(3),
        "branched": branched_tree(4, 2, joint=("revolute", "prismatic", "helical")),
        "mixed": branched_tree(5, 2, joint=ALL_KINDS),
        "random": random_tree(2, seed=5, joint_kinds=("revolute", "helical")),  # random geometry
        "floating": branched_tree(3, 2, joint=("floating", "spherical", "helical")),
    }


MODELS = tree_models()
SYMPY_MODELS = sympy_models()
MODEL_NAMES = tuple(MODELS)


def model_for(backend: str, name: str):
    """The test tree called ``name`` for ``backend`` (simple-geometry variant for SymPy)."""
    return (SYMPY_MODELS if backend == "sympy" else MODELS)[name]


def has_quaternions(model) -> bool:
    return any(j.type in ("spherical", "floating") for j in model.joints)


def random_state(model, seed=0):
    """q random (angles in [0, 2 pi], unit quaternions), qd and qdd in [0, 10] (paper 000 Sec. 5)."""
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(0, 10, model.nv), rng.uniform(0, 10, model.nv)


def random_forces(model, seed=0, skip=(1,)):
    """One random body force [n; f] per body (None for bodies in ``skip``)."""
    rng = np.random.default_rng(seed)
    return [None if i in skip else rng.uniform(-5, 5, 6) for i in range(model.N)]


def evaluate(x, values=None) -> np.ndarray | list:
    """A NumPy array from a NumPy/SymPy/CasADi result (lists element-wise), evaluating symbols
    at ``values`` ({symbol: number} for SymPy; (symbols, numbers) lists for CasADi)."""
    if isinstance(x, (list, tuple)):
        return [evaluate(e, values) for e in x]
    if isinstance(x, np.ndarray) and x.dtype != object:
        return np.asarray(x, float)
    if getattr(x, "ndim", None) == 3:  # rank-3 contract: T[:, :, k] is a native page
        return np.stack([evaluate(x[:, :, k], values) for k in range(x.shape[2])], axis=2)
    if isinstance(x, (sp.MatrixBase, sp.Basic, sp.NDimArray)):
        return get_backend("sympy").evaluate(x, values or {})
    if isinstance(x, ca.DM):
        return np.array(x, float)
    if isinstance(x, ca.SX):
        if not values or not values[0]:
            return np.array(ca.evalf(x), float)
        f = ca.Function("f", list(values[0]), [x])
        return np.array(f(*values[1]), float)
    return np.asarray(x, float)


def _symbolize(backend: str, x, name: str):
    """(symbolic stand-in for x, [(symbol, number), ...]) for a numeric array or None."""
    if x is None:
        return None, []
    arr = np.asarray(x, float).reshape(-1)
    if backend == "sympy":
        syms = sp.symbols(f"{name}_0:{arr.size}")
        return sp.Matrix(syms), list(zip(syms, arr))
    s = ca.SX.sym(name, arr.size)
    return s, [(s, arr)]


def _constant(backend: str, x):
    if x is None or backend == "numpy":
        return x
    arr = np.asarray(x, float).reshape(-1, 1)
    if backend == "sympy":
        return sp.Matrix(arr.tolist()).applyfunc(sp.Float)
    return ca.SX(ca.DM(arr))


def run(backend: str, fn, model, *args, numeric=(), **kw):
    """``fn(model, *args, **kw)`` in ``backend``, evaluated at the numeric ``args``.

    Arguments are NumPy vectors, None, or lists of vectors/None (external forces). For the
    symbolic backends every argument becomes symbols except the positions listed in ``numeric``,
    which are passed as that backend's constants (e.g. q, to keep SymPy ABA on floating bases
    small). The result is a NumPy array (or list of arrays).
    """
    if backend == "numpy":
        return evaluate(fn(model, *args, **kw))
    call, pairs = [], []
    for k, a in enumerate(args):
        if isinstance(a, list) and (a == [] or a[0] is None or np.ndim(a[0]) == 1):
            items = []
            for j, f in enumerate(a):
                if k in numeric:
                    items.append(_constant(backend, f))
                else:
                    s, p = _symbolize(backend, f, f"a{k}_{j}")
                    items.append(s)
                    pairs += p
            call.append(items)
        elif k in numeric:
            call.append(_constant(backend, a))
        else:
            s, p = _symbolize(backend, a, f"a{k}")
            call.append(s)
            pairs += p
    out = fn(model, *call, **kw)
    if backend == "sympy":
        res = evaluate(out, dict(pairs))
    else:
        res = evaluate(out, ([s for s, _ in pairs], [v for _, v in pairs]))
    ref = fn(model, *args, **kw)  # NumPy's shapes: vectors are 1-D there, (n, 1) columns here
    # (a function that fixes backend= gives a CasADi value here: its own .shape, as NumPy's
    # functions on CasADi values are deprecated)
    def shape(x):
        return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
    if isinstance(res, list):
        return [r.reshape(shape(f)) for r, f in zip(res, ref)]
    return res.reshape(shape(ref))


def assert_close(a, b, tol: float = TOL, what: str = ""):
    """max |a - b| <= tol * max(1, max |b|) (relative to the scale of the reference b)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape or a.size == b.size, f"{what}: shapes {a.shape} vs {b.shape}"
    a = a.reshape(b.shape)
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
    err = float(np.abs(a - b).max()) if b.size else 0.0
    assert err <= tol * scale, f"{what}: max |diff| = {err:.3e} (scale {scale:.3g})"


@pytest.fixture(scope="module", autouse=True)
def _vector_variants_only_where_tested(request):
    """Builds compile no vector variants (about half of a build's compiler time) outside
    test_codegen_simd.py, which tests them in both forms; the library's default stays
    simd="auto" (module scope: it applies before the modules' own build fixtures)."""
    if request.module.__name__.endswith("test_codegen_simd"):
        yield
        return
    from symdyn.codegen import simd

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simd, "host_targets", lambda cc: ())
        yield


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(params=MODEL_NAMES)
def tree(request):
    return MODELS[request.param]


# --- the slow remainder --------------------------------------------------------------------------
# The README's test command (`python -m pytest -q`) leaves out tests marked `slow` so that it
# runs in a few minutes; `python -m pytest -q -m slow` runs them (CI runs both). Besides tests
# decorated with @pytest.mark.slow, the cases below are slow: SymPy runs of the backend
# comparisons on every tree but one (the SymPy backend builds each expression in full, seconds a
# case; the other backends and one SymPy tree stay in the default run), repeated C builds whose
# lightest case stays in the default run, and whole simulations and programs. Keys: "file::test"; values: a regular expression
# for the parameter ids that are slow ("" for every case of the test); "file::*" covers every
# test of the file.
SLOW_CASES = {
    # SymPy on every tree but one (test_matrix.CASES, which test_derivatives shares, marks its own)
    "test_dynamics.py::*": r"^(?!.*serial)(.*-)?sympy(-.*)?$",
    "test_regressors.py::test_symbolic_backends_match_numpy": r"-sympy$",
    "test_christoffel.py::test_sympy_generalized_symbols_match_numpy": "",
    "test_symbolic.py::test_algorithm2_equals_eq4_exactly_spatial_chain": r"^sympy$",
    "test_constrained.py::test_maximal_route_symbolic_backends": "",
    "test_com.py::test_symbolic_backends_match_numpy": r"^sympy$",
    "test_codegen_recursive.py::test_christoffel_root_frame_equals_body_frame":
        r"^(?!serial-).*-sympy$",
    "test_derivatives.py::test_sympy_ltdl_matches_numpy": "",
    "test_derivatives.py::test_sympy_aba_derivatives_match_numpy": "",
    "test_derivatives.py::test_sympy_idsva_matches_numpy": "",
    "test_coriolis.py::test_sympy_backend_matches_numpy": "",
    "test_coriolis.py::test_root_frame_symbolic_backends_match_numpy": "",
    # C builds: one case of each stays in the default run
    "test_codegen_recursive.py::test_compiled_recursive_equals_numpy": "",
    "test_codegen_recursive.py::test_recorded_program_equals_numpy": r"^(?!floating-)",
    "test_codegen_recursive.py::test_folded_constants_give_the_same_results_with_less_work":
        r"^(aba_derivatives|christoffel|coriolis_matrix|rnea_derivatives)$",
    "test_codegen_recursive.py::test_kernels_do_not_grow_with_the_number_of_bodies": "",
    "test_codegen_recursive.py::test_aba_derivatives_kernels_do_not_grow_with_the_number_of_bodies":
        "",
    "test_codegen_recursive.py::test_choose_by_size": "",
    "test_codegen_recursive.py::test_instruction_budget_stops_exactly_past_the_program_size":
        r"^(christoffel|aba_derivatives|rnea_derivatives)$",
    "test_codegen_recursive_zeros.py::test_every_entry_is_written_into_dirty_memory":
        r"^(rnea_derivatives|aba_derivatives|christoffel)$",
    "test_codegen_robustness.py::test_compile_heartbeat_in_a_log": "",
    "test_codegen_robustness.py::test_threads_hammering_one_function": "",
    "test_codegen_recursive.py::test_tables_as_byte_strings": "",
    "test_derivatives.py::test_codegen_auto_keeps_the_smallest_graph": "",
    "test_cluster_christoffel.py::test_casadi": "",
    "test_closed_forms.py::test_floating_base_and_random_geometry": r"^random:",
    "test_codegen_baselines.py::test_compiled_baselines_equal_the_analytical_derivatives": "",
    "test_codegen_cache_integrity.py::test_edited_manifest_is_rebuilt": r"^(?!True-_shrink_output$)",
    "test_codegen_robustness.py::test_wrong_shape_manifest_is_rebuilt": "",
    "test_codegen_robustness.py::test_compile_tests_skip_without_a_compiler": "",
    "test_codegen_cache_integrity.py::test_damaged_fastcall_extension_is_rebuilt": r"^garbage$",
    "test_codegen_cache_integrity.py::test_load_refuses_a_manifest_that_disagrees_with_its_library":
        r"^_grow_input$",
    "test_codegen_toolkit.py::*": r"^floating$",
    "test_codegen_simd.py::*": r"recursive",          # the recursive-form builds     # the floating-base builds of its fixtures
    "test_codegen.py::test_floating_base_quaternions": "",
    # builds whose check a lighter sibling in the default run also makes
    "test_codegen_cache_integrity.py::test_unrecorded_fastcall_extension_is_rebuilt": "",
    "test_codegen_cache_integrity.py::test_cache_whose_lock_directory_cannot_be_made": "",
    "test_codegen.py::test_frame_auto_keeps_the_smaller_graph": "",
    "test_codegen.py::test_illegal_model_name_builds": "",
    "test_codegen.py::test_cli_export_compiles_without_python": "",
    "test_codegen.py::test_fast_trig_in_generated_code": "",
    "test_codegen.py::test_large_batch_streamed_equals_in_place": r"^2$",
    "test_codegen_robustness.py::test_long_names_build": r"^200$",
    "test_codegen_baselines.py::test_aba_derivatives_auto_method_follows_the_graph_sizes": "",
    "test_codegen_batch.py::test_fallbacks_without_atomics_or_sse": "",
    "test_codegen_toolkit.py::test_parameters_are_part_of_the_cache_key": "",
    "test_closed_forms.py::test_panda_christoffel_within_targets": "",
    "test_contact_derivatives.py::test_derivatives_match_casadi_ad_on_random_trees": r"^[1-9]",
    "test_codegen.py::test_cache_key_follows_symdyn_sources": "",
    "test_codegen_robustness.py::test_models_without_quaternions_have_no_check": "",
    "test_closed_forms.py::test_cli_structured_default_and_progress": "",
    "test_armature.py::test_regressors_with_armature_on_symbolic_backends": r"^sympy$",
    # whole programs in subprocesses: one spec of the demo, a short simulation
    "test_cli.py::test_demo_finishes_on_readme_specs": r"^(?!quadruped:4:floating$)",
    "test_experiments.py::test_passivity_short_horizon": "",
    "test_experiments.py::test_quick_run_writes_report_and_index": "",
    "test_constrained.py::test_four_bar_energy_conserved": "",
    "test_constrained.py::test_five_bar_leg_energy_and_closure": "",
}


def pytest_collection_modifyitems(config, items):
    import re

    for item in items:
        pattern = SLOW_CASES.get(f"{item.path.name}::{item.originalname}",
                                 SLOW_CASES.get(f"{item.path.name}::*"))
        if pattern is None:
            continue
        params = item.callspec.id if hasattr(item, "callspec") else ""
        if pattern == "" or re.search(pattern, params):
            item.add_marker(pytest.mark.slow)
