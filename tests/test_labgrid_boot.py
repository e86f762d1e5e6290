"""The `boot` kind on a labgrid place: the fake board of tests/helpers/fake_board.py (a test sshd
with a boot_id and an uptime of its own) behind the lab's `rest` power switch
(tests/helpers/labgrid_lab.py), switched off and on by rtvbench once per repetition.

Ground truth: the board is off for power_off_s (OFF_S) and its sshd listens KERNEL_S after it is
switched on, with its kernel clock started at the switch-on: the first login comes at least
OFF_S + KERNEL_S after the switch-off was asked for, and the kernel's start OFF_S after it (plus
what the switch takes to answer)."""

from __future__ import annotations

import getpass
import json

import pytest

from helpers import fake_board
from helpers.labgrid_lab import Lab, PowerSwitch, power_port
from helpers.sshd import available as sshd_available
from host_helpers import cli_env, run_cli
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.ssh
OFF_S, KERNEL_S = 0.5, 0.5
SLACK_S = 1.5       # two switch requests, the login poll, sessions on a loaded 2-core machine
PLACE = "rtvb-boot-place"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, probe):
    why = sshd_available() or fake_board.available()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("lab")
    board = fake_board.FakeBoard(root / "board", kernel_s=KERNEL_S).start()
    board.switch_off()                  # a board starts switched off
    power = PowerSwitch(board.switch_on, board.switch_off)
    lab = Lab(root, "board:\n  NetworkService:\n    address: 127.0.0.1\n"
                    f"    username: {getpass.getuser()}\n    port: {board.sshd.port}\n" + power_port(power))
    board.sshd.write_client_config(root / "ssh_config", alias="127.0.0.1")
    lab.board, lab.power = board, power
    try:
        lab.start()
        lab.add_place(PLACE, "board")
        yield lab
    finally:
        lab.stop()
        power.close()
        board.stop()


def test_a_boot_campaign_power_cycles_the_place_and_times_each_boot(lab, tmp_path, probe):
    (tmp_path / "c.toml").write_text(f'''name = "lgboot"
repetitions = 2
[environments.board]
target = "labgrid"
coordinator = "{lab.address}"
place = "{PLACE}"
ssh_config = "{lab.root / "ssh_config"}"
workdir = "{lab.board.workdir}"
power_off_s = {OFF_S}
boot_timeout_s = 20
[benchmarks.boot]
kind = "boot"
''')
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path,
                env=cli_env(probe), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Run 1 of lgboot finished: 2 of 2 measurements ok." in r.stdout, r.stdout
    assert lab.power.log == ["on", "off", "on", "off", "on"], lab.power.log
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    ids = set()
    for s, res in fake_board.boots(run, "labgrid boot"):
        assert 0 < s["down"] < 0.5, s                     # the switch's answer to "off"
        assert OFF_S + KERNEL_S <= s["login"] < OFF_S + KERNEL_S + SLACK_S, s
        assert s["login"] <= s["total"] < s["login"] + 3.0, s
        assert OFF_S - 0.02 <= s["to_kernel"] < OFF_S + SLACK_S, s
        assert res["probe_redeployed"] is True, res       # the power cut emptied its /tmp
        ids.add(res["boot_id"])
    assert len(ids) == 2 and lab.board.boot_id in ids
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {"total_ms", "down_ms", "login_ms", "to_kernel_ms"} <= \
        {s["figure"] for s in doc["summaries"] if s["benchmark"] == "boot"}
