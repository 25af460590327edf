"""The one decode per file and the signal families computed from it, and where that work runs."""
