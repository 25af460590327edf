"""Which file is in which split and group: the inventory, split sources, group resolution, init's recogniser."""
