"""Which leaf kinds a mission may use, and the loader and schema bound to them.

Built-in leaves are listed here; other packages add theirs through the ``orbitree.leaves``
entry-point group (each entry point names a ``Leaf`` subclass), so a lab can ship its own skills
without forking orbitree.
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any

from orbitree.behaviours.admittance_dock import AdmittanceDock
from orbitree.behaviours.approach import Approach
from orbitree.behaviours.calibrate_camera import CalibrateCamera
from orbitree.behaviours.calibration_views import CalibrationViews
from orbitree.behaviours.capture import Capture
from orbitree.behaviours.condition import Condition
from orbitree.behaviours.despin import Despin
from orbitree.behaviours.dock_pull import DockPull
from orbitree.behaviours.grapple import Grapple
from orbitree.behaviours.identify_kinematics import IdentifyKinematics
from orbitree.behaviours.latch import Latch
from orbitree.behaviours.log_message import LogMessage
from orbitree.behaviours.outcome import Fail, Succeed
from orbitree.behaviours.perceive import Perceive
from orbitree.behaviours.release import Release
from orbitree.behaviours.relocate import Relocate
from orbitree.behaviours.retract import Retract
from orbitree.behaviours.search import Search
from orbitree.behaviours.set_value import SetValue
from orbitree.behaviours.sweep_joint import SweepJoint
from orbitree.behaviours.track import Track
from orbitree.behaviours.wait import Wait
from orbitree.language import loader, schema
from orbitree.language.registry import Registry
from orbitree.nodes.leaf import Leaf

BUILTIN_LEAVES: tuple[type[Leaf], ...] = (
    Wait,
    SetValue,
    LogMessage,
    Succeed,
    Fail,
    Condition,
    Perceive,
    Search,
    Relocate,
    Approach,
    Capture,
    AdmittanceDock,
    Latch,
    Retract,
    Track,
    Grapple,
    Despin,
    DockPull,
    Release,
    CalibrationViews,
    CalibrateCamera,
    SweepJoint,
    IdentifyKinematics,
)


def make_registry(extra: tuple[type[Leaf], ...] = ()) -> Registry:
    return Registry.of((*BUILTIN_LEAVES, *extra))


@functools.cache
def default_registry() -> Registry:
    """Built-in leaves plus those installed through the ``orbitree.leaves`` entry points."""
    plugins = tuple(ep.load() for ep in metadata.entry_points(group="orbitree.leaves"))
    return make_registry(plugins)


def load_mission(
    path: str | Path, overrides: list[str] | tuple[str, ...] = (), registry: Registry | None = None
) -> loader.Mission:
    """Load and check a mission against the built-in leaves (and plugins), or ``registry``."""
    return loader.load_mission(path, overrides, registry or default_registry())


def mission_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The JSON Schema of missions using the built-in leaves (and plugins), or ``registry``."""
    return schema.mission_schema(registry or default_registry())
