"""The `qemu` target: guests rtvbench boots itself, with the probe as their /init
(docs/targets/qemu.md), and everything that makes their images.

    environment.py  registers "qemu": a Linux guest, or a bare-metal partition with `image`
    target.py       the Linux guest's Target: campaign keys, booting, commands in a guest
    partition.py    the bare-metal image's Target: QEMU's stdio as its serial line
    image.py        what an image's header says, and the keys of a bare-metal partition
    guest.py        one QEMU process's life: boot, watch, lose, power off
    channel.py      the agent protocol client over the guest's virtio-serial port
    kvm.py          whether KVM can run a guest here
    initramfs.py    the guest's initramfs: the probe as /init and the kernel modules it needs
    kmod.py         kernel modules' .modinfo and bytes, for initramfs.py and kernels.py
    kernels.py      `rtvbench kernel fetch`: Debian's kernels through a private apt state
"""

from rtvbench.targets.qemu.environment import QemuEnvironment  # registers "qemu"
from rtvbench.targets.qemu.target import QemuParams, QemuTarget

__all__ = ["QemuEnvironment", "QemuParams", "QemuTarget"]
