"""Run the stand-in: python -m tests.azure_stub [--port 8124] [--key KEY] [--echo].

It answers as scripts/develop's stand-in (context count, turn-on/off tool calls);
--echo makes it the plain echo that scripted tests see when nothing is queued.
"""

import argparse
import asyncio
import contextlib

from .server import DEFAULT_KEY, serve_forever

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=8124)
parser.add_argument("--key", default=DEFAULT_KEY)
parser.add_argument("--echo", action="store_true", help="only echo, no develop answers")
args = parser.parse_args()
with contextlib.suppress(KeyboardInterrupt):
    asyncio.run(serve_forever(args.host, args.port, args.key, develop_mode=not args.echo))
