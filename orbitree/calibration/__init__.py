"""``orbitree calibrate``: Monte Carlo studies of kinematic calibration methods.

``orbitree calibrate circle-point FILE --iterations N -o DIR`` repeats N times the circle-point
measurement of [CirclePoint] (each joint turned alone while a laser tracker measures a reflector on
its link, with the tracker's noise and the joints' error motions) and the identification of the
DH / Hayati–Mirmirani parameters from it (:mod:`orbitree.skills.circle_point`), then writes the
mean, standard uncertainty, coverage interval, extremes, bias and CpK of each parameter.

:mod:`~orbitree.calibration.config` loads and checks the file (``missions/calibration/``),
:mod:`~orbitree.calibration.montecarlo` runs chunks of iterations as numpy batches here, on a local
process pool or on a Dask cluster (``--scheduler``, as ``orbitree campaign`` does),
:mod:`~orbitree.calibration.outputs` writes ``summary.json``, ``parameters.csv``, the figures and
``index.md``, and :mod:`~orbitree.calibration.command` is the command.
"""
