"""The `network` kind with a real TCG x86_64 guest (`network = true`): a tcp stream host -> guest and a
udp stream guest -> host at 1 Mbit/s, through the bridge in the run's own network namespace, in one
campaign of one boot.

Ground truth: the probe's own accounting (tcp: every byte sent arrived and was checked; udp: the
datagrams sent against those received, from their sequence numbers). Under TCG the guest's CPU is
emulated, so its rates are not a property of anything but this machine at this moment: the test
holds them only to being there (a rate > 0, tcp loses nothing) and the udp stream to its pace
(1 Mbit/s is a datagram every 11 ms, which even an emulated NIC keeps up with: loss < 50 %,
rate within a factor 2 of the target). Both ways at once (`bidir`) the host's and the guest's probes
each check every byte the other sent, and a zero-loss search from the guest runs its trials against
the host's receiver, whatever loss each has.
"""

from __future__ import annotations

import json
import time

import pytest

from host_helpers import cli_env, run_cli
from test_network_kind import bench
from test_qemu_network import _needs_network, _net_kernel


def _campaign(kernel) -> str:
    return f'''
name = "net-guest"
seed = 4
[environments.native]
target = "local"
[environments.g1]
target = "qemu"
arch = "x86_64"
kernel = "{kernel}"
accel = "tcg"
network = true
''' + bench("to_g1", "g1", duration_s=1, size=16384) \
        + bench("to_native", "native", transport="udp", rate_bps=1_000_000, duration_s=1) \
        + bench("both_g1", "g1", duration_s=1, size=16384, bidir=True) \
        + bench("search_native", "native", transport="udp", rate_bps=1_000_000, search_steps=3, duration_s=0.5)


@pytest.fixture(scope="module")
def guest_run(probe, tmp_path_factory):
    _needs_network()
    kernel = _net_kernel()
    tmp = tmp_path_factory.mktemp("netguest")
    (tmp / "c.toml").write_text(_campaign(kernel))
    started = time.monotonic()
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp / "r.json").read_text())
    return doc, time.monotonic() - started


def _figures(doc: dict, env: str, bench: str) -> tuple[dict, list[str]]:
    [m] = [m for m in doc["measurements"] if m["environment"] == env and m["benchmark"] == bench]
    assert m["status"] == "ok", m.get("error")
    return m["figures"], m["command"]


def test_host_to_guest_tcp_and_guest_to_host_udp(guest_run):
    doc, elapsed = guest_run
    tcp, argv = _figures(doc, "native", "to_g1")
    assert argv[:3] == ["ip", "netns", "exec"] and argv[5:7] == ["network", "--connect"]
    udp, argv = _figures(doc, "g1", "to_native")
    assert argv[:3] == ["/init", "network", "--connect"]
    print(f"TCG guest, {elapsed:.0f} s: host -> guest tcp {tcp['rate_bps'] / 1e6:.1f} Mbit/s (sender CPU "
          f"{tcp['sender_cpu_percent']:.0f} %, receiver {tcp['receiver_cpu_percent']:.0f} %); guest -> host udp "
          f"{udp['rate_bps'] / 1e6:.3f} Mbit/s at 1 Mbit/s, {udp['loss_percent']:.1f} % lost")
    assert tcp["rate_bps"] > 0 and "loss_percent" not in tcp
    assert udp["loss_percent"] < 50
    assert 0.5e6 < udp["rate_bps"] < 2e6
    # The guest's own loopback (the peer's cell) streams too.
    loop, _ = _figures(doc, "g1", "to_g1")
    assert loop["rate_bps"] > 0


def test_both_ways_at_once_and_a_zero_loss_search_between_host_and_guest(guest_run):
    doc, _ = guest_run
    both, argv = _figures(doc, "native", "both_g1")
    assert "--bidir" in argv
    assert both["rate_Mbps"] > 0 and both["reverse_rate_Mbps"] > 0
    assert both["sum_rate_Mbps"] == pytest.approx(both["rate_Mbps"] + both["reverse_rate_Mbps"])
    search, argv = _figures(doc, "g1", "search_native")
    assert argv[:3] == ["/init", "network", "--connect"] and "--search-steps" in argv
    print(f"TCG guest: host <-> guest tcp {both['rate_Mbps']:.1f} + {both['reverse_rate_Mbps']:.1f} Mbit/s; "
          "guest -> host search: " + ", ".join(f"{search[f'step{n}.offered_Mbps']:g} Mbit/s "
                                               f"{search[f'step{n}.loss_percent']:.1f} %"
                                               for n in (1, 2, 3) if f"step{n}.offered_Mbps" in search))
    assert search["step1.offered_Mbps"] == 1.0
    if search["step1.loss_percent"] == 0:
        assert search["zero_loss_Mbps"] == 1.0 and "step2.offered_Mbps" not in search
    else:
        assert search["step2.offered_Mbps"] == 0.5
