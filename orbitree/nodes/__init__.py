"""Tree nodes: the leaf base classes (``leaf``; ``motion``, which owns "stop what I started"),
the run context leaves see (``context``), the control nodes py_trees lacks (``control``), the
condition tests (``conditions``), and the builder from node specs to a py_trees tree
(``build``; ``render`` draws a tree as text). The leaves themselves are in
:mod:`orbitree.behaviours`.
"""
