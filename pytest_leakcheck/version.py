"""The version, in one place: read by pyproject.toml, `leakcheck --version` and SARIF."""

__version__ = "0.1.0"
