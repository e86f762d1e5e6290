"""What a target can do beyond running commands (targets/capabilities.py): each target kind has the
capabilities its code implements, an ssh board can power-cycle only with a reboot_command, and the
campaign check refuses an environment without a capability that a benchmark kind or a load requires,
in that capability's words, naming the environment."""

from __future__ import annotations

import pytest

from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.targets import capabilities
from rtvbench.targets.capabilities import HostCost, OwnedKernel, Pausing, PowerCycling, ProcessListing
from rtvbench.targets.labgrid_place import LabgridTarget
from rtvbench.targets.local import LocalParams, LocalTarget
from rtvbench.targets.qemu.target import QemuNeighbour, QemuTarget
from rtvbench.targets.ssh import SshParams, SshTarget

pytestmark = pytest.mark.functional


def test_each_target_kind_has_what_its_code_implements():
    has = {cls.kind if cls is not QemuNeighbour else "qemu neighbour":
           {c.__name__ for c in (PowerCycling, ProcessListing, HostCost, Pausing, OwnedKernel) if issubclass(cls, c)}
           for cls in (LocalTarget, SshTarget, QemuTarget, QemuNeighbour, LabgridTarget)}
    assert has == {"local": {"ProcessListing"}, "ssh": {"PowerCycling", "ProcessListing"},
                   "qemu": {"PowerCycling", "HostCost", "Pausing", "OwnedKernel"}, "qemu neighbour": {"PowerCycling"},
                   "labgrid": {"PowerCycling", "ProcessListing"}}


def test_what_a_target_lacks_is_said_as_what_it_is():
    local = LocalTarget("native", LocalParams())
    assert capabilities.missing(local, PowerCycling) == "a local target"
    assert capabilities.missing(local, ProcessListing) is None
    assert capabilities.host_usage(local) is None          # nothing of this machine's is a guest's
    board = SshTarget("board", SshParams(host="board.example"))
    assert capabilities.missing(board, PowerCycling) == "a ssh target without reboot_command"
    rebooted = SshTarget("board", SshParams(host="board.example", reboot_command="sudo reboot"))
    assert capabilities.missing(rebooted, PowerCycling) is None


def test_a_load_that_power_cycles_an_environment_of_the_campaign_is_refused():
    with pytest.raises(CampaignError) as e:
        parse_campaign('name = "d"\n[environments.native]\ntarget = "local"\n[environments.other]\ntarget = "local"\n'
                       '[loads.restarts]\nkind = "disrupt"\nwhere = "other"\n'
                       '[benchmarks.w]\nkind = "latency"\nduration_s = 1\n', "d.toml")
    (issue,) = [i for i in e.value.issues if "restarts" in str(i)]
    assert 'environment "other" is measured under this load too' in issue.message, issue


def test_a_benchmark_that_power_cycles_is_refused_on_a_board_without_reboot_command():
    with pytest.raises(CampaignError) as e:
        parse_campaign('name = "b"\n[environments.board]\ntarget = "ssh"\nhost = "board.example"\n'
                       '[benchmarks.boot]\nkind = "boot"\n', "b.toml")
    assert any('"boot" needs to power-cycle every environment it measures, and environment "board" is a ssh '
               "target without reboot_command, which rtvbench cannot power-cycle" in i.message
               for i in e.value.issues), e.value.issues
