"""Fault injection while a mission runs: the schedule of one run (``schedule``), the injector that
plays it on the drivers and the tree (``injector``), and leaf stubs (``stubs``). What a mission
may declare is the language's: :mod:`orbitree.language.fault_spec`.
"""
