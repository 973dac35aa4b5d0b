"""People's tests talk to an agent without Home Assistant's tools: what a person may
remember, recall and read goes through our own tools and services only."""

from typing import Any

import pytest

from ..conftest import NO_TOOLS


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)
