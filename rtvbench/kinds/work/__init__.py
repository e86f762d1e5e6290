"""The `work` kind: self-verifying CPU workloads (MiBench-, Dhrystone-, Whetstone-, Linpack-class)."""
