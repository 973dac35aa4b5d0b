"""The Azure OpenAI stand-in used by the tests and by scripts/develop."""

from .server import DEFAULT_DEPLOYMENTS, DEFAULT_KEY, AzureStub, Reply, ToolCall

__all__ = ["DEFAULT_DEPLOYMENTS", "DEFAULT_KEY", "AzureStub", "Reply", "ToolCall"]
