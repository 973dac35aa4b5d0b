"""Who is speaking: the request's user, else the device's mapped person, else nobody."""

from homeassistant.core import Context, HomeAssistant
from pytest_homeassistant_custom_component.common import MockUser

from custom_components.azure_openai_memory.people.access import access
from custom_components.azure_openai_memory.people.speakers import (
    HOUSEHOLD,
    SYSTEM,
    Speaker,
    async_caller,
    async_speaker,
)

from ..conftest import add_people

SATELLITE = "kitchen-satellite-device-id"


async def test_the_request_s_user_is_the_speaker(
    hass: HomeAssistant, hass_admin_user: MockUser, hass_read_only_user: MockUser
) -> None:
    admin, user = hass_admin_user, hass_read_only_user
    await add_people(hass, admin, user, {"id": "cleo", "name": "Cleo"})
    ben = await async_speaker(hass, user.id, SATELLITE, {SATELLITE: "anna"})
    assert ben == Speaker("ben", "Ben", user.id, False, False, SATELLITE)
    assert ben.scope == "person:ben"
    assert access(ben).memory_scopes() == frozenset({HOUSEHOLD, "person:ben"})
    assert not access(ben).reads("person:anna")
    anna = await async_speaker(hass, admin.id, None, {})
    assert (anna.person_id, anna.channel, access(anna).memory_scopes()) == ("anna", "app", None)


async def test_a_mapped_device_acts_as_its_person_with_that_person_s_permissions(
    hass: HomeAssistant, hass_admin_user: MockUser, hass_read_only_user: MockUser
) -> None:
    admin, user = hass_admin_user, hass_read_only_user
    await add_people(hass, admin, user, {"id": "cleo", "name": "Cleo"})
    mapped = {SATELLITE: "ben", "office": "cleo"}
    assert await async_speaker(hass, None, SATELLITE, mapped) == Speaker(
        "ben", "Ben", user.id, False, False, SATELLITE
    )
    # A person without a login sees the household and their own memories.
    cleo = await async_speaker(hass, None, "office", mapped)
    assert (cleo.person_id, cleo.user_id, cleo.is_admin) == ("cleo", None, False)
    assert access(cleo).memory_scopes() == frozenset({HOUSEHOLD, "person:cleo"})
    nobody = await async_speaker(hass, None, "garage", mapped)
    assert nobody == Speaker(channel="garage")
    assert access(nobody).memory_scopes() == frozenset({HOUSEHOLD})


async def test_a_call_without_a_user_is_the_system(
    hass: HomeAssistant, hass_read_only_user: MockUser
) -> None:
    user = hass_read_only_user
    assert await async_caller(hass, Context()) is SYSTEM
    assert access(SYSTEM).memory_scopes() is None
    caller = await async_caller(hass, Context(user_id=user.id))
    assert (caller.person_id, access(caller).memory_scopes()) == (None, frozenset({HOUSEHOLD}))
