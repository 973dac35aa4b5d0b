"""Summaries' tests talk to an agent without Home Assistant's tools: the model's only
work is answering, and summarising."""

from typing import Any

import pytest

from ..conftest import NO_TOOLS


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)
