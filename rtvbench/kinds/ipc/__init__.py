"""The `ipc` kind: ping-pong round trips by transport and message size, in one environment or
between two."""
