"""Models and data exchanged with other libraries: Pinocchio (:mod:`.pinocchio`: models both ways,
configuration/velocity/matrix maps) and MuJoCo (:mod:`.mujoco`: ``MjModel`` to symdyn, state
maps). Both libraries are optional; each is imported only when a function needs it."""
from .mujoco import MujocoMaps, from_mujoco, mujoco_maps
from .pinocchio import PinocchioMaps, from_pinocchio, pinocchio_maps, to_pinocchio

__all__ = ["MujocoMaps", "PinocchioMaps", "from_mujoco", "from_pinocchio", "mujoco_maps",
           "pinocchio_maps", "to_pinocchio"]
