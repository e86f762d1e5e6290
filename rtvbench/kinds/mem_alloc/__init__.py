"""The `mem-alloc` kind: allocation and first-touch cost per size, and TLB misses."""
