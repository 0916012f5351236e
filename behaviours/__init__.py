"""py_trees leaves: each wraps one skill, declares its blackboard keys and commands drivers."""
