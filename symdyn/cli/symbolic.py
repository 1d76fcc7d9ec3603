"""``symdyn christoffel | coriolis | mass-matrix MODEL --symbolic ...``: closed forms as files."""
from __future__ import annotations

import argparse
import sys

_KINDS = {"christoffel": "Christoffel symbols Gamma[i,j,k] (C*[i,j] = sum_k Gamma[i,j,k] qd[k])",
          "coriolis": "the Christoffel-consistent Coriolis matrix C*(q, qd)",
          "mass-matrix": "the mass matrix M(q)"}


#: numeric models with at least this many velocities get the structured closed form by default
#: (the flattened expressions of real 6- and 7-DoF arms blow up; see symdyn.symbolic.structured)
STRUCTURED_FROM_NV = 5


def register(subparsers) -> None:
    from ..io.specs import SPEC_HELP

    for kind, what in _KINDS.items():
        p = subparsers.add_parser(
            kind, help=f"{what}: closed form (--symbolic) or numbers at a configuration",
            description=f"Compute {what} of MODEL. With --symbolic: closed-form expressions in "
                        "symbolic q (and, with --symbolic-params, symbolic masses, lengths and "
                        "inertias), simplified to a canonical trigonometric form and written as "
                        "LaTeX, Python or C. Without: numbers at the configuration --q.",
            epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("model", metavar="MODEL", help="model spec or URDF path")
        p.add_argument("--symbolic", action="store_true", help="closed-form expressions")
        p.add_argument("--symbolic-params", action="store_true",
                       help="symbolic model parameters too (planar:N: m_i, l_i, lc_i, I_i; other "
                            "models: masses, CoMs and inertias)")
        p.add_argument("--format", choices=("latex", "python", "c", "text"), default="text")
        p.add_argument("--method", choices=("algorithm2", "eq4"), default="algorithm2",
                       help="christoffel only: paper 000 Algorithm 2 or eq. (4) (partials of M)")
        p.add_argument("--no-simplify", action="store_true", help="skip simplification")
        form = p.add_mutually_exclusive_group()
        form.add_argument("--structured", action="store_true",
                          help="structured closed form: shared definitions (s_i = sin q_i, c_i, "
                               "t_k) in recursion order, then the entries in terms of them "
                               f"(default for numeric models with nv >= {STRUCTURED_FROM_NV})")
        form.add_argument("--flat", action="store_true",
                          help="one simplified expression per entry (default for nv < "
                               f"{STRUCTURED_FROM_NV} and with --symbolic-params)")
        p.add_argument("--parameters", choices=("inertial",), default=None,
                       help="structured only: the 10 N inertial parameters pi1.. as symbols, "
                            "entries written as linear combinations of them")
        p.add_argument("--q", default=None, metavar="LIST",
                       help="numeric mode: comma-separated configuration (default: random, --seed)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", default=None, metavar="FILE", help="output file (default: stdout)")
        p.add_argument("--quiet", action="store_true",
                       help="no progress messages (default: progress on stderr, a status line on "
                            "a terminal, a line per stage and at most every 10 s in a log)")
        p.set_defaults(func=_run, kind=kind)


def _model(args):
    from ..io.specs import from_spec

    spec = args.model
    if args.symbolic_params:
        if spec.startswith("planar:") and not spec.endswith(":symbolic"):
            return from_spec(spec + ":symbolic")
        from ..symbolic.core import symbolize_inertias

        return symbolize_inertias(from_spec(spec))
    return from_spec(spec)


def _check_mode_options(args) -> None:
    """Options that only mean something with --symbolic (or only for christoffel) are refused
    where they would be ignored: the numeric mode prints numbers at one configuration, which
    have no structured form and no inertial-parameter form (``--parameters inertial --symbolic``
    writes the entries as linear combinations of the 10 N parameters)."""
    if args.method != "algorithm2" and args.kind != "christoffel":
        raise ValueError(f"--method {args.method} applies to christoffel only, not {args.kind}")
    if args.symbolic:
        return
    given = [opt for opt, on in (("--parameters inertial", args.parameters is not None),
                                 ("--structured", args.structured), ("--flat", args.flat),
                                 (f"--method {args.method}", args.method != "algorithm2"))
             if on]
    if given:
        raise ValueError(f"{given[0]} needs --symbolic (closed forms); without it {args.kind} "
                         "prints numbers at one configuration (--q)")


def _run(args) -> int:
    from ..symbolic import core, export

    _check_mode_options(args)
    model = _model(args)
    if not args.symbolic:
        text = _numeric(model, args)
    else:
        progress = not args.quiet
        simplify = not args.no_simplify
        structured = args.structured or args.parameters is not None or (
            not args.flat and not model.is_symbolic and model.nv >= STRUCTURED_FROM_NV)
        if structured and args.flat:
            raise ValueError("--parameters needs the structured form (drop --flat)")
        if structured and args.symbolic_params:
            raise ValueError("--structured needs numeric model parameters: use --parameters "
                             "inertial for symbolic inertial parameters, or drop --structured")
        if structured:
            from ..symbolic import structured as st

            kind = {"christoffel": "christoffel", "coriolis": "coriolis_matrix",
                    "mass-matrix": "mass_matrix"}[args.kind]
            if args.kind == "christoffel" and args.method != "algorithm2":
                raise ValueError("--structured traces Algorithm 2: drop --method eq4 or add --flat")
            res = st.structured(model, kind, parameters=args.parameters, progress=progress)
        elif args.kind == "christoffel":
            res = core.christoffel(model, simplify=simplify, method=args.method, progress=progress)
        elif args.kind == "coriolis":
            res = core.coriolis_matrix(model, simplify=simplify, progress=progress)
        else:
            res = core.mass_matrix(model, simplify=simplify, progress=progress)
        if args.format == "latex":
            text = export.to_latex(res)
        elif args.format == "python":
            text = export.to_python(res)
        elif args.format == "c":
            text = export.to_c(res)
        elif structured:
            text = "\n".join([repr(res)] + [f"{s} = {e}" for s, e in res.definitions]
                             + [f"{tuple(i + 1 for i in k)}: {e}"
                                for k, e in sorted(res.entries.items())]) + "\n"
        else:
            text = "\n".join([repr(res)] + [f"{tuple(i + 1 for i in k)}: {e}"
                                            for k, e in sorted(res.entries.items())]) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _numeric(model, args) -> str:
    import numpy as np

    if model.is_symbolic:
        raise ValueError("numeric mode needs numeric parameters: drop --symbolic-params or add --symbolic")
    if args.format not in ("text",):
        raise ValueError("--format latex/python/c needs --symbolic")
    if args.q is None:
        q = model.random_q(np.random.default_rng(args.seed))
    else:
        try:
            q = np.array([float(x) for x in args.q.split(",")])
        except ValueError:
            raise ValueError(f"--q must be comma-separated numbers, got {args.q!r}") from None
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    lines = [f"{model!r}", f"q = {q}"]
    if args.kind == "christoffel":
        from ..algorithms.christoffel import christoffel_nonzero

        G = christoffel_nonzero(model, q)
        lines += [f"Gamma{tuple(i + 1 for i in k)} = {v:.10g}" for k, v in sorted(G.items())
                  if abs(v) > 1e-14]
    elif args.kind == "coriolis":
        from ..algorithms.coriolis import coriolis_matrix

        qd = np.random.default_rng(args.seed + 1).uniform(0, 10, model.nv)
        _, _, C = coriolis_matrix(model, q, qd)
        lines += [f"qd = {qd}", "C* =", str(C)]
    else:
        from ..algorithms.crba import crba

        lines += ["M =", str(crba(model, q))]
    return "\n".join(lines) + "\n"
