"""The `rtos` kind: per-operation costs of RTOS-like primitives (task activation, semaphores, mutexes, message
queues, signals, yield, timer) under a fixed-priority policy, min/avg/p99/max per primitive."""
