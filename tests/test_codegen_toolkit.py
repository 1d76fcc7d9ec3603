"""Compiled toolkit (symdyn.codegen): frames fixed at build time, centre of mass, energies,
regressors, and ``parameters="inertial"`` (the inertial parameters as an input).

Compiled == NumPy for every toolkit function on a fixed-base tree (revolute, prismatic, helical)
and a floating-base tree with a spherical joint; with ``parameters="inertial"``, the compiled
function at a *different* ``pi2`` equals NumPy on ``with_inertial_parameters(model, pi2)``.
Models are tiny (3-4 bodies) and compiled with -O1 so the file stays fast.
"""
from __future__ import annotations

import json
import subprocess

import casadi as ca
import numpy as np
import pytest

from symdyn.codegen import (ALGORITHMS, FunctionGroup, algorithm_options, available_algorithms,
                            build, casadi_function, load, required_options)
from symdyn.codegen.generate import normalize_algorithms
from symdyn.identification.parameters import inertial_parameters, parameters_from_inertia, with_inertial_parameters
from symdyn.model import Frame
from symdyn.models import random_tree
from symdyn.spatial import Transform

from conftest import requires_cc  # the build's own compiler lookup

pytestmark = requires_cc

TOOLKIT = available_algorithms(("frames", "com", "energy", "regressors"))
FRAME_ALGS = available_algorithms("frames")
REFERENCES = ("local", "world", "local_world_aligned")
INERTIAL_ALGS = ["rnea", "crba", "aba", "coriolis_matrix", "nonlinear_effects", "gravity_vector",
                 "rnea_derivatives", "center_of_mass_velocity", "com_jacobian",
                 "centroidal_momentum_matrix", "kinetic_energy", "potential_energy",
                 "mechanical_energy", "joint_torque_regressor", "slotine_li_regressor"]


def _fixed():
    return random_tree(4, seed=5, joint_kinds=("revolute", "prismatic", "helical"))


def _floating():
    return random_tree(3, seed=7, joint_kinds=("revolute", "spherical"), floating_base=True,
                       name="float-base")


MODELS = {"fixed": _fixed, "floating": _floating}

# a frame that is not a body frame: rotated and offset on body 1 (needs a label)
_E = np.array([[0.0, -1.0, 0.0], [0.6, 0.0, 0.8], [-0.8, 0.0, 0.6]])
TIP = Frame(1, Transform(_E, np.array([0.1, -0.2, 0.3])))


def _state(model, rng):
    return {"q": model.random_q(rng), "qd": rng.uniform(-2, 2, model.nv),
            "qdd": rng.uniform(-2, 2, model.nv), "tau": rng.uniform(-2, 2, model.nv),
            "qr_d": rng.uniform(-2, 2, model.nv), "qr_dd": rng.uniform(-2, 2, model.nv)}


def _close(a, b, rel=1e-11):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.abs(b).max()))
    assert float(np.abs(a - b).max()) <= rel * scale, float(np.abs(a - b).max())


def _reference(model, alg, st, opts=None):
    spec = ALGORITHMS[alg]
    out = spec.function(model, *[st[n] for n in spec.input_names], **(opts or {}))
    return out if isinstance(out, tuple) else (out,)


def _toolkit_request(model):
    """Every toolkit function; frame functions in the three references and on two frames."""
    req: dict = {}
    last = model.names[-1]
    for alg in FRAME_ALGS:
        if "reference" not in algorithm_options(alg):          # frame_placement
            req[f"{alg}:local"] = {"frame": last}
            req[f"{alg}:tip"] = {"frame": TIP}
            continue
        for ref in REFERENCES:
            req[f"{alg}:{ref}"] = {"frame": last, "reference": ref}
        req[f"{alg}:tip"] = {"frame": TIP, "reference": "local_world_aligned"}
    req["frame_jacobian"] = {"frame": [model.names[0], model.names[1]]}   # one function each
    for alg in TOOLKIT:
        if alg not in FRAME_ALGS:
            req[alg] = {}
    return req


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("symdyn-toolkit-cache")


@pytest.fixture(scope="module", params=list(MODELS))
def toolkit(request, cache_dir):
    model = MODELS[request.param]()
    return model, build(model, _toolkit_request(model), opt="-O1", cache_dir=cache_dir,
                        progress=False)


# --- registry and options (no compiler needed, but cheap) -----------------------------------------------

def test_registry_groups():
    # the default list is unchanged: dynamics algorithms only (inputs are states, no options)
    assert available_algorithms() == [a for a, s in ALGORITHMS.items() if s.group == "dynamics"]
    assert "rnea" in available_algorithms() and "frame_jacobian" not in available_algorithms()
    assert set(available_algorithms("all")) == set(ALGORITHMS)
    for name in ("frame_jacobian", "com_jacobian", "kinetic_energy", "joint_torque_regressor",
                 "slotine_li_regressor", "centroidal_momentum_matrix"):
        assert name in TOOLKIT
    assert all(required_options(a) == ("frame",) for a in FRAME_ALGS)
    assert required_options("com_jacobian") == ()
    with pytest.raises(ValueError, match="unknown group"):
        available_algorithms("kinematics")


def test_keys_and_option_errors():
    keys = dict(normalize_algorithms({"frame_jacobian": {"frame": ["a", "b"],
                                                         "reference": "world"}}, {}))
    assert keys == {"frame_jacobian:a": {"frame": "a", "reference": "world"},
                    "frame_jacobian:b": {"frame": "b", "reference": "world"}}
    # shared options reach the frame functions; a body index labels itself
    got = normalize_algorithms(["frame_velocity", "rnea"], {"frame": 2})
    assert got == [("frame_velocity:body2", {"frame": 2}), ("rnea", {})]
    with pytest.raises(TypeError, match="needs the build-time option.*frame"):
        normalize_algorithms(["frame_jacobian"], {})
    with pytest.raises(TypeError, match="label"):
        normalize_algorithms({"frame_jacobian": {"frame": TIP}}, {})
    with pytest.raises(ValueError, match="two functions named frame_jacobian:a"):
        normalize_algorithms({"frame_jacobian": {"frame": ["a", "a"]}}, {})
    with pytest.raises(ValueError, match="one frame"):
        normalize_algorithms({"frame_jacobian:x": {"frame": ["a", "b"]}}, {})
    with pytest.raises(TypeError, match="unknown option"):
        normalize_algorithms({"com_jacobian": {"frame": "a"}}, {})
    model = _fixed()
    with pytest.raises(ValueError, match="parameters must be"):
        build(model, ["rnea"], parameters="mass")
    with pytest.raises(ValueError, match="reference"):
        casadi_function(model, "frame_jacobian", frame="b2", reference="body")
    with pytest.raises(KeyError, match="no frame or joint named"):
        casadi_function(model, "frame_jacobian", frame="nowhere")


def test_labels_that_collide_in_c_are_refused(tmp_path):
    model = _fixed()
    with pytest.raises(ValueError, match="same C symbol"):
        build(model, {"frame_jacobian:a-b": {"frame": "b2"}, "frame_jacobian:a_b": {"frame": "b3"}},
              out_dir=tmp_path, progress=False)


# --- compiled == NumPy ------------------------------------------------------------------------------

def test_toolkit_compiled_equals_numpy(toolkit):
    model, lib = toolkit
    rng = np.random.default_rng(11)
    req = dict(normalize_algorithms(_toolkit_request(model), {}))
    assert set(lib.algorithms) == set(req)
    for _ in range(3):
        st = _state(model, rng)
        for key, opts in req.items():
            f = lib[key]
            res = f(*[st[n] for n in f.input_names])
            res = res if isinstance(res, tuple) else (res,)
            ref = _reference(model, f.algorithm, st, opts)
            assert len(res) == len(ref) == len(f.output_names)
            for got, want in zip(res, ref):
                _close(got, want)


def test_frame_functions_by_label(toolkit):
    model, lib = toolkit
    b0, b1 = model.names[0], model.names[1]
    group = lib.frame_jacobian
    assert isinstance(group, FunctionGroup)
    assert set(group) == {b0, b1, *REFERENCES, "tip"}
    assert group[b0] is lib[f"frame_jacobian:{b0}"]
    assert lib.frame_jacobian["world"].name.endswith("frame_jacobian:world")
    assert lib.frame_jacobian["world"].output_shapes == ((6, model.nv),)
    with pytest.raises(TypeError, match="pick one"):
        group(model.neutral())
    with pytest.raises(KeyError, match="this build has frame_jacobian for"):
        group["nowhere"]
    with pytest.raises(KeyError, match="not in this build"):
        lib["frame_jacobian:nowhere"]
    # C symbols are sanitized from the key; the manifest keeps key and options
    fd = {d["key"]: d for d in lib.manifest["functions"]}["frame_jacobian:world"]
    assert fd["fname"].endswith("frame_jacobian_world") and fd["options"]["reference"] == "world"
    q = model.random_q(np.random.default_rng(3))
    J_lwa = lib.frame_jacobian["local_world_aligned"](q)
    R, p = lib.frame_placement["local"](q)
    J_local = lib.frame_jacobian["local"](q)
    # local and local-world-aligned differ by the frame rotation on both 3-blocks
    _close(J_lwa[:3], R @ J_local[:3])
    _close(J_lwa[3:], R @ J_local[3:])


def test_scalar_outputs_and_batches(toolkit):
    model, lib = toolkit
    rng = np.random.default_rng(5)
    states = [_state(model, rng) for _ in range(4)]
    Q = np.array([s["q"] for s in states])
    QD = np.array([s["qd"] for s in states])
    for alg in ("kinetic_energy", "potential_energy", "mechanical_energy"):
        f = lib[alg]
        assert f.output_shapes == ((),)
        one = f(*[states[0][n] for n in f.input_names])
        assert isinstance(one, np.ndarray) and one.shape == ()
        ins = [Q] + ([QD] if "qd" in f.input_names else [])
        out = f.batch(*ins)
        assert out.shape == (4,)
        _close(out, [float(_reference(model, alg, s)[0]) for s in states])
    E = lib.mechanical_energy.batch(Q, QD)
    _close(E, lib.kinetic_energy.batch(Q, QD) + lib.potential_energy.batch(Q))
    J = lib.frame_jacobian["world"].batch(Q)
    assert J.shape == (4, 6, model.nv)
    _close(J[2], lib.frame_jacobian["world"](Q[2]))


# --- parameters="inertial" ------------------------------------------------------------------------

def _other_parameters(model, rng):
    """Physically consistent inertial parameters unrelated to the model's (random mass, CoM and
    rotational inertia per body)."""
    out = []
    for _ in range(model.N):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        d = rng.uniform(0.05, 0.1, 3)                  # principal moments: triangle inequalities
        out += parameters_from_inertia(rng.uniform(0.5, 3.0), rng.uniform(-0.2, 0.2, 3),
                                       Q @ np.diag(d) @ Q.T)
    return np.array(out)


@pytest.fixture(scope="module", params=list(MODELS))
def plib(request, cache_dir):
    model = MODELS[request.param]()
    return model, build(model, INERTIAL_ALGS, parameters="inertial", opt="-O1",
                        cache_dir=cache_dir, progress=False)


def test_inertial_parameters_as_input(plib):
    model, lib = plib
    rng = np.random.default_rng(21)
    pi2 = _other_parameters(model, rng)
    model2 = with_inertial_parameters(model, pi2)
    assert not np.allclose(pi2, inertial_parameters(model))
    for alg in INERTIAL_ALGS:
        f = lib[alg]
        if ALGORITHMS[alg].inertial:
            assert f.input_names[-1] == "pi" and f.input_shapes[-1] == (10 * model.N,)
            assert f.parameters == "inertial"
        else:  # regressors do not depend on the inertias: same inputs as without parameters
            assert "pi" not in f.input_names and f.parameters is None
    for _ in range(2):
        st = _state(model, rng)
        for alg in INERTIAL_ALGS:
            f = lib[alg]
            ins = [st[n] for n in ALGORITHMS[alg].input_names]
            for pi, m in ((pi2, model2), (inertial_parameters(model), model)):
                res = f(*ins, pi) if f.parameters else f(*ins)
                res = res if isinstance(res, tuple) else (res,)
                for got, want in zip(res, _reference(m, alg, st)):
                    _close(got, want, rel=1e-10)
        # the regressors reproduce the parametrized dynamics at pi2
        q, qd, qdd, qr_d, qr_dd = (st[n] for n in ("q", "qd", "qdd", "qr_d", "qr_dd"))
        _close(lib.joint_torque_regressor(q, qd, qdd) @ pi2, lib.rnea(q, qd, qdd, pi2))
        M, _, C = lib.coriolis_matrix(q, qd, pi2)
        _close(lib.slotine_li_regressor(q, qd, qr_d, qr_dd) @ pi2,
               M @ qr_dd + C @ qr_d + lib.gravity_vector(q, pi2))
        # aba inverts rnea for the same parameters
        _close(lib.aba(q, qd, lib.rnea(q, qd, qdd, pi2), pi2), qdd, rel=1e-9)


def test_inertial_parameters_batch(plib):
    model, lib = plib
    rng = np.random.default_rng(4)
    pis = np.array([_other_parameters(model, rng) for _ in range(3)])
    states = [_state(model, rng) for _ in range(3)]
    Q, QD, QDD = (np.array([s[n] for s in states]) for n in ("q", "qd", "qdd"))
    tau = lib.rnea.batch(Q, QD, QDD, pis)
    for k in range(3):
        ref = _reference(with_inertial_parameters(model, pis[k]), "rnea", states[k])[0]
        _close(tau[k], ref)
    with pytest.raises(ValueError, match="pi must have shape"):
        lib.rnea(Q[0], QD[0], QDD[0], pis[0][:-1])


def test_parameters_are_part_of_the_cache_key(cache_dir):
    model = _fixed()
    plain = build(model, ["gravity_vector"], opt="-O1", cache_dir=cache_dir, progress=False)
    withp = build(model, ["gravity_vector"], opt="-O1", cache_dir=cache_dir, progress=False,
                  parameters="inertial")
    assert plain.path != withp.path
    assert plain.gravity_vector.input_names == ("q",)
    assert withp.gravity_vector.input_names == ("q", "pi")
    again = build(model, ["gravity_vector"], opt="-O1", cache_dir=cache_dir, progress=False,
                  parameters="inertial")
    assert again.cache_hit and again.path == withp.path
    q = model.random_q(np.random.default_rng(0))
    _close(withp.gravity_vector(q, inertial_parameters(model)), plain.gravity_vector(q))


def test_parametrized_model_guards():
    from symdyn.backends import get_backend
    from symdyn.codegen.parameters import parametrized_model

    model = _fixed()
    pi = ca.SX.sym("pi", 10 * model.N)
    pm = parametrized_model(model, pi)
    with pytest.raises(RuntimeError, match=r"model\.I was read"):
        pm.I
    with pytest.raises(RuntimeError, match="model.body_params was read"):
        pm.body_params
    with pytest.raises(RuntimeError, match="CasADi backend only"):
        pm.constants(get_backend("numpy"))
    consts = pm.constants(get_backend("casadi"))
    assert ca.depends_on(ca.vec(consts.I[2]), pi[20:30])
    assert not ca.depends_on(ca.vec(consts.I[2]), pi[:20])
    with pytest.raises(ValueError, match="10 N"):
        parametrized_model(model, ca.SX.sym("pi", 3))
    # the model itself is untouched
    assert model.constants(get_backend("numpy")).I[0].shape == (6, 6)
    # frames and regressors get no pi; the inertia-dependent functions do
    info: dict = {}
    casadi_function(model, "frame_jacobian", frame="b2", parameters="inertial", info=info)
    assert info["parameters"] is None and info["input_names"] == ("q",)
    f = casadi_function(model, "crba", parameters="inertial", info=info)
    assert info["parameters"] == "inertial" and f.name_in() == ["q", "pi"]


# --- Pinocchio: regressor, CoM and frame Jacobians against its routines ---------------------------

def test_regressor_against_pinocchio(cache_dir):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import to_pinocchio

    from symdyn.models import serial_chain

    model = serial_chain(4, seed=1)          # random geometry; a chain: Pinocchio's order = ours
    refs = {"local": pin.LOCAL, "world": pin.WORLD,
            "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    request = {f"frame_jacobian:{r}": {"frame": "link3", "reference": r} for r in refs}
    lib = build(model, {**request, "joint_torque_regressor": {}, "com_jacobian": {}}, opt="-O1",
                cache_dir=cache_dir, progress=False)
    pm = to_pinocchio(model)
    pd = pm.createData()
    rng = np.random.default_rng(8)
    q, v, a = model.random_q(rng), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
    if pm.nq != model.nq or pm.nv != model.nv:
        pytest.skip("Pinocchio model has other coordinates")
    _close(lib.joint_torque_regressor(q, v, a),
           pin.computeJointTorqueRegressor(pm, pd, q, v, a), rel=1e-12)
    _close(lib.com_jacobian(q), pin.jacobianCenterOfMass(pm, pd, q), rel=1e-12)
    fid = pm.getFrameId("link3")
    for r, pref in refs.items():
        Jp = pin.computeFrameJacobian(pm, pd, q, fid, pref)          # rows [linear; angular]
        _close(lib.frame_jacobian[r](q), np.vstack([Jp[3:], Jp[:3]]), rel=1e-12)


# --- CLI ------------------------------------------------------------------------------------------

def test_cli_frame_jacobian_and_parameters(tmp_path, capsys):
    import os
    import shutil

    from symdyn.cli import main
    from symdyn.io.specs import from_spec

    out = tmp_path / "export"
    rc = main(["codegen", "serial:3", "--algorithms", "frame_jacobian,rnea", "--option",
               "frame=link3,link2", "--option", "reference=world", "--parameters", "inertial",
               "--out", str(out), "--compile", "--opt", "O0", "--quiet"])
    assert rc == 0
    model = from_spec("serial:3")
    lib = load(out)
    assert set(lib.algorithms) == {"frame_jacobian:link3", "frame_jacobian:link2", "rnea"}
    assert lib.rnea.input_names == ("q", "qd", "qdd", "pi")
    rng = np.random.default_rng(0)
    q = model.random_q(rng)
    ref = ALGORITHMS["frame_jacobian"].function(model, q, "link3", reference="world")
    _close(lib.frame_jacobian["link3"](q), ref)
    # the Python-free example prints every function under its key
    manifest = json.loads((out / "symdyn_build.json").read_text())
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    srcs = sorted(p.name for p in out.glob("*.c") if p.name != "main.c")
    subprocess.run([cc, "-O0", "-o", "standalone", "main.c", *srcs, "-lm", "-lpthread"],
                   cwd=out, check=True, capture_output=True)
    text = subprocess.run([str(out / "standalone")], check=True, capture_output=True,
                          text=True).stdout
    st = {k: np.array(v) for k, v in manifest["example_inputs"].items()}
    _close(st["pi"], inertial_parameters(model))
    vals = {int(i): float(x) for key, name, i, x in (ln.split() for ln in text.splitlines())
            if key == "frame_jacobian:link2"}
    ref = ALGORITHMS["frame_jacobian"].function(model, st["q"], "link2", reference="world")
    _close(np.array([vals[i] for i in range(ref.size)]).reshape(ref.shape), ref)
    # a frame function without --option frame is refused in one line
    capsys.readouterr()
    rc = main(["codegen", "serial:3", "--algorithms", "frame_jacobian", "--out",
               str(tmp_path / "x"), "--quiet"])
    assert rc == 2 and "option(s) frame" in capsys.readouterr().err
