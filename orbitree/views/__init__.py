"""Live views of a running mission. They read snapshots, never the tree itself."""
