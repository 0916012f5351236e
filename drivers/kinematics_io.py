"""Read and write a kinematics file: an arm's calibrated link parameters.

The ``kinematics:`` of a robot in a mission, written by the ``identify_kinematics`` leaf. YAML, SI
units in the key names (one entry per joint, base to flange; ``hm`` marks Hayati–Mirmirani
joints, which have ``d = 0`` and a tilt ``beta``; see :mod:`orbitree.skills.kinematics`)::

    model: ur10e
    d_m: [0.1807, 0.0, 0.0, 0.17415, 0.11985, 0.11655]
    theta_offset_rad: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    a_m: [0.0, -0.6127, -0.57155, 0.0, 0.0, 0.0]
    alpha_rad: [1.5707963, 0.0, 0.0, 1.5707963, -1.5707963, 0.0]
    beta_rad: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    hm: [false, true, true, false, false, false]

Other keys (``method``, ``measured``: what the calibration saw) are kept for people and ignored
here. A missing key, a list of the wrong length, a value that is not a finite number, or a table
that breaks the model's rules raise :class:`~orbitree.drivers.calibration_io.CalibrationFileError`
naming the file and the key.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from orbitree.drivers.bounded_yaml import TextTooLarge, read_limited, safe_load
from orbitree.drivers.calibration_io import CalibrationFileError
from orbitree.skills.kinematics import DHTable

COLUMNS = (("d_m", "d"), ("theta_offset_rad", "theta_offset"), ("a_m", "a"), ("alpha_rad", "alpha"),
           ("beta_rad", "beta"))


def load_kinematics(path: str | Path, joints: int = 6) -> DHTable:
    """The link table of a kinematics file, checked (see the module notes)."""
    path = Path(path)
    if not path.is_file():
        raise CalibrationFileError(path, "kinematics file not found")
    try:
        text = read_limited(path).removeprefix(codecs.BOM_UTF8).decode("utf-8")
        data = safe_load(text)
    except (TextTooLarge, UnicodeDecodeError) as exc:
        raise CalibrationFileError(path, f"not a kinematics file: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise CalibrationFileError(path, f"malformed YAML: {where}{exc.problem or exc}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise CalibrationFileError(path, f"cannot read kinematics file ({exc})") from None
    if not isinstance(data, dict):
        raise CalibrationFileError(path, f"expected a mapping of kinematic parameters, got {type(data).__name__}")
    missing = [key for key, _ in COLUMNS if key not in data] + (["hm"] if "hm" not in data else [])
    if missing:
        raise CalibrationFileError(path, f"missing {', '.join(repr(k) for k in missing)} (a kinematics file "
                                         f"needs {', '.join(k for k, _ in COLUMNS)} and hm, {joints} values each)")
    values: dict[str, Any] = {}
    for key, name in COLUMNS:
        values[name] = tuple(_numbers(path, key, data[key], joints))
    hm = data["hm"]
    if not isinstance(hm, list) or len(hm) != joints or not all(isinstance(v, bool) for v in hm):
        raise CalibrationFileError(path, f"'hm' must be {joints} true/false values, got {_short(hm)}")
    try:
        return DHTable(**values, hm=tuple(hm), name=f"{data.get('model', 'arm')} (calibrated: {path.name})")
    except ValueError as exc:
        raise CalibrationFileError(path, f"not a valid link table: {exc}") from None


def save_kinematics(path: str | Path, table: DHTable, model: str = "ur10e", **extra: Any) -> None:
    """Write ``table`` (and ``extra`` keys, plain YAML values) readable by :func:`load_kinematics`."""
    data: dict[str, Any] = {"model": model}
    for key, name in COLUMNS:
        data[key] = [float(v) for v in getattr(table, name)]
    data["hm"] = [bool(v) for v in table.hm]
    data |= extra
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110))


def _numbers(path: Path, key: str, value: Any, joints: int) -> list[float]:
    if not isinstance(value, list) or len(value) != joints:
        shape = f"{len(value)} values" if isinstance(value, list) else type(value).__name__
        raise CalibrationFileError(path, f"{key!r} must hold {joints} values (one per joint), got {shape}")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise CalibrationFileError(path, f"{key!r} must be numbers, got {_short(value)}")
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise CalibrationFileError(path, f"{key!r} contains non-finite values: {_short(value)}")
    return [float(v) for v in array]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
