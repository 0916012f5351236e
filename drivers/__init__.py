"""Hardware and simulation behind small interfaces: robot arm, camera, docking latch, sim world."""
