"""A squat of the solo12 quadruped by trajectory optimisation (issue 48's example): four feet on
the ground, the contact dynamics of symdyn as the dynamics constraint, casadi.Opti with IPOPT.

Problem (``build_problem``), N intervals of dt, multiple shooting over the state x = (q, v):

- dynamics: ``qdd, lam = constraint_dynamics(q_k, v_k, [0_6; u_k])`` with the four feet as 3-D
  point contacts in ``local_world_aligned`` axes, anchored at their initial positions (``target``)
  with Baumgarte gains; ``symdyn.codegen.casadi_function(model, "constraint_dynamics",
  contacts=...)`` is the SX function of the same graph ``symdyn.codegen.build`` compiles, called on
  the Opti variables. Semi-implicit Euler: ``v_{k+1} = v_k + dt qdd_k``, ``q_{k+1} = q_k (+)
  dt v_{k+1}`` (``sd.integrate`` on the CasADi backend: the free-flyer's unit quaternion moves
  on the sphere by the exponential map of the body angular velocity);
- the 6 base coordinates are unactuated (tau = [0_6; u]); torque limits |u| <= U_MAX;
- contact forces (force on the robot, world axes) inside linearized friction cones:
  ``f_z >= F_MIN``, ``|f_x|, |f_y| <= MU f_z``;
- cost: torques, tracking of a base-height reference that goes down by DEPTH and back up and
  of a sideways sway of SWAY (left, then right), regularization of the base orientation, the
  joint posture and the speeds; the state starts at rest in the standing posture.

Writes solo12_ocp.md and solo12_ocp.png (base height, joint torques and normal forces against
time) and prints IPOPT's status and iteration count.

    python experiments/solo12_ocp.py            # 25 intervals of 40 ms
    python experiments/solo12_ocp.py --quick    # 12 intervals of 80 ms
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from _common import command, header, log, out_dir, parser, pyplot, save, table, write

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
from symdyn.codegen import casadi_function  # noqa: E402

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
#: standing posture (HAA, HFE, KFE per leg; front knees backwards, hind knees forwards)
STANDING = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
U_MAX = 2.5        # N m, about the peak torque of solo12's actuators
MU = 0.7           # friction coefficient of the linearized cones
F_MIN = 0.0        # N, smallest normal force (feet stay on the ground)
DEPTH = 0.06       # m, how far the base goes down
SWAY = 0.02        # m, sideways excursion of the base (one period: loads the feet unevenly)
BAUMGARTE = (100.0, 20.0)   # (kp, kd): stabilize the feet at their initial positions
WEIGHTS = {"torque": 1e-1, "height": 1e4, "base": 1e3, "posture": 1.0, "speed": 1e-1}


@dataclass
class Problem:
    """An Opti problem with its variables and what is needed to check its solution."""

    opti: ca.Opti
    model: object
    contacts: list
    dynamics: ca.Function       # (q, qd, tau) -> (qdd, lam)
    Q: ca.MX                    # nq x (N+1)
    V: ca.MX                    # nv x (N+1)
    U: ca.MX                    # 12 x N
    dt: float
    h_ref: np.ndarray           # N+1 base heights
    y_ref: np.ndarray           # N+1 sideways base positions


def standing_state(model):
    """The standing configuration with the feet on the ground z = 0, and the feet positions."""
    q = np.asarray(model.neutral(), float).copy()
    q[7:] = STANDING
    q[2] = -min(float(sd.frame_placement(model, q, f)[1][2]) for f in FEET)
    return q, [np.asarray(sd.frame_placement(model, q, f)[1], float) for f in FEET]


def height_reference(h0: float, n: int, depth: float = DEPTH) -> np.ndarray:
    """Base height at the n+1 knots: down by ``depth`` and back up (a raised cosine)."""
    s = np.linspace(0.0, 1.0, n + 1)
    return h0 - depth * 0.5 * (1.0 - np.cos(2 * np.pi * s))


def sway_reference(n: int, sway: float = SWAY) -> np.ndarray:
    """Sideways base position at the n+1 knots: one period left and right, ``sin(2 pi s)
    sin(pi s)^2`` scaled to the peak ``sway`` (at rest at both ends, like the height)."""
    def shape(s):
        return np.sin(2 * np.pi * s) * np.sin(np.pi * s) ** 2
    peak = np.abs(shape(np.linspace(0.0, 1.0, 1001))).max()
    return sway * shape(np.linspace(0.0, 1.0, n + 1)) / peak


def static_torques(model, q, contacts) -> np.ndarray:
    """Joint torques that hold ``q`` at rest (least squares over [S^T J^T] [u; lam] = g): the
    initial guess of the controls."""
    g = sd.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))
    J = sd.contact_jacobian(model, q, contacts)
    S = np.vstack([np.zeros((6, 12)), np.eye(12)])
    sol = np.linalg.lstsq(np.hstack([S, np.asarray(J, float).T]), g, rcond=None)[0]
    return sol[:12]


def euler_step(model, dynamics: ca.Function, dt: float) -> ca.Function:
    """One semi-implicit Euler step as an SX function (q, v, u) -> (q_next, v_next, lam):
    ``v_next = v + dt qdd``, ``q_next = q (+) dt v_next``, with tau = [0_6; u]."""
    q, v, u = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", 12)
    qdd, lam = dynamics(q, v, ca.vertcat(ca.SX.zeros(6), u))
    v_next = v + dt * qdd
    q_next = sd.integrate(model, q, v_next, dt, backend="casadi")
    return ca.Function("euler_step", [q, v, u], [q_next, v_next, lam],
                       ["q", "v", "u"], ["q_next", "v_next", "lam"])


def build_problem(n: int = 25, dt: float = 0.04, max_iter: int = 200,
                  print_level: int = 0) -> Problem:
    """The squat problem with ``n`` intervals of ``dt`` seconds (module docstring)."""
    if not isinstance(n, (int, np.integer)) or n < 1 or not dt > 0:
        raise ValueError(f"need n >= 1 intervals and dt > 0, got n={n}, dt={dt}")
    model = sd.load_robot("solo12")
    q0, feet0 = standing_state(model)
    contacts = [sd.Contact(f, 3, "local_world_aligned", baumgarte=BAUMGARTE, target=tuple(p))
                for f, p in zip(FEET, feet0)]
    F = casadi_function(model, "constraint_dynamics", contacts=contacts)
    nq, nv = model.nq, model.nv
    h_ref = height_reference(float(q0[2]), n)
    y_ref = q0[1] + sway_reference(n)

    opti = ca.Opti()
    Q, V, U = opti.variable(nq, n + 1), opti.variable(nv, n + 1), opti.variable(12, n)
    w = WEIGHTS
    cost = 0
    opti.subject_to(Q[:, 0] == q0)
    opti.subject_to(V[:, 0] == 0)
    step = euler_step(model, F, dt)
    for k in range(n):
        q_next, v_next, lam = step(Q[:, k], V[:, k], U[:, k])
        opti.subject_to(V[:, k + 1] == v_next)
        opti.subject_to(Q[:, k + 1] == q_next)
        opti.subject_to(opti.bounded(-U_MAX, U[:, k], U_MAX))
        for c in range(len(FEET)):
            fx, fy, fz = lam[3 * c], lam[3 * c + 1], lam[3 * c + 2]
            opti.subject_to(fz >= F_MIN)
            opti.subject_to(opti.bounded(-MU * fz, fx, MU * fz))
            opti.subject_to(opti.bounded(-MU * fz, fy, MU * fz))
        cost += w["torque"] * ca.sumsqr(U[:, k]) * dt
    for k in range(1, n + 1):
        cost += w["height"] * (Q[2, k] - h_ref[k]) ** 2 * dt
        cost += w["height"] * (Q[1, k] - y_ref[k]) ** 2 * dt
        cost += w["base"] * ((Q[0, k] - q0[0]) ** 2 + ca.sumsqr(Q[3:6, k])) * dt
        cost += w["posture"] * ca.sumsqr(Q[7:, k] - q0[7:]) * dt
        cost += w["speed"] * ca.sumsqr(V[:, k]) * dt
    opti.minimize(cost)

    u0 = static_torques(model, q0, contacts)
    opti.set_initial(Q, np.tile(q0[:, None], (1, n + 1)))
    opti.set_initial(V, 0)
    opti.set_initial(U, np.tile(u0[:, None], (1, n)))
    opti.solver("ipopt", {"print_time": False},
                {"max_iter": max_iter, "print_level": print_level, "tol": 1e-6,
                 "acceptable_tol": 1e-4, "mu_strategy": "adaptive", "sb": "yes"})
    return Problem(opti, model, contacts, F, Q, V, U, dt, h_ref, y_ref)


@dataclass
class Solution:
    status: str
    success: bool
    iterations: int
    seconds: float
    Q: np.ndarray
    V: np.ndarray
    U: np.ndarray
    lam: np.ndarray          # N x 12, world axes
    h_ref: np.ndarray
    y_ref: np.ndarray
    dt: float


def solve(problem: Problem) -> Solution:
    """Solve with IPOPT; a run that stops without converging still returns its last iterate
    (``success`` False, ``status`` IPOPT's return status)."""
    opti = problem.opti
    t0 = time.perf_counter()
    try:
        sol = opti.solve()
        value = sol.value
    except RuntimeError:
        value = opti.debug.value
    seconds = time.perf_counter() - t0
    stats = opti.stats()
    Q, V, U = (np.asarray(value(x), float) for x in (problem.Q, problem.V, problem.U))
    lam = np.array([np.asarray(problem.dynamics(Q[:, k], V[:, k],
                                                np.concatenate([np.zeros(6), U[:, k]]))[1],
                               float).ravel() for k in range(U.shape[1])])
    return Solution(str(stats.get("return_status")), bool(stats.get("success")),
                    int(stats.get("iter_count", -1)), seconds, Q, V, U, lam, problem.h_ref,
                    problem.y_ref, problem.dt)


def dynamics_residual(problem: Problem, s: Solution) -> float:
    """Largest violation of the semi-implicit Euler steps at the solution, recomputed with the
    NumPy ``sd.constraint_dynamics`` and ``sd.integrate`` (not the Opti graph)."""
    m, worst = problem.model, 0.0
    for k in range(s.U.shape[1]):
        tau = np.concatenate([np.zeros(6), s.U[:, k]])
        qdd, _ = sd.constraint_dynamics(m, s.Q[:, k], s.V[:, k], tau, problem.contacts)
        v_next = s.V[:, k] + s.dt * np.asarray(qdd, float)
        q_next = np.asarray(sd.integrate(m, s.Q[:, k], v_next, s.dt), float)
        worst = max(worst, float(np.abs(v_next - s.V[:, k + 1]).max()),
                    float(np.abs(q_next - s.Q[:, k + 1]).max()))
    return worst


def plot(s: Solution, directory):
    plt = pyplot()
    t = np.arange(s.Q.shape[1]) * s.dt
    tu = t[:-1]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    ax = axes[0]
    ax.plot(t, s.h_ref * 100, "k--", label="height reference")
    ax.plot(t, s.Q[2] * 100, "o-", ms=3, label="height, optimized")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("base height (cm)")
    ax.set_title("base height")
    ax.legend()
    ax = axes[1]
    ax.plot(t, s.y_ref * 100, "k--", label="reference")
    ax.plot(t, s.Q[1] * 100, "o-", ms=3, label="optimized")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("base y (cm)")
    ax.set_title("sideways sway")
    ax.legend()
    ax = axes[2]
    names = ("HAA", "HFE", "KFE")
    for j in range(12):
        ax.step(tu, s.U[j], where="post", lw=1, color=f"C{j // 3}",
                ls=("-", "--", ":")[j % 3],
                label=f"{FEET[j // 3][:2]} {names[j % 3]}")
    ax.axhline(U_MAX, color="r", lw=0.6)
    ax.axhline(-U_MAX, color="r", lw=0.6)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("joint torque (N m)")
    ax.set_title(f"joint torques (limits +-{U_MAX} N m)")
    ax.legend(ncol=4, fontsize=6)
    ax = axes[3]
    for c, f in enumerate(FEET):
        ax.step(tu, s.lam[:, 3 * c + 2], where="post", label=f, lw=2.5 - c * 0.5,
                ls="-" if c < 2 else "--")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("normal force f_z (N)")
    ax.set_title("normal contact forces")
    ax.legend()
    return save(fig, directory, "solo12_ocp.png")


def report(p: Problem, s: Solution, residual: float, fig: str, args, t0) -> list[str]:
    n = s.U.shape[1]
    fz = s.lam[:, 2::3]
    ft = np.maximum(np.abs(s.lam[:, 0::3]), np.abs(s.lam[:, 1::3]))
    weight = sd.total_mass(p.model) * 9.81
    L = header("Solo12 squat: trajectory optimisation with the contact dynamics (issue 48)",
               command("solo12_ocp.py", args), t0)
    L += ["A squat of solo12 (real URDF of example-robot-data) with its four feet on the ground, "
          "solved with casadi.Opti and IPOPT (MUMPS). The dynamics constraint is symdyn's "
          "constraint dynamics (`symdyn.codegen.casadi_function(model, 'constraint_dynamics', "
          "contacts=...)`: 3-D point contacts at the feet in `local_world_aligned` axes, anchored "
          f"at their initial positions with Baumgarte gains (kp, kd) = {BAUMGARTE}), discretized "
          "by semi-implicit Euler with the configuration integrated on the manifold "
          "(`sd.integrate` on the CasADi backend). Constraints: unactuated base (tau = [0_6; u]), "
          f"|u| <= {U_MAX} N m, linearized friction cones f_z >= {F_MIN} N, |f_x|, |f_y| <= "
          f"{MU} f_z, start at rest. Cost: torques, base-height tracking (down {DEPTH * 100:.0f} "
          f"cm and up, raised cosine) and sideways sway (+-{SWAY * 100:.0f} cm, left then "
          "right), base "
          "orientation, joint posture and speeds "
          f"(weights {WEIGHTS}). See experiments/solo12_ocp.py.", ""]
    L += table(["quantity", "value"], [
        ["intervals x dt", f"{n} x {s.dt * 1000:.0f} ms ({n * s.dt:.2f} s)"],
        ["decision variables", p.opti.nx],
        ["constraints", p.opti.ng],
        ["IPOPT status", s.status],
        ["IPOPT iterations", s.iterations],
        ["solve time (s, shared machine)", f"{s.seconds:.1f}"],
        ["largest base height error (mm)",
         f"{np.abs(s.Q[2] - s.h_ref).max() * 1000:.2f}"],
        ["largest sideways error (mm)", f"{np.abs(s.Q[1] - s.y_ref).max() * 1000:.2f}"],
        ["lowest base height (cm), reference", f"{s.Q[2].min() * 100:.2f}, "
                                               f"{s.h_ref.min() * 100:.2f}"],
        ["largest torque magnitude (N m)", f"{np.abs(s.U).max():.3f}"],
        ["normal forces min / max (N); weight / 4", f"{fz.min():.3f} / {fz.max():.3f}; "
                                                    f"{weight / 4:.3f}"],
        ["largest tangential / (mu normal) force, any foot and knot",
         f"{(ft / (MU * fz)).max():.3f}"],
        ["dynamics residual, NumPy re-evaluation", f"{residual:.1e}"]])
    L += ["", "The dynamics residual is the largest violation of the Euler steps at the "
          "solution, recomputed with `sd.constraint_dynamics` and `sd.integrate` on NumPy "
          "(independent of the CasADi graph the solver saw). In the figure the hind feet (dashed) "
          "carry almost the same normal force as the front foot of their side: the standing "
          "posture is nearly symmetric front to back, so the sway shifts the load between the "
          "left and right pairs.", "", f"![solo12 squat]({fig})", ""]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--knots", type=int, default=None, help="intervals (25; 12 with --quick)")
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--verbose", action="store_true", help="IPOPT's iteration log")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    n = args.knots or (12 if args.quick else 25)
    dt = 1.0 / n
    problem = build_problem(n, dt, args.max_iter, 5 if args.verbose else 0)
    log(f"problem built in {time.perf_counter() - t0:.1f} s: {problem.opti.nx} variables, "
        f"{problem.opti.ng} constraints")
    s = solve(problem)
    residual = dynamics_residual(problem, s)
    print(f"IPOPT status: {s.status}, iterations: {s.iterations}, solve {s.seconds:.1f} s, "
          f"dynamics residual {residual:.1e}", flush=True)
    fig = plot(s, d)
    write(d, "solo12_ocp.md", report(problem, s, residual, fig, args, t0))
    return 0 if s.success else 1


if __name__ == "__main__":
    raise SystemExit(main())
