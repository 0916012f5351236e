"""py_trees' per-node debug messages, skipped while nobody reads them.

Every py_trees ``tick`` and ``stop`` (a behaviour's, a composite's, a decorator's) calls
``self.logger.debug(...)``; py_trees' ``Logger.debug`` then compares ``py_trees.logging.level``
with ``Level.INFO`` (an ``IntEnum`` comparison, in Python) and prints nothing unless the level is
DEBUG. On a mission tree that is ten or so calls per tick, ~0.15-0.2 µs each, for no output.

For the run, ``quiet_debug`` gives each node whose logger is py_trees' own a logger of the same
name whose ``debug`` does nothing (``info``, ``warning`` and ``error`` are py_trees'), and gives the
nodes their loggers back afterwards. When ``py_trees.logging.level`` is DEBUG as the run starts,
the nodes keep py_trees' loggers: a user debugging the tree through py_trees' logging gets every
message. (py_trees still formats the message it passes, eagerly: that part of the cost remains.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import py_trees


class QuietLogger(py_trees.logging.Logger):
    """py_trees' ``Logger`` without its debug messages."""

    def debug(self, msg: str) -> None:
        pass


def quiet_debug(behaviours: Iterable[py_trees.behaviour.Behaviour]) -> Callable[[], None]:
    """Give the nodes' py_trees loggers a no-op ``debug`` unless py_trees' level is DEBUG now;
    return the call that puts their own loggers back."""
    if py_trees.logging.level <= py_trees.logging.Level.DEBUG:
        return _nothing
    swapped = []
    for node in behaviours:
        logger = node.logger
        if type(logger) is py_trees.logging.Logger:  # a logger of the user's own is kept
            quiet = QuietLogger.__new__(QuietLogger)
            quiet.__dict__.update(logger.__dict__)  # the same prefix (the node's name when built)
            node.logger = quiet
            swapped.append((node, logger))

    def restore() -> None:
        for node, logger in swapped:
            if type(node.logger) is QuietLogger:
                node.logger = logger

    return restore


def _nothing() -> None:
    pass
