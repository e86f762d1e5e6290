"""The `ssh` target: a machine reached with the system's OpenSSH client.

    target.py      the Target (registers "ssh"): commands, describe, close, delegating the rest
    params.py      the campaign keys (SshAccess, which the labgrid target shares, and SshParams)
    connection.py  the master connection every command shares: ssh's command lines, connecting
                   and its errors, short commands, what ssh says of the host
    session.py     streamed commands under the remote wrapper, in the foreground or as loads
    wrapper.py     that wrapper: the sh script the remote login shell runs
    deploy.py      the probe's copy on the board, and the copies killed runners left
    power.py       rebooting the board and timing its boot
"""

from rtvbench.targets.ssh.connection import _alive
from rtvbench.targets.ssh.params import SshAccess, SshParams
from rtvbench.targets.ssh.power import boot_phases
from rtvbench.targets.ssh.session import STOP_GRACE_S, SshBackground
from rtvbench.targets.ssh.target import SshTarget  # registers "ssh"

__all__ = ["STOP_GRACE_S", "SshAccess", "SshBackground", "SshParams", "SshTarget", "_alive", "boot_phases"]
