"""RTDE protocol version 2 as a UR e-Series controller speaks it (port 30004): framing, package
types, the variables a client may ask for with their types, and recipes.

Framing: every package is ``uint16 size`` (big-endian, the whole package including this 3-byte
header), ``uint8 type``, payload. Types (ASCII letters): ``V`` request protocol version, ``v``
get URControl version, ``M`` text message, ``U`` data package, ``O`` setup outputs, ``I`` setup
inputs, ``S`` start, ``P`` pause. Values are big-endian. A recipe setup answers with a recipe id
and the comma-separated type of every variable asked for, ``NOT_FOUND`` for a name the
controller does not have (then the recipe id is 0 and the recipe is not made). Sources: UR's
"Real-Time Data Exchange (RTDE) Guide" (variable names and types) and the ur_rtde client
(``src/rtde.cpp``: what it sends and parses).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct(">HB")
HEADER_SIZE = HEADER.size  # 3
MAX_PACKAGE = 65535  # the size field is 16 bits

REQUEST_PROTOCOL_VERSION = ord("V")
GET_URCONTROL_VERSION = ord("v")
TEXT_MESSAGE = ord("M")
DATA_PACKAGE = ord("U")
SETUP_OUTPUTS = ord("O")
SETUP_INPUTS = ord("I")
START = ord("S")
PAUSE = ord("P")
PACKAGE_TYPES = {REQUEST_PROTOCOL_VERSION, GET_URCONTROL_VERSION, TEXT_MESSAGE, DATA_PACKAGE,
                 SETUP_OUTPUTS, SETUP_INPUTS, START, PAUSE}

PROTOCOL_VERSION = 2

# text message levels (protocol v2)
EXCEPTION, ERROR, WARNING, INFO = 0, 1, 2, 3

# RTDE type name -> struct format (without the byte-order mark)
TYPE_FORMATS: dict[str, str] = {
    "BOOL": "?", "UINT8": "B", "UINT32": "I", "UINT64": "Q", "INT32": "i", "DOUBLE": "d",
    "VECTOR3D": "3d", "VECTOR6D": "6d", "VECTOR6INT32": "6i", "VECTOR6UINT32": "6I",
}

_V6D = "VECTOR6D"
OUTPUTS: dict[str, str] = {
    "timestamp": "DOUBLE",
    **dict.fromkeys((
        "target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd",
        "actual_current", "actual_current_window", "actual_current_as_torque", "joint_control_output",
        "actual_TCP_pose", "actual_TCP_speed", "actual_TCP_force", "target_TCP_pose", "target_TCP_speed",
        "joint_temperatures", "actual_joint_voltage", "ft_raw_wrench", "payload_inertia",
    ), _V6D),
    "actual_digital_input_bits": "UINT64",
    "actual_execution_time": "DOUBLE",
    "robot_mode": "INT32",
    "joint_mode": "VECTOR6INT32",
    "safety_mode": "INT32",
    "safety_status": "INT32",
    "actual_tool_accelerometer": "VECTOR3D",
    **dict.fromkeys(("speed_scaling", "target_speed_fraction", "actual_momentum", "actual_main_voltage",
                     "actual_robot_voltage", "actual_robot_current"), "DOUBLE"),
    "actual_digital_output_bits": "UINT64",
    "runtime_state": "UINT32",
    "elbow_position": "VECTOR3D",
    "elbow_velocity": "VECTOR3D",
    "robot_status_bits": "UINT32",
    "safety_status_bits": "UINT32",
    "analog_io_types": "UINT32",
    **dict.fromkeys(("standard_analog_input0", "standard_analog_input1", "standard_analog_output0",
                     "standard_analog_output1", "io_current"), "DOUBLE"),
    "tool_mode": "UINT32",
    "tool_analog_input_types": "UINT32",
    **dict.fromkeys(("tool_analog_input0", "tool_analog_input1", "tool_output_current", "tool_temperature",
                     "tcp_force_scalar", "payload"), "DOUBLE"),
    "tool_output_voltage": "INT32",
    "payload_cog": "VECTOR3D",
    "output_bit_registers0_to_31": "UINT32",
    "output_bit_registers32_to_63": "UINT32",
    "input_bit_registers0_to_31": "UINT32",
    "input_bit_registers32_to_63": "UINT32",
    "script_control_line": "UINT32",
    **{f"output_int_register_{i}": "INT32" for i in range(48)},
    **{f"output_double_register_{i}": "DOUBLE" for i in range(48)},
    **{f"output_bit_register_{i}": "BOOL" for i in range(64, 128)},
    **{f"input_int_register_{i}": "INT32" for i in range(48)},
    **{f"input_double_register_{i}": "DOUBLE" for i in range(48)},
    **{f"input_bit_register_{i}": "BOOL" for i in range(64, 128)},
}

INPUTS: dict[str, str] = {
    "speed_slider_mask": "UINT32",
    "speed_slider_fraction": "DOUBLE",
    **dict.fromkeys(("standard_digital_output_mask", "standard_digital_output",
                     "configurable_digital_output_mask", "configurable_digital_output",
                     "tool_digital_output_mask", "tool_digital_output", "standard_analog_output_mask",
                     "standard_analog_output_type"), "UINT8"),
    "standard_analog_output_0": "DOUBLE",
    "standard_analog_output_1": "DOUBLE",
    "input_bit_registers0_to_31": "UINT32",
    "input_bit_registers32_to_63": "UINT32",
    "external_force_torque": _V6D,
    **{f"input_int_register_{i}": "INT32" for i in range(48)},
    **{f"input_double_register_{i}": "DOUBLE" for i in range(48)},
    **{f"input_bit_register_{i}": "BOOL" for i in range(64, 128)},
}


class ProtocolError(ValueError):
    """A package that cannot be understood; the message says why (sent back as a text message)."""


@dataclass(frozen=True)
class Recipe:
    """An ordered set of variables with its packing: ``id`` is the recipe id on the connection."""

    id: int
    names: tuple[str, ...]
    types: tuple[str, ...]
    frequency: float = 0.0  # outputs only, Hz

    @property
    def layout(self) -> struct.Struct:
        return struct.Struct(">" + "".join(TYPE_FORMATS[t] for t in self.types))

    def pack(self, values: dict[str, object]) -> bytes:
        flat: list[object] = []
        for name, kind in zip(self.names, self.types, strict=True):
            value = values[name]
            if kind.startswith("VECTOR"):
                flat.extend(value)  # type: ignore[arg-type]
            else:
                flat.append(value)
        return bytes([self.id]) + self.layout.pack(*flat)

    def unpack(self, payload: bytes) -> dict[str, object]:
        """``payload`` without the recipe id byte -> {name: value}; ProtocolError on a bad size."""
        layout = self.layout
        if len(payload) != layout.size:
            raise ProtocolError(f"data package for recipe {self.id} has {len(payload)} bytes of values, "
                                f"the recipe needs {layout.size}")
        flat = list(layout.unpack(payload))
        out: dict[str, object] = {}
        for name, kind in zip(self.names, self.types, strict=True):
            count = int(TYPE_FORMATS[kind][0]) if kind.startswith("VECTOR") else 1
            out[name] = tuple(flat[:count]) if count > 1 else flat[0]
            del flat[:count]
        return out


def package(kind: int, payload: bytes = b"") -> bytes:
    """One framed package."""
    size = HEADER_SIZE + len(payload)
    if size > MAX_PACKAGE:
        raise ProtocolError(f"package of {size} bytes exceeds {MAX_PACKAGE}")
    return HEADER.pack(size, kind) + payload


def text_message(message: str, level: int = INFO, source: str = "URControl") -> bytes:
    """Protocol v2 text message: length-prefixed message and source, then the level."""
    text = message.encode("utf-8", "replace")[:255]
    src = source.encode("utf-8", "replace")[:255]
    return package(TEXT_MESSAGE, bytes([len(text)]) + text + bytes([len(src)]) + src + bytes([level]))


def parse_names(payload: bytes) -> list[str]:
    """Comma-separated variable names (ur_rtde ends the list with a comma)."""
    text = payload.decode("ascii", "replace")
    return [name.strip() for name in text.split(",") if name.strip()]


def setup_reply(recipe_id: int, names: list[str], table: dict[str, str]) -> tuple[bytes, Recipe | None]:
    """The answer to a recipe setup and the recipe (None when some name is not found)."""
    types = [table.get(name, "NOT_FOUND") for name in names]
    ok = bool(names) and "NOT_FOUND" not in types
    reply = bytes([recipe_id if ok else 0]) + ",".join(types).encode("ascii")
    return reply, (Recipe(recipe_id, tuple(names), tuple(types)) if ok else None)
