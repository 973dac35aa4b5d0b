"""One conversation through Home Assistant's Assist pipeline, text in, as a satellite runs it.

The run starts at the intent stage (where a satellite's run continues after speech-to-text),
our agent is the pipeline's conversation engine, and the pipeline ends with text-to-speech.
"Streaming" is the pipeline handing the agent's text to a TTS engine that takes streamed
input while the answer is still arriving; without it, TTS gets the whole answer at tts-start.
Either way the pipeline reports every streamed delta as an intent-progress event.
"""

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import tts
from homeassistant.components.assist_pipeline.pipeline import (
    PipelineEvent,
    PipelineEventType,
    PipelineInput,
    PipelineRun,
    PipelineStage,
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.components.tts.entity import TTSAudioRequest, TTSAudioResponse
from homeassistant.config_entries import ConfigEntry, ConfigFlow
from homeassistant.const import MATCH_ALL, Platform
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockModule,
    MockPlatform,
    mock_config_flow,
    mock_integration,
    mock_platform,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from ..azure_stub import AzureStub, Reply
from ..conftest import ASSIST_CLOCK_NOTES, agent_entity_id

# Home Assistant 2025.4's pipeline cannot stream an agent's text into TTS: its TTS entities
# have no async_supports_streaming_input and its pipeline no tts_start_streaming.
PIPELINE_STREAMS_TO_TTS = hasattr(tts.TextToSpeechEntity, "async_supports_streaming_input")

FIRST = "Tell me something nice about the weather"
FIRST_ANSWER = (
    "The sun is out over the whole valley this morning, the wind has dropped to a gentle "
    "breeze, and the afternoon should stay warm and dry."
)
SECOND = "And what about tomorrow evening"
SECOND_ANSWER = (
    "Tomorrow evening brings a few clouds from the west, a light shower after dark, and "
    "a mild night that suits an evening walk."
)
TTS_DOMAIN = "speech_stand_in"


class SpeechStandIn(tts.TextToSpeechEntity):
    """A TTS engine that 'speaks' the text it is given, whole, and remembers it."""

    _attr_name = "Speech stand-in"
    _attr_unique_id = "speech_stand_in"
    _attr_supported_languages = ["en"]
    _attr_default_language = "en"

    def __init__(self) -> None:
        # One list per message spoken: the text as it was handed over, piece by piece.
        self.spoken: list[list[str]] = []

    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, Any]
    ) -> tts.TtsAudioType:
        """The whole message at once."""
        self.spoken.append([message])
        return "mp3", message.encode()


class StreamingSpeechStandIn(SpeechStandIn):
    """A TTS engine that takes the text as it is written, as Home Assistant's cloud TTS does."""

    def async_supports_streaming_input(self) -> bool:
        """Let the pipeline stream the agent's answer in."""
        return True

    async def async_stream_tts_audio(self, request: TTSAudioRequest) -> TTSAudioResponse:
        """Each piece of text as it arrives."""
        pieces: list[str] = []
        self.spoken.append(pieces)

        async def audio() -> AsyncGenerator[bytes]:
            async for piece in request.message_gen:
                pieces.append(piece)
                yield piece.encode()

        return TTSAudioResponse("mp3", audio())


async def setup_speech(hass: HomeAssistant, engine: SpeechStandIn) -> str:
    """The TTS engine as an integration's entity, the way Home Assistant's own tests add one."""

    async def setup_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
        await hass.config_entries.async_forward_entry_setups(entry, [Platform.TTS])
        return True

    async def setup_tts(
        hass: HomeAssistant, entry: ConfigEntry, add_entities: AddEntitiesCallback
    ) -> None:
        add_entities([engine])

    mock_integration(hass, MockModule(TTS_DOMAIN, async_setup_entry=setup_entry))
    mock_platform(hass, f"{TTS_DOMAIN}.tts", MockPlatform(async_setup_entry=setup_tts))
    mock_platform(hass, f"{TTS_DOMAIN}.config_flow", MockPlatform())
    entry = MockConfigEntry(domain=TTS_DOMAIN)
    entry.add_to_hass(hass)
    with mock_config_flow(TTS_DOMAIN, ConfigFlow):
        assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert engine.entity_id is not None
    return engine.entity_id


class Satellite:
    """Runs text-in pipelines the way the websocket API and satellites start them."""

    def __init__(self, hass: HomeAssistant, azure: AzureStub) -> None:
        self.hass = hass
        self.azure = azure

    async def run(self, text: str, conversation_id: str | None) -> list[PipelineEvent]:
        events: list[PipelineEvent] = []
        run = PipelineRun(
            self.hass,
            context=Context(),
            pipeline=async_get_pipeline(self.hass),
            start_stage=PipelineStage.INTENT,
            end_stage=PipelineStage.TTS,
            event_callback=events.append,
        )
        with chat_session.async_get_chat_session(self.hass, conversation_id) as session:
            pipeline_input = PipelineInput(run=run, session=session, intent_input=text)
            await pipeline_input.validate()
            await pipeline_input.execute()
        assert events[0].type == PipelineEventType.RUN_START
        assert events[-1].type == PipelineEventType.RUN_END
        assert not [e.data for e in events if e.type == PipelineEventType.ERROR]
        return events


def only(events: list[PipelineEvent], kind: PipelineEventType) -> dict[str, Any]:
    (data,) = [e.data or {} for e in events if e.type == kind]
    return data


def streamed_text(events: list[PipelineEvent]) -> list[str]:
    """The answer's pieces, as the pipeline reported them while the agent streamed."""
    return [
        delta["content"]
        for e in events
        if e.type == PipelineEventType.INTENT_PROGRESS
        and (delta := (e.data or {}).get("chat_log_delta", {})).get("content")
    ]


def spoken(events: list[PipelineEvent]) -> str:
    speech: str = only(events, PipelineEventType.INTENT_END)["intent_output"]["response"]["speech"][
        "plain"
    ]["speech"]
    return speech


def chat_turns(body: dict[str, Any]) -> list[tuple[str, str]]:
    """User and assistant texts a Chat Completions request carried, in order."""
    return [
        (m["role"], m["content"])
        for m in body["messages"]
        if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str)
    ]


async def converse_twice(
    hass: HomeAssistant, azure: AzureStub, entry: MockConfigEntry, speech_engine: str
) -> tuple[list[PipelineEvent], list[PipelineEvent]]:
    """Two turns of one conversation, our agent as the pipeline's conversation engine, the
    clock standing still."""
    await async_update_pipeline(
        hass,
        async_get_pipeline(hass),
        conversation_engine=agent_entity_id(hass, entry),
        conversation_language=MATCH_ALL,
        tts_engine=speech_engine,
        tts_language="en",
        prefer_local_intents=True,
    )
    satellite = Satellite(hass, azure)
    azure.queue(Reply(text=FIRST_ANSWER), Reply(text=SECOND_ANSWER))
    first = await satellite.run(FIRST, None)
    conversation_id = only(first, PipelineEventType.INTENT_END)["intent_output"]["conversation_id"]
    second = await satellite.run(SECOND, conversation_id)

    assert spoken(first) == FIRST_ANSWER
    assert spoken(second) == SECOND_ANSWER
    assert only(second, PipelineEventType.RUN_START)["conversation_id"] == conversation_id
    # The model was asked twice; the second request carried the first exchange.
    first_request, second_request = azure.calls("/chat/completions")
    assert first_request.body is not None
    assert second_request.body is not None
    clock_notes = [("user", note) for note in ASSIST_CLOCK_NOTES]
    assert chat_turns(first_request.body) == [*clock_notes, ("user", FIRST)]
    assert chat_turns(second_request.body) == [
        ("user", FIRST),
        ("assistant", FIRST_ANSWER),
        *clock_notes,
        ("user", SECOND),
    ]
    for events, answer in ((first, FIRST_ANSWER), (second, SECOND_ANSWER)):
        # The pipeline saw the answer arrive word by word, before the intent stage ended.
        pieces = streamed_text(events)
        assert len(pieces) == len(answer.split(" "))
        assert "".join(pieces) == answer
        assert only(events, PipelineEventType.TTS_START)["tts_input"] == answer
    return first, second


async def fetch_audio(client: Any, events: list[PipelineEvent]) -> str:
    """What a satellite does with tts_output.url from run-start: play what it streams."""
    response = await client.get(only(events, PipelineEventType.RUN_START)["tts_output"]["url"])
    assert response.status == 200
    audio: bytes = await response.read()
    return audio.decode()


@pytest.fixture
async def pipeline_ready(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Assist pipeline (with stt, tts, wake_word); spoken answers cached under tmp_path."""
    # TTS keeps a file cache in the config directory, which the test harness shares
    # between runs; a cached answer would never reach the engine again.
    monkeypatch.setattr(tts, "DEFAULT_CACHE_DIR", str(tmp_path / "tts"))
    assert await async_setup_component(hass, "assist_pipeline", {})


async def test_pipeline_conversation_without_streaming(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    azure: AzureStub,
    loaded_entry: MockConfigEntry,
    pipeline_ready: None,
    hass_client_no_auth: ClientSessionGenerator,
) -> None:
    """TTS that takes whole messages: it gets each answer once the agent has finished."""
    engine = SpeechStandIn()
    first, second = await converse_twice(
        hass, azure, loaded_entry, await setup_speech(hass, engine)
    )
    client = await hass_client_no_auth()
    for events, answer in ((first, FIRST_ANSWER), (second, SECOND_ANSWER)):
        progress = [e.data or {} for e in events if e.type == PipelineEventType.INTENT_PROGRESS]
        assert not [data for data in progress if "tts_start_streaming" in data]
        if PIPELINE_STREAMS_TO_TTS:
            tts_output = only(events, PipelineEventType.RUN_START)["tts_output"]
            assert tts_output["stream_response"] is False
        assert await fetch_audio(client, events) == answer
    assert engine.spoken == [[FIRST_ANSWER], [SECOND_ANSWER]]


@pytest.mark.skipif(
    not PIPELINE_STREAMS_TO_TTS,
    reason="Home Assistant 2025.4's pipeline does not stream an agent's text into TTS",
)
async def test_pipeline_conversation_streaming_to_tts(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    azure: AzureStub,
    loaded_entry: MockConfigEntry,
    pipeline_ready: None,
    hass_client_no_auth: ClientSessionGenerator,
) -> None:
    """TTS that takes streamed text: it speaks the answer while the agent is still writing."""
    engine = StreamingSpeechStandIn()
    first, second = await converse_twice(
        hass, azure, loaded_entry, await setup_speech(hass, engine)
    )
    client = await hass_client_no_auth()
    for events, answer in ((first, FIRST_ANSWER), (second, SECOND_ANSWER)):
        tts_output = only(events, PipelineEventType.RUN_START)["tts_output"]
        assert tts_output["stream_response"] is True
        kinds = [
            "tts_start_streaming" if (e.data or {}).get("tts_start_streaming") else e.type.value
            for e in events
        ]
        # The pipeline started speaking before the agent's turn ended.
        assert kinds.index("tts_start_streaming") < kinds.index(PipelineEventType.INTENT_END.value)
        assert await fetch_audio(client, events) == answer
    # Each answer reached TTS in pieces: what had arrived when speaking began, then each word.
    assert ["".join(pieces) for pieces in engine.spoken] == [FIRST_ANSWER, SECOND_ANSWER]
    for pieces in engine.spoken:
        assert len(pieces) > 1


async def test_pipeline_that_tried_locally_is_not_second_guessed(
    hass: HomeAssistant, azure: AzureStub, loaded_entry: MockConfigEntry, pipeline_ready: None
) -> None:
    """The pipeline prefers local commands but leaves questions to an agent that controls the
    home; the agent does not answer them locally behind its back, and adds no attempt of its own."""
    hass.states.async_set("light.kitchen", "on", {"friendly_name": "Kitchen light"})
    await async_update_pipeline(
        hass,
        async_get_pipeline(hass),
        conversation_engine=agent_entity_id(hass, loaded_entry),
        conversation_language=MATCH_ALL,
        prefer_local_intents=True,
    )
    azure.queue(Reply(text="Yes, the kitchen light is on."))
    events: list[PipelineEvent] = []
    run = PipelineRun(
        hass,
        context=Context(),
        pipeline=async_get_pipeline(hass),
        start_stage=PipelineStage.INTENT,
        end_stage=PipelineStage.INTENT,
        event_callback=events.append,
    )
    with chat_session.async_get_chat_session(hass, None) as session:
        pipeline_input = PipelineInput(
            run=run, session=session, intent_input="is the kitchen light on"
        )
        await pipeline_input.validate()
        await pipeline_input.execute()
    assert spoken(events) == "Yes, the kitchen light is on."
    assert len(azure.calls("/chat/completions")) == 1
