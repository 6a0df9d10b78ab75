import sys

from minigpt.cli.signals import heard_from_the_start
from minigpt.errors import Interrupted

heard_from_the_start()  # before the command line's imports: a signal while they load is one line too
try:
    from minigpt.cli.main import run
except Interrupted as stopped:
    print(f"minigpt: {stopped}", file=sys.stderr)
    sys.exit(stopped.exit_code)

run()
