"""The `network` kind: streaming throughput from one environment to another over tcp or udp, and
what it costs the two ends in CPU time."""
