"""The `mem-bw` kind: memory bandwidth of six operations over buffer sizes and threads."""
