"""symdyn on real robots (example-robot-data URDFs) against Pinocchio built from the same files.

Joints are matched by URDF joint name (not through symdyn.interop.pinocchio): Pinocchio orders
joints its own way, stores a continuous joint as (cos, sin) and orders the free-flyer velocity
[v; omega] where symdyn has [omega; v].
"""
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import symdyn as sd  # noqa: E402
from symdyn.io.robots import ROBOTS, load_robot, robot_urdf  # noqa: E402

TOL = 1e-9
# every registered robot with its default base (arms fixed; legged, humanoid and aerial floating),
# plus arms on a floating base and a quadruped on a fixed one
CASES = [(name, None) for name in ROBOTS] + [("panda", True), ("ur5", True), ("solo12", False)]


def rel(a, b):
    """Max-norm relative error of a against the reference b."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


class Pair:
    """A symdyn model and the Pinocchio model of the same URDF, with index maps between them."""

    def __init__(self, name, floating):
        self.model = load_robot(name, floating_base=floating)
        # the file's values as Pinocchio reads them (no snapping), for the 1e-12 pose checks
        self.exact = load_robot(name, floating_base=floating, snap=0)
        fb = ROBOTS[name].floating_base if floating is None else floating
        path = str(robot_urdf(name))
        self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb \
            else pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        m, pm = self.model, self.pm
        assert pm.njoints - 1 == m.N, "both models must have one joint per moving link"
        self.jid = [pm.getJointId(n) for n in m.joint_names]
        assert all(j < pm.njoints for j in self.jid), "every URDF joint name must exist in Pinocchio"
        self.P = np.empty(m.nv, dtype=int)  # v_pin = v[P]
        for i, jid in enumerate(self.jid):
            a, b = m.v_idx[i]
            assert pm.nvs[jid] == b - a
            idx = list(range(a, b))
            if m.joints[i].type == "floating":  # [omega; v] -> [v; omega]
                idx = idx[3:] + idx[:3]
            self.P[pm.idx_vs[jid]:pm.idx_vs[jid] + b - a] = idx

    def q_pin(self, q):
        out = np.zeros(self.pm.nq)
        for i, jid in enumerate(self.jid):
            a, b = self.model.q_idx[i]
            k = self.pm.idx_qs[jid]
            if self.pm.nqs[jid] == 2 and b - a == 1:  # continuous joint: Pinocchio stores (cos, sin)
                out[k:k + 2] = np.cos(q[a]), np.sin(q[a])
            else:
                assert self.pm.nqs[jid] == b - a
                out[k:k + b - a] = q[a:b]
        return out

    def states(self, n=2, seed=0):
        rng = np.random.default_rng(seed)
        nv = self.model.nv
        for _ in range(n):
            yield (self.model.random_q(rng), rng.normal(size=nv), rng.normal(size=nv),
                   rng.normal(size=nv))


_cache = {}


def _case_id(case):
    return case[0] + {None: "", True: "-floating", False: "-fixed"}[case[1]]


@pytest.fixture(scope="module", params=CASES, ids=_case_id)
def pair(request):
    if request.param not in _cache:
        _cache[request.param] = Pair(*request.param)
    return _cache[request.param]


def test_joint_types_match_pinocchio(pair):
    """Exact x/y/z axes become Pinocchio's RX/RY/RZ (PX...), others the unaligned joints."""
    m, pm = pair.model, pair.pm
    for i, jid in enumerate(pair.jid):
        j, short = m.joints[i], pm.joints[jid].shortname()
        if j.type == "floating":
            assert short == "JointModelFreeFlyer"
        elif isinstance(j.axis_spec, str):
            letter = "R" if j.type == "revolute" else "P"
            assert short in (f"JointModel{letter}{j.axis_spec.upper()}",
                             f"JointModelRUB{j.axis_spec.upper()}"), (m.joint_names[i], short)
        else:
            kind = "Revolute" if j.type == "revolute" else "Prismatic"
            assert short == f"JointModel{kind}Unaligned", (m.joint_names[i], short)
            assert np.allclose(pm.joints[jid].extract().axis, j.axis, atol=1e-12)


def test_total_mass_matches_pinocchio(pair):
    m = pair.model
    total = sum(float(np.asarray(I)[3, 3]) for I in m.I)
    ref = sum(pair.pm.inertias[j].mass for j in range(1, pair.pm.njoints))
    assert total == pytest.approx(ref, rel=1e-12)


def test_rnea_crba_aba_match_pinocchio(pair):
    m, pm, pd, P = pair.model, pair.pm, pair.pd, pair.P
    for q, qd, qdd, tau in pair.states():
        qp = pair.q_pin(q)
        assert rel(sd.rnea(m, q, qd, qdd)[P], pin.rnea(pm, pd, qp, qd[P], qdd[P])) < TOL
        M = sd.crba(m, q)
        assert rel(M[np.ix_(P, P)], pin.crba(pm, pd, qp)) < TOL
        assert rel(sd.aba(m, q, qd, tau)[P], pin.aba(pm, pd, qp, qd[P], tau[P])) < TOL
        assert rel(sd.gravity_vector(m, q)[P], pin.computeGeneralizedGravity(pm, pd, qp)) < TOL


def test_forward_kinematics_match_pinocchio(pair):
    """Body poses and velocities, and the poses of every link (fixed links are model.frames), of
    the file's values: snapping (the loaders' default) moves rotation entries by up to 1e-9."""
    m, pm, pd, P = pair.exact, pair.pm, pair.pd, pair.P
    q, qd, _, _ = next(pair.states(1, seed=1))
    R, p, v = sd.forward_kinematics(m, q, qd)
    pin.forwardKinematics(pm, pd, pair.q_pin(q), qd[P])
    pin.updateFramePlacements(pm, pd)
    for i, jid in enumerate(pair.jid):
        oMi = pd.oMi[jid]
        assert rel(p[i], oMi.translation) < TOL or np.allclose(p[i], oMi.translation, atol=1e-12)
        assert np.allclose(R[i], oMi.rotation, atol=1e-12)
        vi = pd.v[jid]  # body-frame twist, Pinocchio [linear; angular]
        assert np.allclose(v[i], np.concatenate([vi.angular, vi.linear]), rtol=1e-10, atol=1e-10)
    checked = 0
    for link, fr in m.frames.items():
        fid = pm.getFrameId(link, pin.BODY)
        assert fid < pm.nframes, link
        Rb, pb = (np.eye(3), np.zeros(3)) if fr.body < 0 else (R[fr.body], p[fr.body])
        Rf, pf = Rb @ np.asarray(fr.X.E).T, pb + Rb @ np.asarray(fr.X.r).reshape(3)
        assert np.allclose(pf, pd.oMf[fid].translation, atol=1e-12), link
        assert np.allclose(Rf, pd.oMf[fid].rotation, atol=1e-12), link
        checked += 1
    assert checked == len(m.frames) >= m.N


def test_casadi_crba_of_ur5_matches_pinocchio():
    ca = pytest.importorskip("casadi")
    pair = _cache.get(("ur5", None)) or Pair("ur5", None)
    q = ca.SX.sym("q", pair.model.nq)
    M = sd.crba(pair.model, q)
    assert isinstance(M, ca.SX) and M.shape == (6, 6)
    f = ca.Function("M", [q], [M])
    for qn, *_ in pair.states(3, seed=2):
        Mc = np.array(f(qn))
        assert rel(Mc, sd.crba(pair.model, qn)) < 1e-12
        assert rel(Mc, pin.crba(pair.pm, pair.pd, pair.q_pin(qn))) < TOL


def test_sympy_rnea_of_double_pendulum_matches_pinocchio():
    sp = pytest.importorskip("sympy")
    pair = Pair("double_pendulum_continuous", None)
    n = pair.model.nv
    q, qd, qdd = (sp.Matrix(sp.symbols(f"{s}0:{n}")) for s in ("q", "qd", "qdd"))
    tau = sd.rnea(pair.model, q, qd, qdd)
    assert isinstance(tau, sp.MatrixBase) and tau.free_symbols <= set(q) | set(qd) | set(qdd)
    f = sp.lambdify([list(q), list(qd), list(qdd)], tau, "numpy")
    for qn, qdn, qddn, _ in pair.states(3, seed=3):
        tn = np.asarray(f(qn, qdn, qddn), float).reshape(n)
        assert rel(tn, sd.rnea(pair.model, qn, qdn, qddn)) < 1e-12
        ref = pin.rnea(pair.pm, pair.pd, pair.q_pin(qn), qdn[pair.P], qddn[pair.P])
        assert rel(tn[pair.P], ref) < TOL


def test_casadi_rnea_of_floating_solo12_matches_pinocchio():
    """Free-flyer quaternion and [omega; v] conventions through CasADi SX."""
    ca = pytest.importorskip("casadi")
    pair = _cache.get(("solo12", None)) or Pair("solo12", None)
    m = pair.model
    q, qd, qdd = ca.SX.sym("q", m.nq), ca.SX.sym("qd", m.nv), ca.SX.sym("qdd", m.nv)
    f = ca.Function("rnea", [q, qd, qdd], [sd.rnea(m, q, qd, qdd)])
    for qn, qdn, qddn, _ in pair.states(2, seed=4):
        tn = np.array(f(qn, qdn, qddn)).reshape(m.nv)
        ref = pin.rnea(pair.pm, pair.pd, pair.q_pin(qn), qdn[pair.P], qddn[pair.P])
        assert rel(tn[pair.P], ref) < TOL
