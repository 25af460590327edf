"""The stages above the detectors: preflight, signatures, search, findings, and check() that runs them."""
