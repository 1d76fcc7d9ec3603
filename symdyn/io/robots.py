"""Real robots from ``example-robot-data`` (``pip install example-robot-data``).

``robot_urdf(name)`` locates a robot's URDF and ``load_robot(name)`` loads it with
:func:`symdyn.io.urdf.load_urdf`, by default with a floating base for legged robots, humanoids and
drones and a fixed base for arms, hands and mobile manipulators. The pip package installs its data
under ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``; it is found through the
package's installed-file record (``importlib.metadata``), then the interpreter's site directories and
prefix. The environment variable ``SYMDYN_ROBOTS_DIR`` (a ``robots`` directory) takes precedence.

Not registered: the romeo URDFs (massless moving finger links make the mass matrix singular, and
romeo_small/romeo_laas_small have non-physical inertias; load_urdf refuses them unless
``check_inertias=False``) and ur3.urdf (no links). Any other URDF loads with ``load_urdf(path)``.
"""
from __future__ import annotations

import importlib.metadata
import os
import site
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["ROBOTS", "available_robots", "load_robot", "robot_urdf", "robots_dir"]

_SHARE = Path("cmeel.prefix", "share", "example-robot-data", "robots")


class RobotInfo(NamedTuple):
    path: str            # relative to the example-robot-data ``robots`` directory
    floating_base: bool  # default of load_robot


def _r(path: str, floating: bool) -> RobotInfo:
    return RobotInfo(path, floating)


ROBOTS: dict[str, RobotInfo] = {
    # arms and hands (fixed base)
    "ur3": _r("ur_description/urdf/ur3_robot.urdf", False),
    "ur5": _r("ur_description/urdf/ur5_robot.urdf", False),
    "ur10": _r("ur_description/urdf/ur10_robot.urdf", False),
    "ur3_gripper": _r("ur_description/urdf/ur3_gripper.urdf", False),
    "ur5_gripper": _r("ur_description/urdf/ur5_gripper.urdf", False),
    "panda": _r("panda_description/urdf/panda.urdf", False),
    "kinova": _r("kinova_description/robots/kinova.urdf", False),
    "xarm7": _r("xarm_description/urdf/xarm7.urdf", False),
    "z1": _r("z1_description/urdf/z1.urdf", False),
    "so100": _r("so_arm_description/urdf/so100.urdf", False),
    "so101": _r("so_arm_description/urdf/so101.urdf", False),
    "baxter": _r("baxter_description/urdf/baxter.urdf", False),
    "talos_arm": _r("talos_data/robots/talos_left_arm.urdf", False),
    "finger_edu": _r("finger_edu_description/robots/finger_edu.urdf", False),
    "allegro_left_hand": _r("allegro_hand_description/urdf/allegro_left_hand.urdf", False),
    "allegro_right_hand": _r("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "double_pendulum": _r("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "double_pendulum_continuous": _r(
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "double_pendulum_simple": _r("double_pendulum_description/urdf/double_pendulum_simple.urdf",
                                 False),
    "asr_twodof": _r("asr_twodof_description/urdf/TwoDofs.urdf", False),
    # mobile manipulators (base fixed, as in example-robot-data's loaders)
    "tiago": _r("tiago_description/robots/tiago.urdf", False),
    "tiago_dual": _r("tiago_description/robots/tiago_dual.urdf", False),
    "tiago_no_hand": _r("tiago_description/robots/tiago_no_hand.urdf", False),
    "tiago_pro": _r("tiago_pro_description/robots/tiago_pro.urdf", False),
    "pr2": _r("pr2_description/urdf/pr2.urdf", False),
    # humanoids (floating base)
    "talos": _r("talos_data/robots/talos_reduced.urdf", True),
    "talos_full": _r("talos_data/robots/talos_full_v2.urdf", True),
    "g1": _r("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "g1_with_hand": _r("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", True),
    "icub": _r("icub_description/robots/icub.urdf", True),
    "icub_reduced": _r("icub_description/robots/icub_reduced.urdf", True),
    "simple_humanoid": _r("simple_humanoid_description/urdf/simple_humanoid.urdf", True),
    "simple_humanoid_classical": _r(
        "simple_humanoid_description/urdf/simple_humanoid_classical.urdf", True),
    "human": _r("human_description/robots/human.urdf", True),
    "alexander": _r("alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf", True),
    "bolt": _r("bolt_description/robots/bolt.urdf", True),
    "centauro": _r("centauro_description/urdf/centauro.urdf", True),
    # quadrupeds (floating base)
    "solo8": _r("solo_description/robots/solo.urdf", True),
    "solo12": _r("solo_description/robots/solo12.urdf", True),
    "anymal": _r("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": _r("anymal_c_simple_description/urdf/anymal.urdf", True),
    "anymal_kinova": _r("anymal_b_simple_description/robots/anymal-kinova.urdf", True),
    "go1": _r("go1_description/urdf/go1.urdf", True),
    "go2": _r("go2_description/urdf/go2.urdf", True),
    "a1": _r("a1_description/urdf/a1.urdf", True),
    "b1": _r("b1_description/urdf/b1.urdf", True),
    "b1_z1": _r("b1_description/urdf/b1-z1.urdf", True),
    "laikago": _r("laikago_description/urdf/laikago.urdf", True),
    "hyq": _r("hyq_description/robots/hyq_no_sensors.urdf", True),
    "quadruped": _r("quadruped_description/urdf/quadruped.urdf", True),
    # aerial (floating base)
    "iris": _r("iris_description/robots/iris.urdf", True),
    "hector": _r("hector_description/robots/quadrotor_base.urdf", True),
    "borinot": _r("borinot_description/urdf/borinot_flying_arm_2.urdf", True),
    "hextilt": _r("hextilt_description/urdf/hextilt_flying_arm_5.urdf", True),
}


def _candidates():
    env = os.environ.get("SYMDYN_ROBOTS_DIR")
    if env:
        yield Path(env)
    try:
        dist = importlib.metadata.distribution("example-robot-data")
        yield Path(str(dist.locate_file(_SHARE)))
    except importlib.metadata.PackageNotFoundError:
        pass
    dirs = list(getattr(site, "getsitepackages", list)())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    dirs += [p for p in sys.path if p]
    for d in dirs:
        yield Path(d) / _SHARE
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        yield Path(prefix) / "share" / "example-robot-data" / "robots"


@lru_cache(maxsize=None)
def _robots_dir(env: str | None) -> Path:
    if env and not Path(env).is_dir():
        raise FileNotFoundError(f"SYMDYN_ROBOTS_DIR={env!r} is not a directory")
    for c in _candidates():
        if c.is_dir():
            return c
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data), "
                            "or set SYMDYN_ROBOTS_DIR to its 'robots' directory")


def robots_dir() -> Path:
    """The example-robot-data ``robots`` directory (FileNotFoundError if it is not installed)."""
    return _robots_dir(os.environ.get("SYMDYN_ROBOTS_DIR"))


def available_robots() -> list[str]:
    """Names accepted by :func:`load_robot` whose URDF is present in the installed data."""
    try:
        base = robots_dir()
    except FileNotFoundError:
        return []
    return [n for n, info in ROBOTS.items() if (base / info.path).is_file()]


def robot_urdf(name: str) -> Path:
    """Path of robot ``name``'s URDF (see :data:`ROBOTS`)."""
    info = ROBOTS.get(name)
    if info is None:
        raise ValueError(f"unknown robot {name!r}; available: {', '.join(available_robots())}")
    path = robots_dir() / info.path
    if not path.is_file():
        raise FileNotFoundError(f"robot {name!r}: {path} is missing from the installed "
                                f"example-robot-data; available: {', '.join(available_robots())}")
    return path


def load_robot(name: str, floating_base: bool | None = None, lock: Any = None,
               **kwargs: Any) -> Model:
    """Load robot ``name`` as a :class:`~symdyn.model.Model`.

    ``floating_base=None`` uses the robot's default (True for legged robots, humanoids and drones).
    ``lock``: joints to lock (names, locked at 0 / neutral, or a dict name -> value), as
    :func:`symdyn.reduced_model`; e.g. the Panda arm without its fingers:
    ``load_robot("panda", lock=["panda_finger_joint1", "panda_finger_joint2"])``.
    Further keyword arguments go to :func:`symdyn.io.urdf.load_urdf` (``gravity``, ``check_inertias``,
    ``max_bodies``, ``armature``, ``mimic``, ``snap``: the tolerance within which rotation and
    joint-axis entries are made exactly 0 or +-1, default 1e-10, ``0`` to keep the file's values).
    """
    from .urdf import load_urdf

    path = robot_urdf(name)
    fb = ROBOTS[name].floating_base if floating_base is None else bool(floating_base)
    return load_urdf(path, floating_base=fb, name=name, lock=lock, **kwargs)
