"""Kept so that ``import pytest_leakcheck.model`` keeps working: the report model lives in
:mod:`pytest_leakcheck.report.model`, and this name is that very module."""

from __future__ import annotations

import sys

from .report import model as _model

sys.modules[__name__] = _model
