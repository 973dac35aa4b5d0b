"""A task's wanted structure (a voluptuous schema) as the JSON schema OpenAI's strict mode takes."""

from typing import Any

import voluptuous as vol

from ..compat import SELECTOR_SERIALIZER, schema_to_json


def _make_strict(schema: dict[str, Any]) -> None:
    """Strict mode wants every property required and no others; optional ones may be null.

    The same adjustment core's OpenAI integration makes.
    """
    if schema.get("type") == "object":
        schema.setdefault("additionalProperties", False)
        if "properties" not in schema:
            return
        required = schema.setdefault("required", [])
        for name, prop in schema["properties"].items():
            _make_strict(prop)
            if name not in required:
                if "type" in prop:
                    prop["type"] = [prop["type"], "null"]
                required.append(name)
    elif schema.get("type") == "array" and "items" in schema:
        _make_strict(schema["items"])


def structured_output_schema(structure: vol.Schema) -> dict[str, Any]:
    """The JSON schema of a task's structure, selectors included."""
    result = schema_to_json(structure, SELECTOR_SERIALIZER)
    _make_strict(result)
    return result
