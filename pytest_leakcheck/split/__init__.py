"""`leakcheck split`: planning a split that keeps groups together, and applying it."""
