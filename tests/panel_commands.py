"""The Memory panel's WebSocket commands as a test sends them: answers and refusals."""

from typing import Any

from pytest_homeassistant_custom_component.typing import MockHAClientWebSocket

from custom_components.azure_openai_memory.const import DOMAIN


async def answer(client: MockHAClientWebSocket, name: str, /, **fields: Any) -> Any:
    """A command's result; the test fails when it was refused."""
    await client.send_json_auto_id({"type": f"{DOMAIN}/{name}", **fields})
    message = await client.receive_json()
    assert message["success"], message
    return message["result"]


async def refusal(client: MockHAClientWebSocket, name: str, /, **fields: Any) -> dict[str, Any]:
    """A command's error; the test fails when it was answered."""
    await client.send_json_auto_id({"type": f"{DOMAIN}/{name}", **fields})
    message = await client.receive_json()
    assert not message["success"], message
    return dict(message["error"])


async def refused_as(
    client: MockHAClientWebSocket, code: str, name: str, /, **fields: Any
) -> dict[str, Any]:
    """A refusal with this code; its error (translation key and placeholders)."""
    error = await refusal(client, name, **fields)
    assert error["code"] == code, error
    return error


async def not_allowed(client: MockHAClientWebSocket, name: str, /, **fields: Any) -> None:
    """Refused to a caller who is not an administrator, with the translated reason."""
    error = await refused_as(client, "unauthorized", name, **fields)
    assert (error["translation_domain"], error["translation_key"]) == (DOMAIN, "not_allowed")


async def invalid(client: MockHAClientWebSocket, name: str, /, **fields: Any) -> str:
    """Refused by the command's schema; the message says which field."""
    error = await refused_as(client, "invalid_format", name, **fields)
    return str(error["message"])


async def translated(
    client: MockHAClientWebSocket, key: str, name: str, /, **fields: Any
) -> dict[str, Any]:
    """Refused with one of our translated errors; its placeholders."""
    error = await refused_as(client, "home_assistant_error", name, **fields)
    assert (error["translation_domain"], error["translation_key"]) == (DOMAIN, key), error
    return dict(error.get("translation_placeholders") or {})
