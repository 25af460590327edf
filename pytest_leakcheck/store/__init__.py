"""The SQLite signature store: the file, its location rule, snapshots."""
