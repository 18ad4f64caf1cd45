"""Fixtures for the hostprobe tests: one capture per indirect parameter (the store: tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import CaptureStore
from tests.hostprobe.hostprobe_capture_support import Capture


@pytest.fixture
def capture(request: pytest.FixtureRequest, captures: CaptureStore) -> Capture:
    """The capture named by ``indirect`` parametrization."""
    return captures.get(request.param)
