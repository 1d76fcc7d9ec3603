"""URDF import: ``load_urdf(path_or_xml, floating_base=False)`` -> :class:`~symdyn.model.Model`.

Conventions mapped (URDF -> symdyn)
-----------------------------------
* ``<origin xyz rpy>`` of a joint is the pose of the joint (= child link) frame in the parent link
  frame, ``R = Rz(yaw) Ry(pitch) Rx(roll)``; symdyn's tree transform is ``Xtree = Transform(R^T, xyz)``.
* ``<axis xyz>`` (default ``1 0 0``, normalized) is in the joint frame; unit coordinate axes become the
  exact ``'x' | 'y' | 'z'`` forms, anything else (negative axes included) a general unit vector.
* Joint types: revolute and continuous -> :class:`~symdyn.joints.Revolute` (Pinocchio
  stores a continuous joint as (cos, sin) with nq = 2, symdyn as the angle), prismatic ->
  ``Prismatic``, fixed -> ``Fixed`` (merged into the parent by the Model; the link stays a named
  frame in ``model.frames`` and the joint's name a frame in ``model.fixed_joints``), floating ->
  ``Floating``, planar -> ``Planar`` (only with axis ``0 0 1``).
  Visuals and collisions are ignored.
* Actuation data (:class:`~symdyn.model.Model` fields): ``<limit lower upper velocity effort>`` ->
  ``model.limits``. A missing ``lower`` or ``upper`` is 0, the URDF specification's default (as
  urdfdom and Pinocchio read it): a revolute or prismatic joint whose ``<limit>`` gives neither
  has the position range [0, 0]. Continuous, floating and planar joints are unlimited in position
  whatever the file says. Deviation from the specification, which requires ``<limit>`` with
  ``velocity`` and ``effort`` on revolute and prismatic joints (urdfdom, hence Pinocchio, refuses
  files without them): symdyn loads such files, reading a missing ``<limit>`` element as no
  position limits (-inf, +inf) and a missing ``velocity`` or ``effort`` as +inf (unknown), since
  no dynamics algorithm uses the limits. ``<dynamics damping friction>`` ->
  ``model.damping``, ``model.friction`` (missing: 0). Armature (rotor inertia) is not part of
  URDF: pass ``armature=`` (a number, a dict joint name -> number, or nv numbers).
* ``<mimic joint multiplier offset>`` (``q = multiplier * q_master + offset``; defaults 1, 0):
  ``mimic="independent"`` (default) loads mimic joints as independent joints and records the
  relation in ``model.mimic`` (chains of mimic joints resolved to the independent joint); the
  coupled dynamics comes from :mod:`symdyn.reduce` (``mimic_crba``, ``mimic_rnea``,
  ``mimic_aba``, ``expand_mimic``, ``mimic_matrix``); ``mimic="error"`` refuses files with mimic
  joints, naming the first one. A ``<mimic>`` naming a joint that does not exist is an error;
  ``mimic="ignore"`` loads such joints as independent joints without coupling (a ``UserWarning``
  names them; the other relations are recorded as with ``"independent"``), which is how Pinocchio
  loads example-robot-data's ``alex_psyonic_hands.urdf``. A ``<mimic>`` on a fixed joint has no coordinate to couple and is
  ignored (talos's URDFs have such leftovers).
* ``<inertial>``: CoM = origin xyz; the inertia tensor (about the CoM, inertial-frame axes) is rotated
  into link axes, ``Ic = R I R^T``. A link without ``<inertial>`` is massless (zero inertia), as in
  Pinocchio; a link of mass 0 keeps the rotational inertia written in the file, as Pinocchio does.
* ``floating_base=True``: the root link is body 0 on a :class:`~symdyn.joints.Floating` joint named
  ``"root_joint"`` (Pinocchio's name for a free-flyer root); ``False``: the root link is the world
  frame and its inertia is dropped.

Inertia policy (``check_inertias=True``, the default): individual links may be massless or point
masses (sensor frames, contact points); what is checked is each *moving* body after fixed links are
merged into it: it must be physically consistent (:func:`physical_inertia_problem`: mass > 0, rotational
inertia positive semidefinite with the triangle inequalities, so point masses and thin rods pass), or
exactly massless with mass somewhere below it (an intermediate link of a multi-axis joint). Anything else
would make the mass matrix singular or non-physical and raises :class:`URDFError`;
``check_inertias=False`` loads the file's values unchecked (only mass >= 0 and finite numbers).

The XML is parsed with expat and any DOCTYPE (hence any entity declaration: billion laughs, external
entities such as ``file:///etc/passwd``) is refused before it is processed; nothing is fetched.
Malformed files raise :class:`URDFError` naming the element, its line and the problem.
"""
from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

import numpy as np

from ..joints import make_joint
from ..model import (MAX_MAGNITUDE, Body, Model, ModelError, check_size, mass_com_inertia,
                    physical_inertia_problem)
from ..reduce import reduced_model
from ..snapping import SNAP_TOLERANCE, check_snap_tolerance
from ..spatial import Transform
from ..types import Array

__all__ = ["URDFError", "load_urdf", "mass_com_inertia", "physical_inertia_problem", "rpy_to_rot"]

URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


class URDFError(ValueError):
    """A malformed or unsupported URDF (the message names the element, its line and the problem)."""


# --- hardened XML ---------------------------------------------------------------------------------

def _refuse(what):
    def handler(*_args):
        raise URDFError(f"{what} are not allowed in URDF files (they enable entity-expansion and "
                        "external-entity attacks); remove the DOCTYPE")
    return handler


def _parse_xml(data: bytes | str, label: str):
    """Parse with expat, refusing DOCTYPE/ENTITY declarations; returns (root, {element: line})."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse("DOCTYPE declarations")
    parser.EntityDeclHandler = _refuse("ENTITY declarations")
    parser.UnparsedEntityDeclHandler = _refuse("ENTITY declarations")
    parser.ExternalEntityRefHandler = _refuse("external entities")
    builder, lines = ET.TreeBuilder(), {}

    def start(tag, attrs):
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    try:
        parser.Parse(data, True)
    except URDFError as exc:
        raise URDFError(f"{label}: line {parser.CurrentLineNumber}: {exc}") from None
    except expat.ExpatError as exc:
        raise URDFError(f"{label}: malformed XML: {exc}") from None
    return builder.close(), lines


# --- element helpers ------------------------------------------------------------------------------

class _Ctx:
    def __init__(self, label, lines):
        self.label, self.lines = label, lines

    def error(self, owner: str, el, problem: str) -> URDFError:
        line = self.lines.get(el)
        at = f" (line {line})" if line else ""
        return URDFError(f"{self.label}: {owner}{at}: {problem}")

    def numbers(self, owner, el, attr, n, default=None):
        text = el.get(attr) if el is not None else None
        if text is None:
            if default is None:
                raise self.error(owner, el, f"<{el.tag}> has no {attr!r} attribute")
            return np.array(default, dtype=float)
        parts = text.split()
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise self.error(owner, el, f"<{el.tag} {attr}={text!r}>: expected {n} numbers") from None
        if len(vals) != n:
            raise self.error(owner, el, f"<{el.tag} {attr}={text!r}>: expected {n} numbers, "
                                        f"got {len(vals)}")
        if not all(math.isfinite(v) for v in vals):
            raise self.error(owner, el, f"<{el.tag} {attr}={text!r}>: NaN or inf (or a value that "
                                        "overflows double precision)")
        if any(abs(v) > MAX_MAGNITUDE for v in vals):
            raise self.error(owner, el, f"<{el.tag} {attr}={text!r}>: a value above "
                                        f"symdyn.model.MAX_MAGNITUDE = {MAX_MAGNITUDE:g} in magnitude "
                                        "(products of such values overflow double precision)")
        return np.array(vals, dtype=float)

    def origin(self, owner, parent_el):
        """(R, xyz) of an optional <origin> child."""
        o = parent_el.find("origin")
        if o is None:
            return np.eye(3), np.zeros(3)
        xyz = self.numbers(owner, o, "xyz", 3, (0.0, 0.0, 0.0))
        rpy = self.numbers(owner, o, "rpy", 3, (0.0, 0.0, 0.0))
        return rpy_to_rot(*rpy), xyz

    def child(self, owner, el, tag):
        c = el.find(tag)
        if c is None:
            raise self.error(owner, el, f"<{el.tag}> has no <{tag}> element")
        return c


def rpy_to_rot(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll) (child axes in parent coordinates)."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


# --- URDF elements --------------------------------------------------------------------------------

def _link_inertia(ctx: _Ctx, link):
    """(mass, com, Ic) in link coordinates; (0, 0, 0) without <inertial>."""
    name = link.get("name")
    owner = f"link {name!r}"
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    R, com = ctx.origin(owner, inertial)  # values that overflow later are refused by the Model
    mass_el = inertial.find("mass")
    if mass_el is None or mass_el.get("value") is None:
        raise ctx.error(owner, inertial if mass_el is None else mass_el,
                        "<inertial> has no <mass value=...> (missing mass)")
    mass = float(ctx.numbers(owner, mass_el, "value", 1)[0])
    if mass < 0:
        raise ctx.error(owner, mass_el, f"<mass value={mass_el.get('value')!r}>: mass must be >= 0")
    inertia_el = ctx.child(owner, inertial, "inertia")
    c = {k: float(ctx.numbers(owner, inertia_el, k, 1)[0])
         for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I = np.array([[c["ixx"], c["ixy"], c["ixz"]],
                  [c["ixy"], c["iyy"], c["iyz"]],
                  [c["ixz"], c["iyz"], c["izz"]]])
    return mass, com, R @ I @ R.T


def _make_joint(ctx: _Ctx, j, jname: str):
    owner = f"joint {jname!r}"
    kind = j.get("type")
    if kind is None:
        raise ctx.error(owner, j, "no 'type' attribute")
    if kind not in URDF_JOINT_TYPES:
        raise ctx.error(owner, j, f"unknown joint type {kind!r}; URDF joint types are "
                                  f"{', '.join(URDF_JOINT_TYPES)}")
    if kind in ("fixed", "floating"):
        return make_joint(kind)
    axis_el = j.find("axis")
    axis = ctx.numbers(owner, axis_el, "xyz", 3, (1.0, 0.0, 0.0)) if axis_el is not None \
        else np.array([1.0, 0.0, 0.0])
    big = float(np.abs(axis).max())
    if big < 1e-12:
        raise ctx.error(owner, axis_el, "<axis xyz='0 0 0'>: the joint axis must be nonzero")
    axis = axis / big  # scaled first: a norm of huge entries would overflow
    axis = axis / float(np.linalg.norm(axis))
    if kind == "planar":
        if not np.allclose(axis, (0.0, 0.0, 1.0), atol=1e-12):
            raise ctx.error(owner, j, f"planar joint with axis {axis.tolist()}: symdyn's Planar joint "
                                      "moves in the x-y plane, so the URDF axis (plane normal) must be "
                                      "'0 0 1' (rotate the joint origin instead)")
        return make_joint("planar")
    return make_joint(kind, _axis_spec(axis))  # revolute, continuous (= revolute), prismatic


def _axis_spec(axis: np.ndarray):
    for name, k in (("x", 0), ("y", 1), ("z", 2)):
        e = np.zeros(3)
        e[k] = 1.0
        if np.array_equal(axis, e):
            return name
    return tuple(float(a) for a in axis)


def _read(source) -> tuple[bytes | str, str]:
    if isinstance(source, (str, bytes)) and not source.strip():
        raise URDFError("load_urdf: the source is empty (expected a path or an XML string)")
    if isinstance(source, bytes):  # leading blanks (e.g. triple-quoted strings) are tolerated
        return source.lstrip(), "<URDF string>"
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.lstrip(), "<URDF string>"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"URDF file not found: {path}")
        return path.read_bytes(), str(path)
    raise TypeError(f"load_urdf expects a path or an XML string, got {type(source).__name__}")


# --- loader ---------------------------------------------------------------------------------------

MIMIC_MODES = ("independent", "ignore", "error")


def _actuation(ctx: _Ctx, j, jname: str, joint) -> tuple:
    """(limits (lower, upper, velocity, effort), damping, friction) of a moving joint element."""
    owner = f"joint {jname!r}"
    nq, nv = joint.nq, joint.nv
    lower, upper = [-math.inf] * nq, [math.inf] * nq
    velocity, effort = [math.inf] * nv, [math.inf] * nv
    lim = j.find("limit")
    if lim is not None and nq == 1:
        vals = {k: float(ctx.numbers(owner, lim, k, 1)[0]) for k in ("lower", "upper", "velocity",
                                                                     "effort") if lim.get(k) is not None}
        for k in ("velocity", "effort"):
            if vals.get(k, 0.0) < 0:
                raise ctx.error(owner, lim, f"<limit {k}={lim.get(k)!r}>: must be >= 0")
        if j.get("type") != "continuous":  # the URDF specification's defaults: lower = upper = 0
            lower = [vals.get("lower", 0.0)]
            upper = [vals.get("upper", 0.0)]
            if lower[0] > upper[0]:
                raise ctx.error(owner, lim, f"<limit lower={lim.get('lower')!r} "
                                            f"upper={lim.get('upper')!r}>: lower > upper")
        velocity = [vals.get("velocity", math.inf)]
        effort = [vals.get("effort", math.inf)]
    damping = friction = 0.0
    dyn = j.find("dynamics")
    if dyn is not None and nv > 0:
        for k in ("damping", "friction"):
            if dyn.get(k) is not None:
                val = float(ctx.numbers(owner, dyn, k, 1)[0])
                if val < 0:
                    raise ctx.error(owner, dyn, f"<dynamics {k}={dyn.get(k)!r}>: must be >= 0")
                if k == "damping":
                    damping = val
                else:
                    friction = val
    return (lower, upper, velocity, effort), damping, friction


def _mimics(ctx: _Ctx, elements: dict, kinds: dict, mode: str) -> dict:
    """joint name -> (master, multiplier, offset) with chains resolved to the independent joint.
    ``mode="ignore"``: a ``<mimic>`` whose master joint does not exist is skipped (one
    ``UserWarning`` lists them); ``"error"``: any ``<mimic>`` is refused."""
    raw = {}
    skipped: list[str] = []
    for jname, j in elements.items():
        m = j.find("mimic")
        if m is None or kinds[jname] == "fixed":  # a fixed joint has no coordinate to couple
            continue
        owner = f"joint {jname!r}"
        if mode == "error":
            raise ctx.error(owner, m, f"<mimic joint={m.get('joint')!r}>: mimic joints are refused "
                                      "(mimic='error'); load with mimic='independent' to record the "
                                      "coupling in model.mimic")
        master = m.get("joint")
        if not master:
            raise ctx.error(owner, m, "<mimic> has no 'joint' attribute")
        if master not in elements:
            if mode == "ignore":
                line = ctx.lines.get(m)
                skipped.append(f"{jname!r} (mimics {master!r}" + (f", line {line})" if line else ")"))
                continue
            raise ctx.error(owner, m, f"<mimic joint={master!r}>: no such joint; pass "
                                      "mimic='ignore' to load this joint as an independent joint "
                                      "(the relation is dropped, with a warning)")
        for k in (jname, master):
            if kinds[k] not in ("revolute", "continuous", "prismatic"):
                raise ctx.error(owner, m, f"<mimic joint={master!r}>: joint {k!r} is {kinds[k]!r}; "
                                          "mimic joints and their masters must be revolute, "
                                          "continuous or prismatic")
        mult = float(ctx.numbers(owner, m, "multiplier", 1, (1.0,))[0])
        off = float(ctx.numbers(owner, m, "offset", 1, (0.0,))[0])
        raw[jname] = (master, mult, off)
    if skipped:
        warnings.warn(f"{ctx.label}: mimic='ignore': <mimic> tags naming a joint that does not "
                      f"exist were ignored; these joints load as independent joints without "
                      f"coupling: {', '.join(skipped)}", UserWarning, stacklevel=3)
    out = {}
    for jname, (master, mult, off) in raw.items():
        seen = {jname}
        while master in raw:  # q = mult (m2 q_a + o2) + off
            if master in seen:
                raise ctx.error(f"joint {jname!r}", elements[jname].find("mimic"),
                                f"mimic joints form a cycle through {sorted(seen)}")
            seen.add(master)
            m2, k2, o2 = raw[master]
            master, mult, off = m2, mult * k2, mult * o2 + off
        out[jname] = (master, mult, off)
    return out


def load_urdf(source: str | os.PathLike[str], floating_base: bool = False, name: str | None = None,
              gravity: Array = (0.0, 0.0, -9.81), check_inertias: bool = True,
              max_bodies: int | None = None, *, armature: object = None,
              mimic: str = "independent", lock: object = None,
              snap: float | None = SNAP_TOLERANCE) -> Model:
    """Build a :class:`~symdyn.model.Model` from a URDF file path or XML string.

    Bodies are the non-fixed links in depth-first order from the root (children in document
    order), named after their links; ``model.joint_names[i]`` is the URDF joint moving body i
    (``"root_joint"`` for the floating base). Every link, fixed ones included, is a frame in
    ``model.frames``, and every fixed joint is a frame too (``model.fixed_joints``: joint name ->
    child link, whose frame the joint's frame is; Pinocchio's FIXED_JOINT frames). See the module
    docstring for the conventions and the inertia policy.

    ``max_bodies``: refuse files with more ``<link>`` elements than this, right after parsing
    (default :data:`symdyn.model.MAX_BODIES` or the environment variable ``SYMDYN_MAX_BODIES``).

    Actuation data (see the module docstring): ``model.limits``, ``model.damping``,
    ``model.friction`` from the file; ``armature``: a number, a dict joint name -> number, or nv
    numbers (default 0); ``mimic``: ``"independent"`` (record ``model.mimic``; a ``<mimic>``
    naming a missing joint is an error), ``"ignore"`` (the same, but a ``<mimic>`` naming a
    missing joint is skipped with a ``UserWarning`` and its joint loads as an independent joint)
    or ``"error"`` (refuse any ``<mimic>``).
    ``lock``: joints to lock after loading (names or a dict name -> value), as
    :func:`symdyn.reduced_model`.
    ``snap``: rotation and joint-axis entries within this tolerance of 0, +1 or -1 are made exact
    (:meth:`Model.snapped <symdyn.model.Model.snapped>`, applied last; ``model.snap_report`` gives
    the largest change): angles written to 10-12 digits (``rpy="1.57079632679 0 0"``) leave
    entries such as 4.9e-12 that would otherwise stay in every generated graph. Default
    :data:`symdyn.snapping.SNAP_TOLERANCE` (1e-10); ``0`` or ``None`` keep the file's values
    exactly.

    Raises :class:`URDFError` for malformed or unsupported files (naming the element and problem;
    values that overflow floating point name their link or joint) and ``FileNotFoundError`` for a
    missing path.
    """
    snap = check_snap_tolerance(snap)
    data, label = _read(source)
    root_el, lines = _parse_xml(data, label)
    ctx = _Ctx(label, lines)
    if root_el.tag != "robot":
        raise ctx.error(f"<{root_el.tag}>", root_el, "the root element must be <robot>")
    link_els = root_el.findall("link")
    try:
        check_size(len(link_els), f"{label}: {len(link_els)} <link> elements", max_bodies)
    except ModelError as exc:
        raise URDFError(str(exc)) from None
    links: dict[str, ET.Element] = {}
    for link in link_els:
        lname = link.get("name")
        if not lname:
            raise ctx.error("<link>", link, "no 'name' attribute")
        if lname in links:
            raise ctx.error(f"link {lname!r}", link, "duplicate link name")
        links[lname] = link
    if not links:
        raise ctx.error("<robot>", root_el, "no <link> elements")

    parent_joint: dict[str, tuple[str, str, ET.Element]] = {}  # child -> (joint name, parent, element)
    children: dict[str, list[str]] = {n: [] for n in links}
    joint_names: set[str] = set()
    for j in root_el.findall("joint"):
        jname = j.get("name")
        if not jname:
            raise ctx.error("<joint>", j, "no 'name' attribute")
        owner = f"joint {jname!r}"
        if jname in joint_names:
            raise ctx.error(owner, j, "duplicate joint name")
        joint_names.add(jname)
        ends = {}
        for tag in ("parent", "child"):
            el = ctx.child(owner, j, tag)
            ln = el.get("link")
            if ln is None:
                raise ctx.error(owner, el, f"<{tag}> has no 'link' attribute")
            if ln not in links:
                raise ctx.error(owner, el, f"{tag} link {ln!r} does not exist"
                                           + (" (dangling parent)" if tag == "parent" else ""))
            ends[tag] = ln
        if ends["child"] == ends["parent"]:
            raise ctx.error(owner, j, f"link {ends['child']!r} is its own parent (cycle)")
        if ends["child"] in parent_joint:
            other = parent_joint[ends["child"]][0]
            raise ctx.error(owner, j, f"link {ends['child']!r} already has parent joint {other!r}: "
                                      "a link with two parent joints (URDF must be a tree)")
        parent_joint[ends["child"]] = (jname, ends["parent"], j)
        children[ends["parent"]].append(ends["child"])

    roots = [n for n in links if n not in parent_joint]
    if not roots:
        raise ctx.error("<robot>", root_el, "no root link: every link has a parent joint, so the "
                                            "joints form a cycle")
    if len(roots) > 1:
        raise ctx.error("<robot>", root_el, f"more than one root link {roots}: links not "
                                            "connected by joints")
    order, stack = [], [roots[0]]
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(reversed(children[n]))
    if len(order) != len(links):
        lost = [n for n in links if n not in set(order)]
        raise ctx.error("<robot>", root_el, f"links {lost} are not reachable from the root link "
                                            f"{roots[0]!r}: their joints form a cycle")

    if mimic not in MIMIC_MODES:
        raise ValueError(f"mimic must be one of {', '.join(map(repr, MIMIC_MODES))}, got {mimic!r}")
    elements = {jn: el for jn, _, el in parent_joint.values()}
    mimics = _mimics(ctx, elements, {jn: el.get("type") for jn, el in elements.items()}, mimic)

    bodies = []
    limits: dict[str, tuple] = {}
    damping: dict[str, float] = {}
    friction: dict[str, float] = {}
    for lname in order:
        mass, com, Ic = _link_inertia(ctx, links[lname])
        if lname == roots[0]:
            joint = make_joint("floating" if floating_base else "fixed")
            bodies.append(Body(lname, None, joint, mass, com, Ic,
                               joint_name="root_joint" if floating_base else None))
            continue
        jname, parent, j = parent_joint[lname]
        R, xyz = ctx.origin(f"joint {jname!r}", j)
        joint = _make_joint(ctx, j, jname)
        bodies.append(Body(lname, parent, joint, mass, com, Ic,
                           Transform(R.T.copy(), xyz), joint_name=jname))
        if joint.nv:
            limits[jname], damping[jname], friction[jname] = _actuation(ctx, j, jname, joint)
    mname = name if name is not None else (root_el.get("name") or "urdf")
    try:
        # "semidefinite": the inertia policy of the module docstring, on the merged bodies
        model = Model(bodies, gravity=gravity, name=mname,
                      check_inertias="semidefinite" if check_inertias else False,
                      allow_massless=True, max_bodies=max_bodies, limits=limits, damping=damping,
                      friction=friction, mimic=mimics, armature=armature)
    except ModelError as exc:
        if exc.body is None or exc.problem is None:
            raise URDFError(f"{label}: {exc}") from exc
        merged = f" (with fixed links {list(exc.merged)} merged)" if exc.merged else ""
        hint = ("; pass check_inertias=False to load the file's values unchecked"
                if check_inertias and exc.kind == "inertia" else "")
        raise URDFError(f"{label}: link {exc.body!r}{merged}: {exc.problem}{hint}") from exc
    if lock:
        try:
            model = reduced_model(model, lock)
        except ModelError as exc:
            raise URDFError(f"{label}: lock= argument: {exc}") from exc
    return model.snapped(snap) if snap else model
