"""Generation: trace an algorithm into a ``casadi.Function``, let CasADi's ``CodeGenerator``
write C, then run an explicit, ordered list of passes over the C text (:data:`PASSES`), and write
the call/batch wrapper, an example ``main.c`` and a Makefile next to it.

Passes (each ``pass(text, ctx) -> text``; ``ctx`` holds the trace's facts and collects
statistics):

1. ``emit_order``: outputs are traced in the algorithms' sweep order and the ``res[o][k]=``
   writes are sent back to their row-major positions (:mod:`symdyn.codegen.emit_order`).
2. ``fast_trig``: libm sin/cos become branch-free inline versions (:mod:`symdyn.codegen.trig`;
   skipped with ``fast_trig=False``).

A change in CasADi's output or in a pass shows as a diff of the golden files in
``tests/golden`` (see ``tests/golden_c.py``).

C symbol names: CasADi (and the C wrapper) need every generated function name to be an
identifier of at most 48 characters. The public name of a function is ``<prefix>_<algorithm>``;
when that is longer, its C symbol is cut and suffixed with a hash (:func:`function_symbol`), and
the manifest keeps both (``name`` and ``fname``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os

import numpy as np
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import cache as _cache
from .csource import API_VERSION, api_sources, example_main, library_sources, makefile
from .emit_order import remap_output_writes
from .functions import (algorithm_options, algorithm_spec, casadi_function, check_options,
                        recorded_options, required_options)
from .names import MAX_LEN, c_identifier
from ..progress import make_progress
from . import simd as _simd
from .trig import use_fast_trig

FORMAT = 2   # layout of generated files / manifest (part of the cache key); 2: name + fname


def function_symbol(prefix: str, algorithm: str) -> str:
    """The C symbol of ``algorithm`` in a build with C prefix ``prefix``: ``<prefix>_<algorithm>``,
    or, when that exceeds CasADi's 48 characters, its first characters plus a hash of the whole
    name (distinct public names keep distinct symbols)."""
    full = f"{prefix}_{algorithm}"
    if len(full) <= MAX_LEN:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return full[:MAX_LEN - 9].rstrip("_") + "_" + digest


# --- passes over the generated C --------------------------------------------------------------------

def pass_emit_order(text: str, ctx: dict) -> str:
    """Send each permuted output write back to its row-major position."""
    return remap_output_writes(text, ctx["orders"])


def pass_fast_trig(text: str, ctx: dict) -> str:
    """Inline branch-free sin/cos (only when ``ctx["fast_trig"]``); counts ``n_fast_trig``."""
    if not ctx.get("fast_trig", True):
        ctx["n_fast_trig"] = 0
        return text
    text, ctx["n_fast_trig"] = use_fast_trig(text)
    return text


PASSES: tuple[tuple[str, Callable[[str, dict], str]], ...] = (
    ("emit_order", pass_emit_order),
    ("fast_trig", pass_fast_trig),
)


def apply_passes(text: str, ctx: dict, passes=None) -> str:
    """Run ``passes`` (default :data:`PASSES`) over CasADi's C ``text`` in order."""
    for _, fn in (PASSES if passes is None else passes):
        text = fn(text, ctx)
    return text


# --- algorithms and options --------------------------------------------------------------------------

def split_key(key: str) -> tuple[str, str | None]:
    """``"frame_jacobian:panda_hand"`` -> ``("frame_jacobian", "panda_hand")``; ``"rnea"`` ->
    ``("rnea", None)``. The label names one of several functions of the same algorithm in a build."""
    if not isinstance(key, str):
        raise TypeError(f"algorithm names must be strings, got {type(key).__name__}")
    alg, sep, label = key.partition(":")
    alg, label = alg.strip(), label.strip()
    if sep and not label:
        raise ValueError(f"{key!r}: empty label after ':'")
    return alg, (label if sep else None)


def _frame_label(frame) -> str:
    if isinstance(frame, str):
        return frame
    if isinstance(frame, int) and not isinstance(frame, bool):
        return f"body{frame}"
    raise TypeError(f"frame {frame!r}: only a frame or joint name or a body index can name the "
                    "compiled function; give a label ('frame_jacobian:LABEL') for other frames")


def normalize_algorithms(algorithms, options: Mapping[str, Any]) -> list[tuple[str, dict]]:
    """``[(key, options)]`` from a name, a comma-separated string, a sequence of names or a dict
    ``{name: options}``. Shared ``options`` go to every algorithm that accepts them (an option no
    selected algorithm accepts is an error).

    Keys: the algorithm's name (``"rnea"``), or ``"<algorithm>:<label>"`` where a build holds
    several functions of one algorithm. Frame functions always carry a label, by default the
    frame's name (``{"frame_jacobian": {"frame": "panda_hand"}}`` -> key
    ``"frame_jacobian:panda_hand"``; a body index ``3`` -> ``"frame_jacobian:body3"``); a list of
    frames (``"frame": ["panda_hand", "panda_link7"]``) gives one function per frame. Give labels
    yourself for one frame in two references:
    ``{"frame_jacobian:hand_world": {"frame": "panda_hand", "reference": "world"}, ...}``.
    """
    if isinstance(algorithms, str):
        names = [a.strip() for a in algorithms.split(",") if a.strip()]
        per: dict[str, dict[str, Any]] = {n: {} for n in names}
    elif isinstance(algorithms, Mapping):
        per = {n: dict(o or {}) for n, o in algorithms.items()}
        names = list(per)
    elif isinstance(algorithms, Iterable):
        names = list(algorithms)
        per = {n: {} for n in names}
    else:
        raise TypeError(f"algorithms must be names (a list or 'rnea,crba'), got "
                        f"{type(algorithms).__name__}")
    if not names:
        raise ValueError("no algorithm given")
    if len(set(names)) != len(names):
        raise ValueError(f"algorithm listed twice in {names}")
    out: list[tuple[str, dict]] = []
    used = set()
    for n in names:
        alg, label = split_key(n)
        algorithm_spec(alg)
        accepted = {**dict.fromkeys(required_options(alg)), **algorithm_options(alg)}
        opts = {k: v for k, v in options.items() if k in accepted}
        used |= set(opts)
        bad = set(per[n]) - set(accepted)
        if bad:
            raise TypeError(f"{alg}: unknown option(s) {', '.join(sorted(bad))}; accepted: "
                            f"{', '.join(accepted) or 'none'}")
        opts = {**opts, **per[n]}
        if "frame" in required_options(alg):
            frames = opts.get("frame")
            if frames is None:
                check_options(alg, {k: v for k, v in opts.items() if k != "frame"})  # names it
            if isinstance(frames, (list, tuple)):
                if label is not None and len(frames) != 1:
                    raise ValueError(f"{n!r}: a label names one function; give one frame, not "
                                     f"{len(frames)}")
                if not frames:
                    raise ValueError(f"{alg}: empty list of frames")
                out += [(f"{alg}:{label or _frame_label(fr)}", dict(opts, frame=fr))
                        for fr in frames]
                continue
            label = label or _frame_label(frames)
        check_options(alg, opts)
        out.append((alg if label is None else f"{alg}:{label}", opts))
    unused = sorted(set(options) - used)
    if unused:
        raise TypeError(f"option(s) {', '.join(unused)} are accepted by none of "
                        f"{', '.join(names)}")
    keys = [k for k, _ in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"two functions named {', '.join(dup)}: give them distinct labels "
                         "('frame_jacobian:LABEL')")
    return out


# --- source generation ------------------------------------------------------------------------------

def versions() -> dict:
    """The versions that make a build: symdyn, the digest of its code-generating sources, CasADi."""
    import casadi

    from .. import __version__

    return {"symdyn": __version__, "symdyn_source": source_digest(),
            "casadi": casadi.__version__}  # type: ignore[attr-defined]  # not in casadi's stubs


_SOURCE_DIGEST: list[str] = []
# The symdyn sources that decide generated code (relative to the package; folders: every .py
# below). Closed under symdyn-internal imports (tests/test_codegen.py checks it), so an edit
# elsewhere (symbolic/, constrained/, models.py, the CLIs) does not invalidate the cache.
CODEGEN_SOURCES = ("algorithms", "backends", "spatial.py", "joints.py", "model.py", "autodiff.py",
                   "types.py", "identification", "contact", "reduce.py", "progress.py", "snapping.py",
                   *(f"codegen/{m}.py" for m in ("__init__", "build", "cache", "choose",
                                                  "compiler", "csource", "emit_order", "fastcall", "functions",
                                                  "generate", "loader", "names", "parameters",
                                                  "simd", "trig")), "codegen/recursive")


def codegen_source_files() -> list[Path]:
    """The files of :data:`CODEGEN_SOURCES`, sorted."""
    root = Path(__file__).resolve().parents[1]
    files = []
    for entry in CODEGEN_SOURCES:
        path = root / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sorted(files)


def source_digest() -> str:
    """SHA-256 of the symdyn sources that generate code (:data:`CODEGEN_SOURCES`): a cache entry
    built by other code (an edited algorithm, a development checkout between releases) is never
    reused."""
    if not _SOURCE_DIGEST:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in codegen_source_files():
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _SOURCE_DIGEST.append(h.hexdigest()[:16])
    return _SOURCE_DIGEST[0]


def generate_sources(model, algorithms, out_dir, name: str | None = None, *, cse: bool = True,
                     fast_trig: bool = True, progress: bool | None | Callable = None,
                     parameters: str | None = None, form: str = "auto", derivatives: int = 0,
                     simd: Sequence[str] = (), simd_auto: bool = False, **options) -> dict:
    """Write CasADi-generated C (one ``<symbol>.c/.h`` per algorithm, after :data:`PASSES`), the
    call/batch wrapper ``<prefix>_api.c/.h``, an example ``main.c`` and a ``Makefile`` into
    ``out_dir``.

    Returns the manifest dict (function signatures, SX node and instruction counts, timings).
    ``name`` (default: the model's name) becomes the C prefix after sanitizing. ``options`` are
    algorithm options (see :func:`normalize_algorithms`). ``fast_trig`` replaces libm's sin/cos
    by branch-free inline versions (:mod:`symdyn.codegen.trig`). ``parameters="inertial"``: the
    functions that depend on the inertias take ``pi`` (10 N) as a last input
    (:mod:`symdyn.codegen.parameters`). Functions are keyed as in :func:`normalize_algorithms`;
    a labelled key ``alg:label`` gets the C symbol ``<prefix>_alg_label`` (sanitized).
    ``form``: ``"unrolled"`` (one straight-line SX graph per function), ``"recursive"``
    (per-step kernels and a C loop over a program, :mod:`symdyn.codegen.recursive`; only the
    algorithms of ``recursive.RECURSIVE_ALGORITHMS``) or ``"auto"`` (the measured rule of
    :func:`symdyn.codegen.recursive.choose_form`); each function's form is in the manifest.

    ``derivatives``: the derivative entry points that ``casadi.external`` looks up in a library
    (:data:`DERIVATIVE_LEVELS`), written to ``<symbol>_derivatives.c/.h`` for each function of
    the unrolled form: 0 none (what :func:`symdyn.codegen.build` uses), 1 first order
    (``jac_F``, ``fwd1_F``, ``adj1_F``), 2 also second order (``fwd1_adj1_F``, ``adj1_adj1_F``:
    exact Hessians of Lagrangians, what ipopt asks for by default). The recursive form has
    none (its manifest entry says so); ``form="unrolled"`` exports them for every function.

    ``simd``: the vector targets of every function's batch (:mod:`symdyn.codegen.simd`); with
    ``simd_auto`` they are the host's and each function takes the one of
    :func:`symdyn.codegen.simd.auto_target` for its outputs and work.
    """
    import casadi as ca
    import numpy as np

    from .parameters import check_parameters

    from . import recursive

    parameters = check_parameters(parameters)
    recursive.check_form(form)
    check_derivatives(derivatives)
    algs = normalize_algorithms(algorithms, options)
    prefix = c_identifier(name if name is not None else model.name)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    prog = make_progress(progress, f"codegen {prefix}")
    vers = versions()
    functions = []
    symbols: dict[str, str] = {}
    for key, opts in algs:
        alg, label = split_key(key)
        spec = algorithm_spec(alg)
        fname = function_symbol(prefix, alg if label is None else c_identifier(key))
        if fname in symbols:
            raise ValueError(f"functions {symbols[fname]!r} and {key!r} get the same C symbol "
                             f"{fname!r}; choose labels that differ in letters, digits or '_'")
        symbols[fname] = key
        chosen, reason = recursive.choose_form(model, alg, form, parameters=parameters,
                                              options=opts)
        program = f = None
        info: dict = {}

        def trace_unrolled():
            with prog.step(f"tracing {key} on {model.name!r} (nv={model.nv})",
                           slow=model.nv >= 15):
                return casadi_function(model, alg, name=fname, layout="numpy", cse=cse,
                                       info=info, emit_order=True, parameters=parameters, **opts)

        if chosen == "measure":   # form="auto": by the sizes of both forms (choose_by_size)
            program = _record(model, key, alg, opts, fname, prog, cse)
            chosen, reason = recursive.choose_by_size(program, trace_unrolled)
            f = info.get("function")
        if chosen == "recursive":
            functions.append(_generate_recursive(model, key, alg, opts, fname, prefix, directory,
                                                 prog, cse=cse, fast_trig=fast_trig,
                                                 reason=reason, program=program, simd=simd,
                                                 simd_auto=simd_auto))
            if derivatives:
                functions[-1]["derivatives"] = None
                prog(f"{key}: recursive form, no derivative entry points (form='unrolled' "
                     "exports them)")
            continue
        if f is None:
            f = trace_unrolled()
        if f.name() != fname:
            raise RuntimeError(f"CasADi named the function {f.name()!r}, expected {fname!r}")
        tr = info["trace"]
        frame = f", {info['frame']} frame" if "frame" in info else ""
        frame += f", {info['method']}" if "method" in info else ""
        prog(f"{key}: {tr.n_nodes} SX nodes, {tr.n_instructions} instructions{frame} "
             f"(trace {tr.t_trace:.2f}s, Function {tr.t_function:.2f}s)")
        t0 = time.perf_counter()
        with prog.step(f"generating C for {key}", slow=tr.n_instructions > 20000):
            cg = ca.CodeGenerator(f"{fname}.c", {"with_header": True,
                                                  "casadi_int": "long long int",
                                                  "casadi_real": "double"})
            cg.add(f)
            cg.generate(str(directory) + os.sep)
            src = directory / f"{fname}.c"
            ctx: dict[str, Any] = {"orders": info["orders"], "fast_trig": fast_trig}
            src.write_text(apply_passes(src.read_text(), ctx))
            fsimd = (_simd.auto_target(simd, sum(f.numel_out(i) for i in range(f.n_out())),
                                       f.n_instructions()) if simd_auto else tuple(simd))
            built, simd_reason, simd_source = list(fsimd), None, None
            if fsimd:   # a file of its own: compiled alongside the scalar one
                orders = info["orders"]
                try:
                    text = _simd.function_source(
                        f, fname, fsimd, fast_trig=fast_trig,
                        out_index=lambda o, k: k if orders[o] is None else orders[o][k])
                    simd_source = f"{fname}_simd.c"
                    (directory / simd_source).write_text(
                        f"/* Generated by symdyn: vector variants of {fname} "
                        f"(symdyn/codegen/simd.py) */\n#include <math.h>\n{text}")
                except _simd.Unsupported as exc:
                    built, simd_reason = [], str(exc)
                    prog(f"{key}: no vector variant ({exc}); its batch runs the scalar loop")
        t_gen = time.perf_counter() - t0
        functions.append({
            "algorithm": alg, "key": key, "name": f"{prefix}_{key}", "fname": fname,
            "options": jsonable_options(opts), "frame": info.get("frame"), "method": info.get("method"),
            "parameters": info.get("parameters"), "source": f"{fname}.c", "header": f"{fname}.h",
            "input_names": list(info["input_names"]), "input_sizes": list(info["input_sizes"]),
            "output_names": list(spec.output_names),
            "output_shapes": [list(tr.output_shapes[o]) for o in spec.output_names],
            "n_nodes": tr.n_nodes, "n_instructions": tr.n_instructions,
            "work": tr.n_instructions,
            "n_fast_trig": ctx.get("n_fast_trig", 0),
            "t_trace": tr.t_trace, "t_function": tr.t_function, "t_generate": t_gen,
            "source_bytes": src.stat().st_size, "form": "unrolled", "form_reason": reason,
            "simd": built, "simd_reason": simd_reason, "simd_source": simd_source,
        })
        if derivatives:
            functions[-1]["derivatives"] = _generate_derivatives(
                f, info["orders"], fname, directory, derivatives, cse, prog, key)
    quaternions = quaternion_slices(model)
    header, body = api_sources(prefix, functions, model, vers["symdyn"], quaternions)
    (directory / f"{prefix}_api.h").write_text(header)
    (directory / f"{prefix}_api.c").write_text(body)
    rng = np.random.default_rng(0)
    example_inputs = {"q": model.random_q(rng)}
    for n in ("qd", "qdd", "tau"):
        example_inputs[n] = rng.uniform(-1, 1, model.nv)
    names = {n for fd in functions for n in fd["input_names"]}
    for n in ("qr_d", "qr_dd"):
        if n in names:
            example_inputs[n] = rng.uniform(-1, 1, model.nv)
    if "pi" in names:
        from ..identification.parameters import inertial_parameters

        example_inputs["pi"] = inertial_parameters(model)
    (directory / "main.c").write_text(example_main(prefix, functions, example_inputs,
                                                   vers["symdyn"]))
    sources = library_sources(prefix, functions)
    (directory / "Makefile").write_text(makefile(prefix, sources, f"lib{prefix}.so"))
    return {
        "format": FORMAT, "api_version": API_VERSION, "prefix": prefix, "versions": vers,
        "model": {"name": model.name, "nq": model.nq, "nv": model.nv, "N": model.N,
                  "fingerprint": _cache.model_fingerprint(model)},
        "functions": functions, "cse": bool(cse), "fast_trig": bool(fast_trig), "library": None,
        "quaternions": quaternions,
        "example_inputs": {k: [float(x) for x in v] for k, v in example_inputs.items()},
    }


DERIVATIVE_LEVELS = (0, 1, 2)


def check_derivatives(derivatives) -> None:
    """``ValueError``/``TypeError`` unless ``derivatives`` is one of :data:`DERIVATIVE_LEVELS`."""
    if isinstance(derivatives, bool) or not isinstance(derivatives, (int, np.integer)):
        raise TypeError(f"derivatives must be an integer in {DERIVATIVE_LEVELS}, got "
                        f"{derivatives!r}")
    if int(derivatives) not in DERIVATIVE_LEVELS:
        raise ValueError(f"derivatives must be one of {DERIVATIVE_LEVELS}, got {derivatives!r}")


def derivative_functions(f, orders, level: int, cse: bool = True) -> list:
    """The ``casadi.Function`` s of ``f``'s derivatives at ``level`` (1: ``jac_F``, ``fwd1_F``,
    ``adj1_F``; 2: also ``fwd1_adj1_F``, ``adj1_adj1_F``), named as CasADi's ``External`` looks
    them up in a shared library, with ``F``'s outputs in the row-major order of the generated C
    (``orders``: the emission permutations of :func:`casadi_function`'s ``emit_order``, undone
    here, since the C of ``F`` writes its outputs row-major)."""
    import casadi as ca

    ins = f.sx_in()
    outs = f.call(ins)
    for k, p in enumerate(orders or ()):
        if p is not None:
            outs[k] = outs[k][[int(i) for i in np.argsort(p)]]
    g = ca.Function(f.name(), ins, outs, f.name_in(), f.name_out(), {"cse": bool(cse)})
    fns = [g.jacobian(), g.forward(1), g.reverse(1)]
    if level >= 2:
        adj = g.reverse(1)
        fns += [adj.forward(1), adj.reverse(1)]
    return fns


def _generate_derivatives(f, orders, fname: str, directory: Path, level: int, cse: bool, prog,
                          key: str) -> dict:
    """Write ``<fname>_derivatives.c/.h`` (:func:`derivative_functions`); its manifest entry."""
    import casadi as ca

    t0 = time.perf_counter()
    with prog.step(f"generating derivatives of {key} (order {level})", slow=True):
        fns = derivative_functions(f, orders, level, cse)
        cg = ca.CodeGenerator(f"{fname}_derivatives.c", {"with_header": True,
                                                          "casadi_int": "long long int",
                                                          "casadi_real": "double"})
        for g in fns:
            cg.add(g)
        cg.generate(str(directory) + os.sep)
    n_instr = sum(g.n_instructions() for g in fns)
    prog(f"{key}: derivatives {', '.join(g.name() for g in fns)} ({n_instr} instructions, "
         f"{time.perf_counter() - t0:.2f}s)")
    return {"order": int(level), "source": f"{fname}_derivatives.c",
            "header": f"{fname}_derivatives.h", "functions": [g.name() for g in fns],
            "n_instructions": int(n_instr)}


def _record(model, key, alg, opts, fname, prog, cse):
    """``alg`` recorded into kernels and a program (:mod:`symdyn.codegen.recursive`)."""
    from . import recursive
    from .functions import exact_rotations

    spec = algorithm_spec(alg)
    with prog.step(f"recording {key} on {model.name!r} (nv={model.nv}), recursive form",
                   slow=model.nv >= 40):
        program = recursive.record(exact_rotations(model), spec.function,
                                   list(spec.input_sizes(model)), name=fname, cse=cse,
                                   **recursive.RECURSIVE_FUSE.get(alg, {}),
                                   **recorded_options(alg, opts))
    st = program.stats
    prog(f"{key}: {st['n_kernels']} kernels ({st['n_instructions']} SX instructions), "
         f"{st['n_calls']} step calls, {st['work']} operations per call (record "
         f"{st['t_record']:.2f}s, trace {st['t_trace']:.2f}s)")
    return program


def _generate_recursive(model, key, alg, opts, fname, prefix, directory, prog, *, cse, fast_trig,
                        reason, program=None, simd: Sequence[str] = (),
                        simd_auto: bool = False) -> dict:
    """Write the C of ``alg`` in the recursive form (recorded here unless ``program`` is given);
    returns its manifest entry."""
    from . import recursive

    spec = algorithm_spec(alg)
    sizes = list(spec.input_sizes(model))
    opts = recorded_options(alg, opts)
    if program is None:
        program = _record(model, key, alg, opts, fname, prog, cse)
    st = program.stats
    if simd_auto:
        simd = _simd.auto_target(simd, sum(int(np.prod(shape)) for *_, shape in program.outputs),
                                 st["work"])
    t0 = time.perf_counter()
    ctx: dict[str, Any] = {"fast_trig": fast_trig}
    with prog.step(f"generating C for {key}", slow=False):
        info = recursive.write_c(program, fname, directory,
                                 passes=lambda text: pass_fast_trig(text, ctx), simd=simd,
                                 fast_trig=fast_trig)
    if info["simd_reason"]:
        prog(f"{key}: no vector variant ({info['simd_reason']}); its batch runs the scalar loop")
    shapes = []
    for (oname, rank), (*_, shape) in zip(spec.outputs, program.outputs):
        shapes.append([shape[0]] if rank == 1 else list(shape))
    return {
        "algorithm": alg, "key": key, "name": f"{prefix}_{key}", "fname": fname,
        "options": jsonable_options(opts), "frame": opts.get("frame"), "method": opts.get("method"),
        "parameters": None, "source": f"{fname}.c", "header": f"{fname}.h",
        "input_names": list(spec.input_names), "input_sizes": sizes,
        "output_names": list(spec.output_names), "output_shapes": shapes,
        "n_nodes": st["n_instructions"], "n_instructions": st["n_instructions"],
        "work": st["work"],
        "n_fast_trig": ctx.get("n_fast_trig", 0), "t_trace": st["t_record"] + st["t_trace"],
        "t_function": 0.0, "t_generate": time.perf_counter() - t0,
        "source_bytes": info["source_bytes"], "form": "recursive", "form_reason": reason,
        "recursive": info, "simd": info["simd"], "simd_reason": info["simd_reason"],
    }


def jsonable_options(options: dict) -> dict:
    """Options as JSON for the manifest and the cache key: a :class:`~symdyn.Contact` becomes its
    fields, a :class:`~symdyn.model.Frame` ``{"body", "E", "r"}`` with every digit of its transform (a repr would round NumPy arrays, and
    two frames differing beyond that would share a cache entry)."""
    def conv(v):
        if isinstance(v, (str, int, float, bool, type(None))):
            return v
        if isinstance(v, (list, tuple, np.ndarray)):
            return [conv(x) for x in v]
        if dataclasses.is_dataclass(v) and not isinstance(v, type):     # a Contact
            return {"type": type(v).__name__,
                    **{f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        X = getattr(v, "X", None)
        if hasattr(v, "body") and X is not None and hasattr(X, "E"):
            return {"body": int(v.body), "E": np.asarray(X.E, dtype=float).tolist(),
                    "r": np.asarray(X.r, dtype=float).reshape(-1).tolist()}
        raise TypeError(f"option value {v!r} cannot be recorded (expected a name, number, "
                        "Frame or Contact)")
    return {k: conv(v) for k, v in options.items()}


def quaternion_slices(model) -> list[dict]:
    """``[{"offset", "body"}]``: where each unit quaternion (x, y, z, w) of a spherical or
    floating joint sits in ``q`` (``q[offset:offset + 4]``) and the name of its body; the
    compiled wrapper checks their norms like :func:`symdyn.rnea` does."""
    out = []
    for i, j in enumerate(model.joints):
        if getattr(j, "type", None) in ("spherical", "floating"):
            out.append({"offset": int(model.q_idx[i][1] - 4), "body": str(model.names[i])})
    return out
