"""``succeed`` and ``fail``: return a fixed status at once (placeholders and test scaffolding).

YAML::

    - succeed: {}
    - fail: {name: not-implemented-yet}
"""

from __future__ import annotations

import py_trees

from orbitree.nodes.leaf import Leaf


class Succeed(Leaf):
    kind = "succeed"

    def update(self) -> py_trees.common.Status:
        return py_trees.common.Status.SUCCESS


class Fail(Leaf):
    kind = "fail"

    def update(self) -> py_trees.common.Status:
        return py_trees.common.Status.FAILURE
