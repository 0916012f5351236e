"""Running a mission: the executive's tick loop (``executive``), its clocks (``clock``) and
per-node timing (``timing``), the drivers behind the blackboard (``devices``), the safety monitor
(``safety``) and the mission log (``recorder``; ``read_log`` reads one back).
"""

from orbitree.runtime.recorder import Log, read_log

__all__ = ["Log", "read_log"]
