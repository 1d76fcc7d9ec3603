"""Models from files and names: URDF (:mod:`.urdf`), MJCF through MuJoCo (:mod:`.mjcf`), the
robots of example-robot-data (:mod:`.robots`) and short spec strings such as ``"serial:20"`` or
``"robot:panda"`` (:mod:`.specs`, the ``symdyn`` command's model argument)."""
from .mjcf import MJCFError, MJCFWarning, load_mjcf
from .robots import available_robots, load_robot, robot_urdf
from .specs import SpecError, from_spec
from .urdf import URDFError, load_urdf

__all__ = ["MJCFError", "MJCFWarning", "SpecError", "URDFError", "available_robots", "from_spec",
           "load_mjcf", "load_robot", "load_urdf", "robot_urdf"]
