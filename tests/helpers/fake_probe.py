#!/usr/bin/env python3
"""A stand-in for rtvb-probe that misbehaves on purpose (FAKE_PROBE_MODE):

  garbage  latency prints meta, then a line that is not JSON
  schema2  every subcommand declares schema 2
  exit1    latency prints meta, then exits 1 with a message on stderr
  error    latency ends with end.status = "error"
  hostile:<line>  latency prints meta, then <line> as its result, then end
  linger   latency prints its records and end, then ignores SIGTERM and never exits
  hang     latency prints meta, then sleeps without an end
sysinfo works normally unless the mode is schema2.
"""

import json
import os
import signal
import sys
import time

mode = os.environ.get("FAKE_PROBE_MODE", "")
sub = sys.argv[1] if len(sys.argv) > 1 else ""


def emit(**record):
    print(json.dumps(record), flush=True)


emit(type="meta", schema=2 if mode == "schema2" else 1, probe_version="fake", subcommand=sub,
     arch="x86_64", pid=os.getpid(), start_time="2024-01-01T00:00:00Z", start_realtime_ns=0,
     argv=sys.argv[1:], params={}, privileges={})
if sub == "sysinfo":
    emit(type="sysinfo", hostname="fake")
    emit(type="end", status="ok", elapsed_ns=1)
    sys.exit(0)
if mode == "garbage":
    print("Segmentation fault (core dumped)", flush=True)
    sys.exit(0)
if mode == "exit1":
    print("rtvb-probe latency: cannot lock memory.", file=sys.stderr)
    sys.exit(1)
if mode.startswith("hostile:"):
    print(mode[len("hostile:"):], flush=True)
    emit(type="end", status="ok", elapsed_ns=1)
    sys.exit(0)
if mode == "hang" and sub == "latency":
    time.sleep(600)
    sys.exit(0)
emit(type="result", cpu="all", count=1, min_ns=1, max_ns=1)
if mode == "error":
    emit(type="end", status="error", elapsed_ns=1, error="clock_nanosleep failed: Invalid argument")
else:
    emit(type="end", status="ok", elapsed_ns=1)
if mode == "linger" and sub == "latency":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
