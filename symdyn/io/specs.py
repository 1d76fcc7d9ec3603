"""Model spec strings: short names for models, as the ``symdyn`` command's ``MODEL`` argument.

:func:`from_spec` turns strings like ``"serial:20"``, ``"binary:15"``, ``"quadruped:12:floating"``,
``"robot:panda"`` or a path to a ``.urdf`` file into a :class:`~symdyn.model.Model` by calling the
builders of :mod:`symdyn.models` (which know nothing about strings); :data:`SPEC_HELP` is the text
shown by ``symdyn ... --help``. Malformed or unknown specs raise :class:`SpecError` (a
``ValueError``) whose message names the spec and what is wrong.

Python code that wants a model calls the builders directly (``serial_chain(20)``), or uses
``from_spec`` for the same short names as the command line::

    from symdyn.io.specs import from_spec
    model = from_spec("branched:20:5")
"""
from __future__ import annotations

from ..model import Model, ModelError
from ..reduce import reduced_model

__all__ = ["LOCK_HELP", "SPEC_HELP", "SpecError", "apply_lock", "from_spec", "parse_lock"]


class SpecError(ValueError):
    """A model spec string (:func:`from_spec`) that is malformed or names no known model."""


SPEC_HELP = """model specs (options after the numbers, separated by ':'):
  serial:N[:joint=KIND][:seed=S]      serial chain of N bodies (KIND revolute, prismatic, helical,
                                      spherical, planar; '+'-separated kinds alternate)
  binary:N[:seed=S]                   binary tree (branching factor 2)
  branched:N:BF[:seed=S]              tree with branching factor BF
  biped:N[:floating][:seed=S]         torso + 2 legs sharing N actuated DoF
  quadruped:N[:floating][:seed=S]     torso + 4 legs sharing N actuated DoF
  planar:N[:symbolic]                 planar chain (symbolic: SymPy masses, lengths, inertias)
  paper004:N                          paper 004's benchmark chain
  random:N[:seed=S][:floating][:joint=KIND]  random tree
  robot:NAME[:lock=LOCKS]             a robot from example-robot-data (symdyn.io.robots.load_robot)
  PATH.urdf[:floating][:lock=LOCKS]   a URDF file (symdyn.io.urdf.load_urdf)
any spec may end with :lock=LOCKS (e.g. serial:4:lock=link2_joint=0.5).
LOCKS: joints locked with reduced_model, NAME[=VALUE],... (default value 0 / neutral), e.g.
  robot:panda:lock=panda_finger_joint1,panda_finger_joint2   (the Panda arm without fingers)"""

LOCK_HELP = ("lock joints (reduced_model): NAME[=VALUE],... with VALUE a number (default: 0, or "
             "the neutral configuration), e.g. panda_finger_joint1,panda_finger_joint2")

_SPEC_KINDS = ("serial", "binary", "branched", "biped", "quadruped", "planar", "paper004",
               "random", "robot")
# joint kinds the ``joint=`` option accepts (the builders accept the same names)
_JOINT_KINDS = ("revolute", "prismatic", "helical", "spherical", "planar", "floating")


def _spec_options(spec: str, parts: list[str], allowed: set[str]) -> dict:
    opts: dict = {}
    for part in parts:
        key, eq, val = part.partition("=")
        if not part:
            raise SpecError(f"model spec {spec!r}: empty option (two ':' in a row or a ':' at "
                            "the end)")
        if key in opts:
            raise SpecError(f"model spec {spec!r}: option {key!r} is given twice")
        if key not in allowed:
            raise SpecError(f"model spec {spec!r}: unknown option {part!r}"
                            + (f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""))
        if key == "seed":
            try:
                opts["seed"] = int(val)
            except ValueError:
                raise SpecError(f"model spec {spec!r}: seed must be an integer, got {val!r}") from None
        elif key == "joint":
            kinds = tuple(val.split("+"))
            bad = [k for k in kinds if k not in _JOINT_KINDS]
            if not val or bad:
                what = f"{bad[0]!r}" + (f" in {val!r}" if len(kinds) > 1 else "") if val else "''"
                raise SpecError(f"model spec {spec!r}: unknown joint kind {what}; known: "
                                f"{', '.join(_JOINT_KINDS)}")
            opts["joint"] = kinds
        else:
            if eq:
                raise SpecError(f"model spec {spec!r}: option {key!r} takes no value")
            opts[key] = True
    return opts


def parse_lock(text: str, where: str = "--lock") -> dict:
    """``"NAME[=VALUE],..."`` as a dict joint name -> float (or None: neutral). Raises
    :class:`SpecError` naming ``where`` for empty names, duplicates or values that are not
    numbers."""
    out: dict = {}
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"{where}: expected NAME[=VALUE],... (joint names to lock), got {text!r}")
    for item in text.split(","):
        name, eq, val = (s.strip() for s in item.partition("="))
        if not name:
            raise SpecError(f"{where}: empty joint name in {text!r} (expected NAME[=VALUE],...)")
        if name in out:
            raise SpecError(f"{where}: joint {name!r} is locked twice in {text!r}")
        if eq:
            try:
                out[name] = float(val)
            except ValueError:
                raise SpecError(f"{where}: the value of joint {name!r} must be a number, got "
                                f"{val!r} (multi-coordinate joints lock at their neutral "
                                "configuration; give values from Python with reduced_model)") from None
            if val.strip().lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
                raise SpecError(f"{where}: the value of joint {name!r} must be finite, got {val!r}")
        else:
            out[name] = None
    return out


def apply_lock(model: Model, lock, where: str = "--lock") -> Model:
    """``reduced_model(model, lock)`` with ``lock`` a ``NAME[=VALUE],...`` string (:func:`parse_lock`),
    names or a dict; None or empty: the model itself."""
    if not lock:
        return model
    if isinstance(lock, str):
        lock = parse_lock(lock, where)
    return reduced_model(model, lock)


def _spec_int(spec: str, text: str, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise SpecError(f"model spec {spec!r}: {what} must be a positive integer, got {text!r}") from None
    if v < 1:
        raise SpecError(f"model spec {spec!r}: {what} must be a positive integer, got {v}")
    return v


def _split_lock(spec: str) -> tuple[str, str | None]:
    """``spec`` without a trailing ``:lock=...`` option, and that option's text."""
    head, sep, locks = spec.rpartition(":lock=")
    return (head, locks) if sep else (spec, None)


def from_spec(spec: str, lock=None) -> Model:
    """Build a model from a short spec string such as ``"serial:20"``, ``"binary:15"``,
    ``"branched:20:5"``, ``"biped:20"``, ``"quadruped:12:floating"``, ``"planar:10"``,
    ``"planar:3:symbolic"``, ``"paper004:50"``, ``"random:12:seed=3"``, ``"robot:panda"`` or a
    path to a ``.urdf`` file. See :data:`SPEC_HELP`. Raises :class:`SpecError` (a ValueError)
    for unknown or malformed specs; errors of the builders that concern the model itself
    (:class:`~symdyn.model.ModelError`, URDF errors) pass through unchanged.

    ``lock`` (names, a dict name -> value or a ``NAME[=VALUE],...`` string) and a trailing
    ``:lock=NAME[=VALUE],...`` option (any spec, last) lock joints with
    :func:`symdyn.reduced_model`; both may be given (they are merged; a
    joint in both is an error).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"model spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    head, locks = _split_lock(spec)
    if locks is None:
        return apply_lock(_from_spec(spec), lock)
    if ":lock=" in head:
        raise SpecError(f"model spec {spec!r}: option 'lock' is given twice (give the joints "
                        "in one lock=NAME[=VALUE],...)")
    spec_locks = parse_lock(locks, f"model spec {spec!r}: lock=")
    if lock:
        extra = parse_lock(lock, "lock") if isinstance(lock, str) else \
            (dict(lock) if isinstance(lock, dict) else {n: None for n in lock})
        both = sorted(set(extra) & set(spec_locks))
        if both:
            raise SpecError(f"model spec {spec!r}: joint(s) {both} locked both in the spec and by "
                            "--lock/lock=")
        spec_locks.update(extra)
    return apply_lock(_from_spec(head), spec_locks)


def _from_spec(spec: str) -> Model:
    from .. import models as M

    base, _, rest = spec.partition(":")
    if base.lower().endswith(".urdf") or spec.lower().endswith(".urdf"):
        path, floating = spec, False
        if spec.lower().endswith(":floating"):
            path, floating = spec[: -len(":floating")], True
        from .urdf import load_urdf

        return load_urdf(path, floating_base=floating)
    parts = rest.split(":") if rest else []
    if base not in _SPEC_KINDS:
        from .robots import available_robots
        hint = f" (the built-in robot: robot:{spec})" if spec in available_robots() else ""
        raise SpecError(f"unknown model spec {spec!r}{hint}; expected one of "
                        f"{', '.join(k + ':...' for k in _SPEC_KINDS)} or a path to a .urdf file")
    if base == "robot":
        if len(parts) != 1 or not parts[0]:
            raise SpecError(f"model spec {spec!r}: expected robot:NAME (e.g. robot:panda)")
        from .robots import load_robot

        return load_robot(parts[0])
    if not parts:
        raise SpecError(f"model spec {spec!r}: expected {base}:N (a number of bodies / DoF)")
    n = _spec_int(spec, parts[0], "N")
    try:
        if base == "branched":
            if len(parts) < 2:
                raise SpecError(f"model spec {spec!r}: expected branched:N:BF (BF = branching factor)")
            bf = _spec_int(spec, parts[1], "the branching factor BF")
            opts = _spec_options(spec, parts[2:], {"seed", "joint"})
            return M.branched_tree(n, bf, **opts)
        opts_allowed = {"serial": {"seed", "joint"}, "binary": {"seed", "joint"},
                        "biped": {"floating", "seed"}, "quadruped": {"floating", "seed"},
                        "planar": {"symbolic"}, "paper004": set(),
                        "random": {"seed", "floating", "joint"}}[base]
        opts = _spec_options(spec, parts[1:], opts_allowed)
        if base == "serial":
            return M.serial_chain(n, joint=opts.get("joint", "revolute"), seed=opts.get("seed"))
        if base == "binary":
            return M.binary_tree(n, seed=opts.get("seed"), joint=opts.get("joint", "revolute"))
        if base == "biped":
            return M.biped(n, floating=opts.get("floating", False), seed=opts.get("seed"))
        if base == "quadruped":
            return M.quadruped(n, floating=opts.get("floating", False), seed=opts.get("seed"))
        if base == "planar":
            return M.planar_chain(n, symbolic_params=opts.get("symbolic", False))
        if base == "paper004":
            return M.paper004_chain(n)
        return M.random_tree(n, seed=opts.get("seed", 0),
                             joint_kinds=opts.get("joint", ("revolute",)),
                             floating_base=opts.get("floating", False))
    except (SpecError, ModelError):
        raise
    except ValueError as exc:
        raise SpecError(f"model spec {spec!r}: {exc}") from None
