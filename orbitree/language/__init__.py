"""The mission language: mission files to validated models.

``source`` reads YAML keeping every value's line and column (and refuses hostile input);
``units`` and ``quantities`` turn ``350 mm`` into SI; ``params`` holds the parameter models of the
control nodes; ``parser`` turns the ``tree:`` into node specs; ``loader`` loads, merges ``--set``
overrides and checks a whole mission (includes, subtrees, references, blackboard writers);
``world_spec`` and ``fault_spec`` are the models of ``robots:``/``targets:``/``safety:`` and of
``faults:``/``substitute:`` (``equipment_spec``: what a robot carries; ``fault_kinds``: one model
per fault kind); ``schema`` generates the JSON Schema. Nothing here builds a tree or
touches a driver; which leaf kinds exist is handed in as a ``registry.Registry``.
"""
