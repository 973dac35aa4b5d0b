"""The demo home's front door lock, in the format the installed Home Assistant takes.

config/configuration.yaml includes every file of its folder's packages/ (git-ignored):
scripts/develop and the end-to-end suite write the lock there before Home Assistant starts.
The template integration's `template:` section takes a lock in 2026.2 and 2026.10; 2025.4
takes one only as `lock: - platform: template`, which 2026.10 refuses. Which one this Home
Assistant takes is asked of its template integration, not read from its version number.

python -m tests.devhome.packages CONFIG_FOLDER
"""

import argparse
from pathlib import Path

LOCK_FILE = Path("packages") / "front_door.yaml"

MODERN_LOCK = """\
template:
  - lock:
      - name: Front door
        unique_id: dev_front_door
        state: "{{ is_state('input_boolean.front_door_locked', 'on') }}"
        lock:
          action: input_boolean.turn_on
          target:
            entity_id: input_boolean.front_door_locked
        unlock:
          action: input_boolean.turn_off
          target:
            entity_id: input_boolean.front_door_locked
"""

LEGACY_LOCK = """\
lock:
  - platform: template
    name: Front door
    unique_id: dev_front_door
    value_template: "{{ is_state('input_boolean.front_door_locked', 'on') }}"
    lock:
      action: input_boolean.turn_on
      target:
        entity_id: input_boolean.front_door_locked
    unlock:
      action: input_boolean.turn_off
      target:
        entity_id: input_boolean.front_door_locked
"""


def template_section_takes_locks() -> bool:
    """Whether the installed template integration's `template:` section accepts `lock:`."""
    from homeassistant.components.template.config import CONFIG_SECTION_SCHEMA

    try:
        CONFIG_SECTION_SCHEMA({"lock": []})
    except Exception:  # voluptuous's Invalid; probatio's from 2026.10 on
        return False
    return True


def write_packages(config: Path) -> Path:
    """The lock's package in config's packages/, for the Home Assistant installed here."""
    path = config / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MODERN_LOCK if template_section_takes_locks() else LEGACY_LOCK)
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("config", type=Path, help="the folder Home Assistant runs on")
    write_packages(parser.parse_args().config)
