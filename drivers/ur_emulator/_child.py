"""Entry point of the emulator's child process (see ``process``): ``python -m
orbitree.drivers.ur_emulator._child FD``, FD a socket to the parent."""

import sys
from multiprocessing.connection import Connection

from orbitree.drivers.ur_emulator.process import child_main

if __name__ == "__main__":
    child_main(Connection(int(sys.argv[1])))
