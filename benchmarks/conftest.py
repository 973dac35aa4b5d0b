"""Benchmarks that need a real hass reuse the test fixtures."""

from tests.conftest import *  # noqa: F403
