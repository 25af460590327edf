"""The ways in for CI: the pre-commit hook and the pull-request mode."""
