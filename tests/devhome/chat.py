"""Talk to the agent scripts/develop set up, through /api/conversation/process.

  scripts/chat "turn on the kitchen light"   one line, then exit
  scripts/chat                               one line after another

The conversation id is kept between runs; --new starts a new id (within 30 minutes the
agent still continues the same speaker's window; conversation_reset empties it).
"""

import argparse
from pathlib import Path
import sys

from .client import HomeAssistantClient, HomeAssistantError, spoken
from .home import read_agent, read_conversation, read_token, write_conversation


def main() -> int:
    """Send each line, print the answer, keep the conversation id."""
    parser = argparse.ArgumentParser(
        prog="scripts/chat",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("text", nargs="*", help="what to say; nothing: interactive")
    parser.add_argument("--url", default="http://127.0.0.1:8123")
    parser.add_argument("--config", type=Path, default=Path("config"))
    parser.add_argument("--agent", help="conversation entity (default: scripts/develop's)")
    parser.add_argument("--new", action="store_true", help="start a new conversation id")
    args = parser.parse_args()

    token = read_token(args.config)
    agent = args.agent or read_agent(args.config)
    if not token or not agent:
        print("No development instance found: run scripts/develop first.", file=sys.stderr)
        return 1
    client = HomeAssistantClient(args.url, token)
    conversation_id = "" if args.new else read_conversation(args.config)

    def say(text: str) -> None:
        nonlocal conversation_id
        answer = client.converse(text, agent, conversation_id or None)
        conversation_id = str(answer.get("conversation_id") or conversation_id)
        write_conversation(args.config, conversation_id)
        print(spoken(answer), flush=True)

    try:
        if args.text:
            say(" ".join(args.text))
            return 0
        print(f"Talking to {agent} (empty line or Ctrl-D ends).", flush=True)
        while True:
            try:
                line = input("you> ").strip()
            except EOFError:
                return 0
            if not line:
                return 0
            say(line)
    except HomeAssistantError as err:
        print(f"Home Assistant refused: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(
            f"Home Assistant at {args.url} does not answer ({err}): is scripts/develop running?",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
