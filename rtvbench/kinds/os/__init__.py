"""The `os` kind: costs of OS primitives (syscalls, signals, process creation, page faults, files,
context switch, pipe and socket latency and bandwidth), in LMbench's families."""
