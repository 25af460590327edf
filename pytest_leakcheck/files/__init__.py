"""Paths, names and bytes: globs, the byte codec and display escaping, atomic writes, object-storage roots,
images inside shard files. No numpy."""
