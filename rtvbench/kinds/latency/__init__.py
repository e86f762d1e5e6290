"""The `latency` kind: timer wake-up latency and jitter per CPU (cyclictest's method), with an
optional work budget for response times and deadline misses."""
