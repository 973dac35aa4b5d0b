"""Make the Home Assistant that scripts/develop started ready to chat, and say how to.

python -m tests.devhome [--url http://127.0.0.1:8123] [--config config]
    [--stand-in http://127.0.0.1:8124]
"""

import argparse
from pathlib import Path
import sys

from .client import HomeAssistantError
from .home import DEV_PASSWORD, DEV_USER, ResourceSettings, prepare

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--url", default="http://127.0.0.1:8123")
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
  scripts/chat "turn on the kitchen light"      answered locally by Home Assistant
  scripts/chat "what did I just ask?"           goes to the model, with the conversation so far
  scripts/chat                                  talk interactively

Logs: {args.config / "home-assistant.log"}. Ctrl-C stops Home Assistant{" and the stand-in" if resource.is_stand_in else ""}.""",
    flush=True,
)
