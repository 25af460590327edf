"""Which file is in which split and group: the inventory, split files, group resolution, init's recogniser."""
