"""The stand-in's prompt cache: the longest beginning seen before, in Azure's steps."""

from typing import Any

import aiohttp

from .azure_stub import DEFAULT_KEY, AzureStub
from .azure_stub.caching import PromptCache, prompt_tokens, tokens

BASE = [f"w{i}" for i in range(2000)]


def other(count: int) -> list[str]:
    return [f"x{i}" for i in range(count)]


def test_cached_tokens_are_the_longest_beginning_seen_in_128_token_steps() -> None:
    """0 below 1,024 tokens; past it, the shared beginning rounded down to 128-token steps."""
    cache = PromptCache()
    assert cache.cached_tokens(BASE) == 0  # nothing seen before
    assert cache.cached_tokens(BASE) == 1920  # 1,024 + 7 x 128 of the 2,000
    assert cache.cached_tokens(BASE[:1000]) == 0  # too short to be cached at all
    assert cache.cached_tokens(BASE[:1024]) == 1024
    assert cache.cached_tokens(BASE[:1023] + other(500)) == 0
    assert cache.cached_tokens(BASE[:1100] + other(500)) == 1024
    assert cache.cached_tokens(BASE[:1300] + other(300)) == 1280
    # The longest over every earlier prompt, the ones that branched off included.
    assert cache.cached_tokens(BASE[:1300] + other(200) + ["y"] * 300) == 1408
    assert PromptCache().cached_tokens(BASE) == 0  # another cache knows none of it


def test_prompt_is_read_as_instructions_then_tools_then_messages() -> None:
    """Each part as canonical JSON, in reading order; key order in the body does not count."""
    tool = {"type": "function", "name": "recall", "parameters": {"type": "object"}}
    item = {"role": "user", "content": "Hi"}
    body = {"input": [item], "tools": [tool], "instructions": "Be brief."}
    canonical = [
        '{"name":"recall","parameters":{"type":"object"},"type":"function"}',
        '{"content":"Hi","role":"user"}',
    ]
    assert prompt_tokens(body) == [
        token for part in ("Be brief.", *canonical) for token in tokens(part)
    ]
    reordered = {"instructions": "Be brief.", "tools": [dict(reversed(tool.items()))]}
    assert prompt_tokens({**reordered, "input": [dict(reversed(item.items()))]}) == (
        prompt_tokens(body)
    )
    assert tokens("Be brief.") == ["Be", " brief", "."]


def long_chat(question: str) -> dict[str, Any]:
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i} " * 20}
        for i in range(40)
    ]
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a voice assistant."},
            *history,
            {"role": "user", "content": question},
        ],
    }


async def post(stub: AzureStub, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stub.endpoint}/openai/v1/{path}", json=body, headers={"api-key": DEFAULT_KEY}
        ) as response,
    ):
        assert response.status == 200, await response.text()
        result: dict[str, Any] = await response.json()
        return result


async def test_usage_reports_cached_tokens_as_azure_does(azure: AzureStub) -> None:
    """Both APIs: the prompt's own tokens, and of them what an earlier request began with."""
    azure.prompt_caching = True
    first, second = long_chat("Which lamps are on?"), long_chat("And in the hallway?")
    shared = 0
    for mine, theirs in zip(prompt_tokens(first), prompt_tokens(second), strict=False):
        if mine != theirs:
            break
        shared += 1
    assert shared > 1024

    usage = (await post(azure, "chat/completions", first))["usage"]
    assert usage["prompt_tokens"] == len(prompt_tokens(first))
    assert usage["prompt_tokens_details"]["cached_tokens"] == 0
    usage = (await post(azure, "chat/completions", second))["usage"]
    assert usage["prompt_tokens"] == len(prompt_tokens(second))
    assert usage["prompt_tokens_details"]["cached_tokens"] == 1024 + (shared - 1024) // 128 * 128

    as_input = {"model": "gpt-4o-mini", "input": second["messages"]}
    usage = (await post(azure, "responses", as_input))["usage"]
    assert usage["input_tokens"] == len(prompt_tokens(as_input))
    # The same items as input rather than messages: the same beginning, read in full.
    assert usage["input_tokens_details"]["cached_tokens"] == 1024 + (
        (len(prompt_tokens(as_input)) - 1024) // 128 * 128
    )


async def test_without_prompt_caching_usage_is_as_scripted(azure: AzureStub) -> None:
    """Off (the default), the usage is the scripted figure and nothing is cached."""
    body = long_chat("Which lamps are on?")
    await post(azure, "chat/completions", body)
    usage = (await post(azure, "chat/completions", body))["usage"]
    assert (usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]) == (12, 0)
