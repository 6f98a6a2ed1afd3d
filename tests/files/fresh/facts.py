"""Run as ``python -I -m tests.files.fresh.facts [args] [--sleep S] [--exit N]`` (or forked by the judge's
fresh-process zygote): prints what the process is, as JSON, and says hello on stderr."""
import json
import os
import sys
import time

if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
import numpy  # noqa: E402
import tensorflow  # noqa: E402,F401  (as the savedmodel worker does: its import sets a few variables)

from autograder.forking import runtime_started  # noqa: E402

started = runtime_started()

print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), "isolated": sys.flags.isolated,
                  "path": sys.path, "main": sys.modules["__main__"].__file__, "runtime_started": started,
                  "random": int(numpy.random.randint(1 << 30)), "own_session": os.getsid(0) == os.getpid(),
                  "fds": sorted(os.listdir("/proc/self/fd"))}))
print("hello from the fresh process", file=sys.stderr)
if "--exit" in sys.argv:
    raise SystemExit(int(sys.argv[sys.argv.index("--exit") + 1]))
