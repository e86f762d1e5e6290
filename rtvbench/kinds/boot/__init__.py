"""The `boot` kind: a qemu environment's guest switched off and booted again, each repetition one cold
boot, in phases (QEMU and firmware, kernel, init) until its probe answers."""
