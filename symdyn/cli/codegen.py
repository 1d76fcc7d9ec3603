"""``symdyn codegen MODEL --algorithms rnea,crba,... --out DIR [--compile] [--name NAME]``.

Writes CasADi-generated C sources (one file per algorithm), the call/batch wrapper, an example
``main.c`` and a Makefile into DIR; the sources compile without Python (``make`` in DIR).
``--compile`` also builds the shared library and the example program, loadable from Python with
``symdyn.codegen.load(DIR)``.

The library also exports the derivative entry points that CasADi's ``casadi.external`` looks up
(``--derivatives``, default 2: ``jac_F``, ``fwd1_F``, ``adj1_F``, ``fwd1_adj1_F``,
``adj1_adj1_F`` for each function ``F`` of the unrolled form), so that
``casadi.external("panda_aba", "libpanda.so")`` can be differentiated, e.g. inside an ipopt
problem with exact Hessians.
"""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path


def register(subparsers) -> None:
    """Add the ``codegen`` subcommand (see :mod:`symdyn.cli`)."""
    from ..io.specs import SPEC_HELP
    from ..codegen.build import OPT_LEVELS
    from ..codegen.functions import ALGORITHMS

    p = subparsers.add_parser(
        "codegen", help="export C code of algorithms (CasADi code generation), optionally compiled",
        description="Generate C for symdyn algorithms on a model with CasADi: one source and "
                    "header per algorithm, <name>_api.c/.h (NaN-checked call and threaded batch "
                    "wrappers), an example main.c and a Makefile. The sources need no Python.",
        epilog=f"algorithms: {', '.join(ALGORITHMS)}\n\nFrame functions need --option "
               "frame=NAME (a link or joint name; NAME1,NAME2 gives one function per frame) and "
               "take --option reference=local|world|local_world_aligned.\n\n" + SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="model spec (see below) or a .urdf path")
    p.add_argument("--algorithms", default="rnea,crba,aba", metavar="LIST",
                   help="comma-separated algorithms (default: rnea,crba,aba)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--name", default=None,
                   help="C prefix of the exported symbols (default: the model's name, sanitized)")
    p.add_argument("--compile", action="store_true",
                   help="also compile the shared library and the example program")
    p.add_argument("--opt", default="auto", type=_opt, metavar="LEVEL",
                   help="optimization level: auto (default, chosen per function size) or "
                        f"{', '.join(o[1:] for o in OPT_LEVELS[1:])} (also --opt=-O2)")
    p.add_argument("--native", action="store_true",
                   help="compile with -march=native (faster, not portable to other CPUs)")
    p.add_argument("--cflags", default="", metavar="FLAGS", help="extra compiler flags")
    p.add_argument("--no-cse", dest="cse", action="store_false",
                   help="skip CasADi's common-subexpression elimination")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm option, e.g. factorization=simple (repeatable)")
    p.add_argument("--parameters", choices=("inertial",), default=None,
                   help="inertial: functions that depend on the inertias take the 10 N inertial "
                        "parameters pi (Pinocchio's order) as a last input")
    p.add_argument("--form", choices=("auto", "unrolled", "recursive"), default="auto",
                   help="unrolled: one straight-line graph per function; recursive: per-step "
                        "kernels and a C loop over the model's table (code size independent of "
                        "N); auto: unrolled up to 40k SX instructions (default)")
    p.add_argument("--derivatives", type=int, choices=(0, 1, 2), default=2, metavar="N",
                   help="derivative entry points for casadi.external (unrolled functions): 0 "
                        "none, 1 jac_F, fwd1_F, adj1_F, 2 (default) also fwd1_adj1_F, "
                        "adj1_adj1_F (exact Hessians, e.g. ipopt's default)")
    p.add_argument("--quiet", action="store_true", help="no progress messages")
    p.set_defaults(func=run)


def _opt(text: str) -> str:
    from ..codegen.build import OPT_LEVELS

    level = text if text == "auto" or text.startswith("-") else f"-{text}"
    if level not in OPT_LEVELS:
        raise argparse.ArgumentTypeError(f"unknown level {text!r}; choose from auto, "
                                         + ", ".join(o[1:] for o in OPT_LEVELS[1:]))
    return level


def _options(pairs) -> dict:
    out = {}
    for text in pairs:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option expects KEY=VALUE, got {text!r}")
        key, value = key.strip(), value.strip()
        if key == "frame" and "," in value:      # one function per frame
            out[key] = [v.strip() for v in value.split(",") if v.strip()]
        else:
            out[key] = value
    return out


def _check_frames(model, frames) -> None:
    """``--option frame=...`` names frames of the model: an unknown name is a user error
    (ValueError, one line) here, where the library's lookup raises KeyError."""
    from ..algorithms.frames import resolve_frame

    for name in [] if frames is None else [frames] if isinstance(frames, str) else frames:
        try:
            resolve_frame(model, name)
        except KeyError as exc:
            raise ValueError(f"--option frame={name}: {exc.args[0] if exc.args else exc}") from None


def run(args) -> int:
    """Handler of ``symdyn codegen``; returns the exit code."""
    from ..io.specs import from_spec
    from ..codegen.build import compile_library, compiler_info, generate_sources
    from ..codegen.cache import write_manifest

    model = from_spec(args.model)
    options = _options(args.option)
    _check_frames(model, options.get("frame"))
    out = Path(args.out)
    progress = False if args.quiet else True
    manifest = generate_sources(model, args.algorithms, out, args.name, cse=args.cse,
                                progress=progress, parameters=args.parameters,
                                form=args.form, derivatives=args.derivatives, **options)
    print(f"{model!r}: wrote C sources to {out}/")
    for fd in manifest["functions"]:
        print(f"  {fd['source']:<40} {fd['n_nodes']:>8} SX nodes {fd['n_instructions']:>8} "
              f"instructions  {fd['source_bytes'] / 1e3:8.0f} kB  {fd['form']} "
              f"({fd['form_reason']})")
    print(f"  {manifest['prefix']}_api.c/.h (call/batch wrappers), main.c (example), Makefile")
    der = [fd for fd in manifest["functions"] if fd.get("derivatives")]
    if der:
        print(f"  derivatives for casadi.external: "
              f"{', '.join(fd['derivatives']['source'] for fd in der)}")
    if args.compile:
        cc, _ = compiler_info()
        manifest = compile_library(out, manifest, opt=args.opt, cflags=args.cflags.split(),
                                   native=args.native, progress=progress)
        # the example links the library just built (the Makefile rebuilds everything from source)
        cmd = [cc, "-O1", "-o", "example", "main.c", manifest["library"], "-Wl,-rpath,$ORIGIN",
               "-lm", "-pthread"]
        res = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        if res.returncode != 0:
            raise OSError(f"compiling the example failed: {' '.join(cmd)}\n{res.stderr[-2000:]}")
        print(f"  compiled {manifest['library']} in {manifest['t_compile_wall']:.1f}s "
              f"({manifest['t_compile_cpu']:.1f}s CPU) and ./example; load it with "
              f"symdyn.codegen.load({str(out)!r})")
    manifest["key"] = None
    write_manifest(out, manifest)
    return 0
