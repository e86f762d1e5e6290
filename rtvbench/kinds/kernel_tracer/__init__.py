"""The `kernel-tracer` kind: the kernel's timerlat (IRQ and thread latency) or osnoise (time lost to
hardware, NMIs, interrupts, softirqs and threads) tracer, summarised per CPU."""
