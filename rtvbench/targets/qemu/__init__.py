"""The `qemu` target: guests rtvbench boots itself, with the probe as their /init
(docs/targets/qemu.md), and everything that makes their images.

    target.py     the Target (registers "qemu"): campaign keys, booting, commands in a guest
    guest.py      one QEMU process's life: boot, watch, lose, power off
    channel.py    the agent protocol client over the guest's virtio-serial port
    kvm.py        whether KVM can run a guest here
    initramfs.py  the guest's initramfs: the probe as /init and the kernel modules it needs
    kmod.py       kernel modules' .modinfo and bytes, for initramfs.py and kernels.py
    kernels.py    `rtvbench kernel fetch`: Debian's kernels through a private apt state
"""

from rtvbench.targets.qemu.target import QemuParams, QemuTarget  # registers "qemu"

__all__ = ["QemuParams", "QemuTarget"]
