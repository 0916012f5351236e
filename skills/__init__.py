"""Pure algorithms (no py_trees, no I/O): servo laws, kinematics, board pose, contact, ..."""
