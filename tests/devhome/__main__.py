"""Make the Home Assistant that scripts/develop started ready to chat, and say how to.

python -m tests.devhome [--url http://127.0.0.1:8123] [--config config]
    [--stand-in http://127.0.0.1:8124]
"""

import argparse
import os
from pathlib import Path
import shlex
import sys
from urllib.parse import urlsplit

from .client import HomeAssistantError
from .home import DEV_PASSWORD, DEV_USER, ResourceSettings, prepare

# The port scripts/develop and scripts/chat use without DEVELOP_PORT.
DEFAULT_PORT = 8123


def chat_command(url: str, config: Path, ha: str = "") -> str:
    """scripts/chat as it must be typed to reach this instance, so that it can be copied.

    scripts/chat picks its instance by DEVELOP_PORT and that instance's folder by
    DEVELOP_CONFIG, config/port-N on another port than 8123: a variable is named only
    where its default would miss this instance. DEVELOP_HA, given to scripts/develop, is
    named too: scripts/chat runs in the same venv.
    """
    port = urlsplit(url).port or DEFAULT_PORT
    settings = [f"DEVELOP_HA={shlex.quote(ha)}"] if ha else []
    if port != DEFAULT_PORT:
        settings.append(f"DEVELOP_PORT={port}")
    folder = Path("config") if port == DEFAULT_PORT else Path("config") / f"port-{port}"
    if config != folder:
        settings.append(f"DEVELOP_CONFIG={shlex.quote(str(config))}")
    return " ".join([*settings, "scripts/chat"])


def chat_hints(command: str) -> str:
    """Ways to talk to the agent, what each shows in a column of its own."""
    hints = [
        (f'{command} "turn on the kitchen light"', "answered locally by Home Assistant"),
        (f'{command} "what did I just ask?"', "goes to the model, with the conversation so far"),
        (command, "talk interactively"),
    ]
    width = max(len(line) for line, _ in hints) + 6
    return "\n".join(f"  {line.ljust(width)}{shows}" for line, shows in hints)


parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--url", default=f"http://127.0.0.1:{DEFAULT_PORT}")
parser.add_argument("--config", type=Path, default=Path("config"))
parser.add_argument("--stand-in", default="http://127.0.0.1:8124")
args = parser.parse_args()

resource = ResourceSettings.from_environment(args.stand_in)
try:
    home = prepare(args.url, args.config, resource, say=lambda line: print(f"  - {line}"))
except HomeAssistantError as err:
    print(f"Could not make Home Assistant ready: {err}", file=sys.stderr)
    sys.exit(1)

model = "the offline stand-in" if resource.is_stand_in else f"Azure ({resource.endpoint})"
print(
    f"""
Home Assistant is ready at {args.url}
  user:      {DEV_USER}
  password:  {DEV_PASSWORD}
  token:     {args.config / ".dev-token"} (for scripts and curl)
  agent:     {home.agent_id}, on {model}, the agent of the default Assist pipeline

Try:
{chat_hints(chat_command(args.url, args.config, os.environ.get("DEVELOP_HA", "")))}

Logs: {args.config / "home-assistant.log"}. Ctrl-C stops Home Assistant{" and the stand-in" if resource.is_stand_in else ""}.""",
    flush=True,
)
