"""The `mem-lat` kind: dependent-load latency over working-set sizes, and the cache levels read
off the curve."""
