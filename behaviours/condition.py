"""``condition``: SUCCESS when a blackboard value passes every test given, else FAILURE.

YAML::

    - condition: {key: /target/sirom/visible, equals: true}
    - condition: {key: /servo/error, norm: true, below: 1 mm}
    - condition: {key: /target/sirom/pose_cam, max_age: 200 ms}   # fresh, not stale
    - condition: {key: /mission/abort, exists: false}

Tests: ``exists``, ``equals``, ``not_equals``, ``below`` (<), ``at_most`` (<=), ``above`` (>),
``at_least`` (>=) and ``max_age`` (written no longer ago than this). Numbers may carry units
(converted to SI); ``norm: true`` compares the Euclidean norm of a vector value. A missing key
fails every test except ``exists: false``. The same tests drive the ``guard`` decorator.
"""

from __future__ import annotations

import py_trees

from orbitree.language.params import ConditionParams
from orbitree.nodes.conditions import check_blackboard
from orbitree.nodes.leaf import Leaf

__all__ = ["Condition", "ConditionParams"]


class Condition(Leaf):
    kind = "condition"
    Params = ConditionParams
    params: ConditionParams

    @classmethod
    def reads(cls, params: ConditionParams) -> list[str]:
        return [params.key]

    def update(self) -> py_trees.common.Status:
        passed, self.feedback_message = check_blackboard(self.params, self.bb, self.ctx)
        return py_trees.common.Status.SUCCESS if passed else py_trees.common.Status.FAILURE
