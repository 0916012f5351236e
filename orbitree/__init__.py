"""orbitree: a behaviour-tree mission executive for robotic on-orbit servicing."""

__version__ = "0.1.0"
