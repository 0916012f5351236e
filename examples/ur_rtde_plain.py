"""A plain ur_rtde program, as ur_rtde's own examples write one: connect, moveL, speedL for a
second, stopL, read the TCP pose back.

    python examples/ur_rtde_plain.py 127.0.0.2            # a controller (or `orbitree ur-emulator`) there
    python examples/ur_rtde_plain.py 127.0.0.3 --emulate  # starts an emulator there for the run
"""

import sys
import time

import rtde_control
import rtde_receive


def main(host: str) -> None:
    rtde_r = rtde_receive.RTDEReceiveInterface(host)
    rtde_c = rtde_control.RTDEControlInterface(host)
    start = rtde_r.getActualTCPPose()
    print("TCP pose at start:", [round(v, 4) for v in start])
    target = list(start)
    target[2] -= 0.05
    rtde_c.moveL(target, 0.25, 1.2)  # 50 mm down, blocking
    print("after moveL      :", [round(v, 4) for v in rtde_r.getActualTCPPose()])
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:  # 50 mm/s along x for a second, one command per cycle
        t_cycle = rtde_c.initPeriod()
        rtde_c.speedL([0.05, 0.0, 0.0, 0.0, 0.0, 0.0], 0.5, 0.002)
        rtde_c.waitPeriod(t_cycle)
    rtde_c.stopL(2.0)
    end = rtde_r.getActualTCPPose()
    print("after speedL     :", [round(v, 4) for v in end], f"(moved {1000 * (end[0] - target[0]):.1f} mm in x)")
    rtde_c.stopScript()
    rtde_c.disconnect()
    rtde_r.disconnect()


if __name__ == "__main__":
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.2"
    if "--emulate" in sys.argv:
        from orbitree.drivers.ur_emulator import EmulatorProcess

        with EmulatorProcess().start(address):
            main(address)
    else:
        main(address)
