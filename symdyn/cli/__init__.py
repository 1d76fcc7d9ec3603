"""The ``symdyn`` command.

``symdyn demo [--model SPEC] [--repeat N] [--backends LIST] [--sympy MODE]`` evaluates M, tau and
the nonlinear effects on a built-in model and times each backend. Its SymPy row builds symbolic
expressions (symbols in, expressions out) only for small models (see :func:`sympy_mode`); on
larger ones, and on models with multi-DoF joints (floating bases, spherical joints, whose ABA
inverts a symbolic 3x3 or 6x6 articulated inertia), those expressions take minutes to hours, so
the demo evaluates SymPy at numbers (``sympy.Float`` inputs) and says so.

Other modules add subcommands: every module named in
:data:`_SUBCOMMANDS` exposes ``register(subparsers)``, which adds its parsers with
``parser.set_defaults(func=handler)``; ``handler(args) -> int`` returns the exit code.

Errors. Usage errors (argparse) and user errors print one line, ``symdyn COMMAND: error: MESSAGE``,
on stderr and exit with code 2, whichever subcommand raised them. User errors are the exception
types symdyn raises on purpose for bad input or a failing environment (:data:`USER_ERRORS`):
``ValueError`` (with ``ModelError``, ``URDFError``, ``SpecError``), ``TypeError`` (with
``BackendError``), ``OSError`` (missing files, a compiler that cannot run), ``ImportError`` (an
optional package that is not installed) and :class:`symdyn.codegen.BuildError` (code
generation or compilation failed; the one line quotes the compiler's first error). Everything
else (``AttributeError``, ``KeyError``, ``IndexError``, other ``RuntimeError`` ...) is a bug in
symdyn and surfaces with its traceback. ``symdyn --traceback COMMAND ...`` re-raises user errors
too, with the full message (e.g. the whole compiler output). Ctrl-C exits with code 130.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..model import Model

# Modules that add subcommands (each exposes register(subparsers)); append yours here.
_SUBCOMMANDS: tuple[str, ...] = ("symdyn.cli.codegen", "symdyn.cli.symbolic")

_DEMO_ALGORITHMS = ("rnea", "crba", "aba")

#: ``symdyn demo --sympy auto`` builds symbolic expressions for models with at most this many
#: velocities, all of them from one-DoF joints; other models get SymPy evaluated at numbers
SYMPY_SYMBOLS_MAX_NV = 6
_SYMPY_MODES = ("auto", "symbols", "numbers")


def _version() -> str:
    from .. import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with the built-in and the registered subcommands."""
    from ..io.specs import LOCK_HELP, SPEC_HELP

    parser = argparse.ArgumentParser(
        prog="symdyn",
        description="Rigid-body dynamics (RNEA, CRBA, ABA, Coriolis, Christoffel, derivatives) "
                    "written once over NumPy, SymPy and CasADi.")
    parser.add_argument("--version", action="version", version=f"symdyn {_version()}")
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, show the full traceback and message instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="M, tau and nonlinear effects on a built-in model, with backend timings",
        description="Evaluate M (crba), tau (rnea) and the nonlinear effects at a random state "
                    "and time each backend: NumPy evaluation, SymPy expression construction, "
                    "CasADi SX graph construction and casadi.Function evaluation.",
        epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--model", default="serial:6", metavar="SPEC",
                      help="model spec (default: serial:6; see below)")
    demo.add_argument("--lock", default=None, metavar="NAME[=VALUE],...", help=LOCK_HELP)
    demo.add_argument("--repeat", type=_positive, default=20, metavar="N",
                      help="evaluations timed per backend, the median is shown (default: 20)")
    demo.add_argument("--backends", default="numpy,sympy,casadi", metavar="LIST",
                      help="comma-separated backends to time (default: numpy,sympy,casadi)")
    demo.add_argument("--sympy", choices=_SYMPY_MODES, default="auto",
                      help="what the sympy row times: symbols (build symbolic expressions), "
                           "numbers (evaluate at sympy.Float inputs) or auto (default: symbols "
                           f"for models with nv <= {SYMPY_SYMBOLS_MAX_NV} and one-DoF joints only, "
                           "numbers otherwise, where the expressions would take minutes to hours)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the random state (default: 0)")
    demo.set_defaults(func=_demo)
    for modname in _SUBCOMMANDS:
        importlib.import_module(modname).register(sub)
    return parser


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


# exception types that are user errors (one line, exit code 2); see the module docstring
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, ImportError)
_MAX_MESSAGE = 600


def _is_user_error(exc: BaseException) -> bool:
    if isinstance(exc, USER_ERRORS):
        return True
    # codegen's BuildError (a RuntimeError), matched by name so that the CLI need not import
    # codegen (CasADi) and wherever codegen defines it
    return any(c.__name__ == "BuildError" and c.__module__.startswith("symdyn.")
               for c in type(exc).__mro__)


def error_line(exc: BaseException) -> str:
    """The one-line message of a user error: its first line, plus the first line of the rest
    that reports an error (e.g. the compiler's ``file.c:3:1: error: ...``) when there is more."""
    import re

    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    text = lines[0]
    if len(lines) > 1:
        detail = next((ln for ln in lines[1:] if re.search(r"\berror\b", ln, re.I)), None)
        if detail is not None:
            text += f": {detail}"
        text += " (symdyn --traceback ... shows the full message)"
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE - 3] + "..."
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``symdyn`` command; returns the exit code (0 success, 1 a command that
    ran but failed, e.g. an experiment, 2 usage or user error, 130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    where = f"symdyn {args.command}"
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `symdyn demo | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"\n{where}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - filtered below: bugs are re-raised
        if args.traceback or not _is_user_error(exc):
            raise
        print(f"{where}: error: {error_line(exc)}", file=sys.stderr)
        return 2


# --- demo ------------------------------------------------------------------------------------------

def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _once(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _fmt_s(t: float | None) -> str:
    return "-" if t is None else f"{t:.3g} s"


def parse_backends(text: str) -> list[str]:
    """The backends of ``symdyn demo --backends LIST`` (comma-separated, in the order given).
    Raises ValueError for an empty list, an unknown name or a name given twice."""
    known = ("numpy", "sympy", "casadi")
    names = [b.strip() for b in text.split(",")]
    if not any(names):
        raise ValueError(f"--backends needs at least one backend, got {text!r}; choose from "
                         f"{', '.join(known)}")
    out: list[str] = []
    for b in names:
        if not b:
            raise ValueError(f"empty backend name in --backends {text!r}; choose from "
                             f"{', '.join(known)}")
        if b not in known:
            raise ValueError(f"unknown backend {b!r} in --backends; choose from {', '.join(known)}")
        if b in out:
            raise ValueError(f"backend {b!r} is listed twice in --backends {text!r}")
        out.append(b)
    return out


def sympy_mode(model: Model, requested: str = "auto") -> tuple[str, str]:
    """What ``symdyn demo``'s SymPy row does on ``model``: ``("symbols", reason)`` builds symbolic
    expressions of rnea/crba/aba, ``("numbers", reason)`` evaluates the SymPy backend at
    ``sympy.Float`` inputs. ``requested`` ``"symbols"`` or ``"numbers"`` is taken as is; ``"auto"``
    chooses symbols for models with ``nv <= SYMPY_SYMBOLS_MAX_NV`` whose joints each have at most
    one velocity, numbers otherwise (the expressions of longer chains grow past what a demo can
    wait for, and ABA inverts the symbolic 3x3 / 6x6 articulated inertia of a spherical or
    floating joint)."""
    if requested not in _SYMPY_MODES:
        raise ValueError(f"unknown sympy mode {requested!r}; choose from {', '.join(_SYMPY_MODES)}")
    if requested != "auto":
        return requested, f"--sympy {requested}"
    multi = sorted({type(j).__name__.lower() for j, (a, b) in zip(model.joints, model.v_idx)
                    if b - a > 1})
    if multi:
        return "numbers", (f"the model has multi-DoF joints ({', '.join(multi)}): symbolic ABA "
                           "would invert their articulated inertias symbolically")
    if model.nv > SYMPY_SYMBOLS_MAX_NV:
        return "numbers", (f"nv = {model.nv} > {SYMPY_SYMBOLS_MAX_NV}: the time to build "
                           "symbolic expressions grows steeply with nv")
    return "symbols", f"nv = {model.nv} <= {SYMPY_SYMBOLS_MAX_NV}, one-DoF joints"


def _demo(args) -> int:
    import numpy as np

    from .. import algorithms as alg
    from ..models import random_state
    from ..io.specs import from_spec

    backends = parse_backends(args.backends)
    model = from_spec(args.model, lock=args.lock)
    q, qd, qdd = random_state(model, args.seed)
    calls = {
        "rnea": lambda B, q, qd, qdd: alg.rnea(model, q, qd, qdd, backend=B),
        "crba": lambda B, q, qd, qdd: alg.crba(model, q, backend=B),
        "aba": lambda B, q, qd, tau: alg.aba(model, q, qd, tau, backend=B),
    }
    out = print
    out(f"symdyn {_version()} demo: {model!r}")
    if model.is_symbolic:
        return _demo_symbolic(model, calls, out)
    out(f"state (seed {args.seed}): q random (angles in [0, 2 pi), unit quaternions), "
        f"qd and qdd in [0, 10]")
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    M = alg.crba(model, q)
    tau = alg.rnea(model, q, qd, qdd)
    nle = alg.nonlinear_effects(model, q, qd)
    g = alg.gravity_vector(model, q)
    out(f"\nM = crba(q)   ({model.nv} x {model.nv})\n{M}")
    out(f"\ntau = rnea(q, qd, qdd)\n{tau}")
    out(f"\nnonlinear effects C(q, qd) qd + g(q) = rnea(q, qd, 0)\n{nle}")
    out(f"\ngravity g(q)\n{g}")
    err = np.abs(alg.aba(model, q, qd, tau) - qdd).max()
    out(f"\ncheck: max |aba(q, qd, tau) - qdd| = {err:.2e};  "
        f"max |M qdd + nle - tau| = {np.abs(M @ qdd + nle - tau).max():.2e}")

    # aba takes tau in place of qdd
    args_of = {"rnea": (q, qd, qdd), "crba": (q, qd, qdd), "aba": (q, qd, tau)}
    rows, diffs, notes = [], {}, []
    if "numpy" in backends:
        rows.append(("numpy", f"evaluate (median of {args.repeat})",
                     [_median_time(lambda a=a: calls[a]("numpy", *args_of[a]), args.repeat)
                      for a in _DEMO_ALGORITHMS]))
    if "sympy" in backends:
        mode, why = sympy_mode(model, args.sympy)
        if mode == "symbols":
            r, d = _demo_sympy(model, calls, args_of)
            rows.append(("sympy", "build expressions", r))
        else:
            r, d = _demo_sympy_numbers(calls, args_of)
            rows.append(("sympy", "evaluate at numbers (once)", r))
            notes.append(f"sympy evaluated at sympy.Float inputs, not symbols ({why}); "
                         "--sympy symbols forces symbolic expressions, and `symdyn mass-matrix "
                         "MODEL --symbolic` writes closed forms")
        diffs["sympy"] = d
    if "casadi" in backends:
        build, func, evals, d = _demo_casadi(model, calls, args_of, args.repeat)
        rows.append(("casadi", "build SX graph", build))
        rows.append(("casadi", "build casadi.Function", func))
        rows.append(("casadi", f"evaluate Function (median of {args.repeat})", evals))
        diffs["casadi"] = d
    out(f"\ntimings in seconds (model {model.name}, nv = {model.nv})")
    width = max(len(w) for _, w, _ in rows) if rows else 10
    out(f"  {'backend':<8} {'what':<{width}} " + " ".join(f"{a:>11}" for a in _DEMO_ALGORITHMS))
    for b, what, ts in rows:
        out(f"  {b:<8} {what:<{width}} " + " ".join(f"{_fmt_s(t):>11}" for t in ts))
    for b, d in diffs.items():
        out(f"  {b} results evaluated at the state agree with numpy to max |diff| = {d:.1e}")
    for note in notes:
        out(f"  note: {note}")
    return 0


def _symbols(B: str, model):
    if B == "sympy":
        import sympy as sp

        return (sp.Matrix(sp.symbols(f"q0:{model.nq}")), sp.Matrix(sp.symbols(f"qd0:{model.nv}")),
                sp.Matrix(sp.symbols(f"u0:{model.nv}")))
    import casadi as ca

    return ca.SX.sym("q", model.nq), ca.SX.sym("qd", model.nv), ca.SX.sym("u", model.nv)


def _demo_sympy(model, calls, args_of):
    import numpy as np

    from ..backends import get_backend

    syms = _symbols("sympy", model)
    times, diff = [], 0.0
    flat = [s for v in syms for s in v]
    for a in _DEMO_ALGORITHMS:
        expr, t = _once(lambda a=a: calls[a]("sympy", *syms))
        times.append(t)
        vals = [x for v in args_of[a] for x in np.asarray(v, float)]
        num = get_backend("sympy").evaluate(expr, dict(zip(flat, vals)))
        ref = np.asarray(calls[a]("numpy", *args_of[a]), float)
        diff = max(diff, float(np.abs(num.reshape(ref.shape) - ref).max()))
    return times, diff


def _demo_sympy_numbers(calls, args_of):
    """The SymPy backend at the state itself (``sympy.Float`` inputs, 17 digits): one evaluation
    per algorithm, timed, and its max difference from NumPy."""
    import numpy as np
    import sympy as sp

    times, diff = [], 0.0
    for a in _DEMO_ALGORITHMS:
        ins = [sp.Matrix([sp.Float(float(x), 17) for x in np.asarray(v, float)])
               for v in args_of[a]]
        res, t = _once(lambda a=a, ins=ins: calls[a]("sympy", *ins))
        times.append(t)
        ref = np.asarray(calls[a]("numpy", *args_of[a]), float)
        num = np.array(res, dtype=float).reshape(ref.shape)
        diff = max(diff, float(np.abs(num - ref).max()))
    return times, diff


def _demo_casadi(model, calls, args_of, repeat):
    import casadi as ca
    import numpy as np

    syms = _symbols("casadi", model)
    build, func, evals, diff = [], [], [], 0.0
    for a in _DEMO_ALGORITHMS:
        expr, t = _once(lambda a=a: calls[a]("casadi", *syms))
        build.append(t)
        f, t = _once(lambda: ca.Function(a, list(syms), [expr]))
        func.append(t)
        vals = [np.asarray(v, float) for v in args_of[a]]
        evals.append(_median_time(lambda: f(*vals), repeat))
        ref = np.asarray(calls[a]("numpy", *args_of[a]), float)
        diff = max(diff, float(np.abs(np.array(f(*vals), float).reshape(ref.shape) - ref).max()))
    return build, func, evals, diff


def _dag_operations(exprs) -> int:
    """Operations in SymPy expressions, each shared subexpression counted once (a walk over the
    expression DAG; ``sympy.count_ops`` walks the tree, exponential in the depth of the recursive
    algorithms' expressions)."""
    seen, stack, ops = set(), list(exprs), 0
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if e.args:
            ops += 1
            stack.extend(e.args)
    return ops


def _demo_symbolic(model, calls, out) -> int:
    """Models with SymPy parameters run on the sympy backend only: M in closed form
    (:func:`symdyn.symbolic.core.mass_matrix`) for ``nv <= SYMPY_SYMBOLS_MAX_NV``, its size
    otherwise (the simplification of larger models takes minutes; ``symdyn mass-matrix MODEL
    --symbolic`` writes them), and the size of tau = rnea(q, qd, qdd)."""
    out(f"\nparameters: {', '.join(map(str, model.parameters()))}")
    if model.nv <= SYMPY_SYMBOLS_MAX_NV:
        from ..symbolic.core import mass_matrix

        res, t = _once(lambda: mass_matrix(model, simplify=True))
        out(f"\nM = crba(q) with q = {list(res.q)}  ({t:.3g} s to build and simplify)")
        for (i, j), e in sorted(res.entries.items()):
            out(f"  M[{i},{j}] = {e}")
        for i in range(model.nv):
            for j in range(i, model.nv):
                if (i, j) not in res.entries:
                    out(f"  M[{i},{j}] = 0")
    else:
        syms = _symbols("sympy", model)
        M, t = _once(lambda: calls["crba"]("sympy", *syms))
        out(f"\nM = crba(q) with q = {list(syms[0])}: {_dag_operations(M)} operations, "
            f"unsimplified ({t:.3g} s to build)")
        out(f"  note: closed forms are printed for nv <= {SYMPY_SYMBOLS_MAX_NV} (nv = {model.nv} "
            "here; simplification time grows steeply with nv); `symdyn mass-matrix MODEL --symbolic` "
            "writes them")
    syms = _symbols("sympy", model)
    tau, t = _once(lambda: calls["rnea"]("sympy", *syms))
    out(f"\ntau = rnea(q, qd, qdd) with qd = {list(syms[1])}, qdd = {list(syms[2])}: "
        f"{_dag_operations(tau)} operations, shared subexpressions counted once "
        f"({t:.3g} s to build)")
    return 0
