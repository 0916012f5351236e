"""``orbitree campaign``: run one mission many times and tabulate the runs.

:mod:`~orbitree.campaign.spec` loads and checks a campaign file, :mod:`~orbitree.campaign.runs`
runs one run in a worker (shared by both pools), :mod:`~orbitree.campaign.local` runs them on a
local process pool, :mod:`~orbitree.campaign.dask_pool` on a Dask cluster, and
:mod:`~orbitree.campaign.outputs` writes the tables.

A campaign file (YAML, paths relative to it)::

    campaign: sirom-iso9283          # name, used in outputs
    description: ISO 9283 pose repeatability of the SIROM dock
    mission: ../sirom_dock.yaml      # the mission every run starts from
    workers: 4                       # process pool size (default: os.cpu_count(); --workers wins)
    cycles: 5                        # runs per case, with seeds seed0, seed0 + 1, ...
    seed: 1                          # seed0 (default: the case's mission 'seed' after overrides)
    logs: all                        # mission log per run: all | failures | none
    envelope: sirom                  # limits drawn in the plots (default: the mission's capture envelope)
    set:                             # overrides for every case, as --set KEY: VALUE
      max_duration: 60 s
    cases:                           # explicit cases, each with an id and its own overrides
      - {id: near, set: {robots.arm.start.offset: {xyz: [0, 0, 50 mm]}}}
      - {id: far,  set: {robots.arm.start.offset: {xyz: [0, 0, 150 mm]}}}
    grid:                            # cartesian product of values per key
      targets.sirom.pose.xyz: [[0.6, 0.2, 0.0], [0.6, -0.2, 0.0]]
      targets.sirom.pose.rpy: [[0, 0, 0], [0, 0, 30]]

**Cases.** Every override is a ``--set``-style assignment: a dotted key of the mission (list items
by index) and a YAML value, so anything a mission holds can vary per case — a target placement,
a start pose, a gain, a fault schedule (``faults: [...]``). The cases are every combination of
one entry of ``cases:`` (one empty case when there is none) and one point of ``grid:`` (the
cartesian product of its lists, in key order; one empty point when there is none). A case's id is
its ``id`` (default ``c1``, ``c2``, ...; ``base`` when there are no cases), joined with the grid
point's ``g1``, ``g2``, ... by a dash. Ids name log files, so they are letters, digits, ``_``
and ``-``.

**Overrides apply in this order**, later ones winning: the mission file, the campaign's
``seed``, the campaign's ``set``, the command line's ``--set``, the case's ``set``, the grid
point. Every case's mission is loaded and checked before anything runs; a bad override is
reported as ``campaign.yaml:line:col: message`` at the value in the campaign file (exit code 2).

**Runs.** Each case runs ``cycles`` times, cycle k with seed ``seed0 + k``, in a worker process
(``spawn``: workers import orbitree afresh, so a run never inherits state from the parent or
from another run). A worker loads the mission with the case's overrides and runs it in-process
with the same ``Executive`` as ``orbitree run --view none`` (simulated clock, as fast as the CPU
allows), logging to ``DIR/runs/<case>.<cycle>.jsonl``. Loading in-process rather than starting
one ``orbitree run`` subprocess per run saves the ~1.5 s of imports per run, and the pool's
workers are still separate processes, so a crash is contained. A run that raises is recorded with
status ``error`` and the exception (traceback in ``runs/<case>.<cycle>.error.txt``); a worker
that dies (a segfault in a native library) is replaced and its runs retried once before they are
recorded as ``error``. With ``logs: failures`` a run goes without a log and one that did not
succeed is run again with it (same seed, same run; the row's ``replay`` says whether it ended the
same). Ctrl-C stops starting runs and aborts the running ones within a tick (their
logs get footers), writes the outputs of what ran, and exits 130.

**Outputs** (written by :mod:`orbitree.campaign.outputs`) in ``DIR``: ``summary.csv`` (one row
per run: ``run, case, cycle, seed, status, reason, sim_time_s, wall_time_s`` — wall-clock
seconds the worker spent on the run, loading included — then the run summary flattened with
dots: ``final_error.x_mm``, ..., ``in_capture_envelope``, ``max_contact_force_n``,
``phase_s.<name>``, lists as JSON; then ``overrides`` and ``log``), ``campaign.json`` (aggregate
figures), ``faults.csv`` (outcome per injected fault kind, when faults were injected), and the
plots of :func:`orbitree.report.campaign.campaign_figures` with an ``index.md``.

Exit codes of the command: 0 when every run succeeded, 1 when any did not, 2 on bad input, 130
when interrupted.
"""
