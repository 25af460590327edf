"""``leakcheck init``: recognise how a dataset names its splits and groups, and propose a first policy.

A way in like ``split/``: it reads the split-source registry (``sources/``)
and the detector registry, and writes nothing itself; the CLI shows its lines.
"""
