"""The demo home of config/configuration.yaml loads on every supported Home Assistant.

The end-to-end suite runs it as a real process only where hass accepts the Python; this
proves the same YAML in-process on every version, with the package scripts/develop writes
for the version (the front door lock), without a configuration error, and with the entity
ids scripts/develop's set-up puts in areas.
"""

import logging
from pathlib import Path
import shutil

from homeassistant import config as conf_util
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
import pytest

from .devhome.home import DEMO_AREAS
from .devhome.packages import write_packages

CONFIG = Path(__file__).parents[1] / "config" / "configuration.yaml"
DEMO_DOMAINS = ("input_boolean", "template", "light", "switch", "lock", "climate")


async def load_demo_home(hass: HomeAssistant) -> None:
    """The entities scripts/develop's Home Assistant has: its configuration.yaml and the
    packages it writes, copied to hass's config folder, read as hass reads them at start."""
    config_dir = Path(hass.config.config_dir)
    await hass.async_add_executor_job(shutil.copy, CONFIG, config_dir / CONFIG.name)
    await hass.async_add_executor_job(write_packages, config_dir)
    config = await conf_util.async_hass_config_yaml(hass)
    for domain in DEMO_DOMAINS:
        assert await async_setup_component(hass, domain, config), domain
    await hass.async_block_till_done()


async def test_demo_home_loads_and_lights_switch(
    hass: HomeAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="homeassistant"):
        await load_demo_home(hass)
    errors = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name.startswith("homeassistant")
    ]
    assert errors == []

    registry = er.async_get(hass)
    demo = {
        e.unique_id: e.entity_id for e in registry.entities.values() if e.unique_id in DEMO_AREAS
    }
    assert demo == {
        "dev_kitchen_light": "light.kitchen_light",
        "dev_coffee_maker": "switch.coffee_maker",
        "dev_living_room_lamp": "light.living_room_lamp",
        "dev_heater": "switch.heater",
        "dev_living_room_thermostat": "climate.living_room_thermostat",
        "dev_living_room_temperature": "sensor.living_room_temperature",
        "dev_bedroom_light": "light.bedroom_light",
        "dev_front_door": "lock.front_door",
        "dev_outdoor_humidity": "sensor.outdoor_humidity",
    }
    kitchen = hass.states.get("light.kitchen_light")
    assert kitchen is not None
    assert (kitchen.state, kitchen.name) == ("off", "Kitchen light")
    lock = hass.states.get("lock.front_door")
    assert lock is not None
    assert lock.state == "locked"
    temperature = hass.states.get("sensor.living_room_temperature")
    assert temperature is not None
    assert temperature.state == "20.5"

    await hass.services.async_call(
        "light", "turn_on", {"entity_id": "light.kitchen_light"}, blocking=True
    )
    await hass.async_block_till_done()
    kitchen = hass.states.get("light.kitchen_light")
    assert kitchen is not None
    assert kitchen.state == "on"
