"""Guests with `network = true`: ipc round trips host <-> guest and guest <-> guest through the bridge
in the run's own network namespace, with real TCG x86_64 guests (two in one campaign, one more for
the SIGKILL test); the namespace's life (there during the run, gone after it, gone after the runner
is SIGKILLed, swept when its keeper was killed too); no interface appears on the host; the campaign
errors that name the key to set.

Ground truth: the probe's own integrity check (`verified`: every byte of every round trip came back
as sent) and its count (every requested round trip measured); an address outside the namespace
could not be reached at all, since nothing routes into it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from host_helpers import cli_env, processes_with, run_cli, start_cli, wait_for
from rtvbench.campaign.reader import parse_campaign
from rtvbench.errors import RtvbenchError, TargetError
from rtvbench.targets.qemu import netns

# The timeout is a hang guard: the campaign boots two TCG guests, which takes minutes on a loaded machine.
pytestmark = [pytest.mark.functional, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "kernels"
COUNT = 200
ADDRESS = re.compile(r"10\.\d+\.\d+\.(\d+)")
# Hang guards only: TCG guests boot in seconds on a quiet machine, in a minute or more on a busy one.
GUARDS = "boot_timeout_s = 600\nhang_timeout_s = 120\n"


def _net_kernel() -> Path:
    """The x86_64 kernel of kernels/, fetched again when it was fetched without virtio_net."""
    image = KERNELS / "x86_64" / "vmlinuz"
    if not image.is_file() or not any((image.parent / "modules").rglob("virtio_net.ko*")):
        if shutil.which("apt-get") is None:
            pytest.skip("no kernel with virtio_net in kernels/ and no apt-get to fetch one")
        from rtvbench.targets.qemu.kernels import fetch
        try:
            image = fetch("x86_64", False, KERNELS)
        except RtvbenchError as e:
            pytest.skip(f"cannot fetch an x86_64 kernel: {e}")
    return image


def _needs_network() -> None:
    why = netns.problem()
    if why:
        pytest.skip(why)
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 is not installed")


def _ours(runner: int | None = None) -> set[str]:
    """The network namespaces of rtvbench runs (of the runner with that pid): `rtvb-<pid>-<hex>`.
    Tests running beside these ones may have namespaces of their own, also named rtvb-..."""
    names = {line.split()[0] for line in _ip("netns", "list").splitlines()}
    return {n for n in names
            if re.fullmatch(rf"rtvb-{runner if runner is not None else '[0-9]+'}-[0-9a-f]+", n)}


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def _host_links() -> list[str]:
    # Names and kinds, not counters or states: what an interface created or moved here would change.
    return sorted(line.split()[0] for line in _ip("-br", "link").splitlines())


def _campaign(kernel: Path, count: int, guests: int = 2) -> str:
    envs = "".join(f'''
[environments.g{i}]
target = "qemu"
arch = "x86_64"
kernel = "{kernel}"
accel = "tcg"
network = true
{GUARDS}''' for i in range(1, guests + 1))
    # Each benchmark is measured in every environment: to_g1 from the host and from g2 (tcp), to_native
    # from each guest (udp); the peer's own cell is its loopback.
    benches = "".join(f'[benchmarks.{name}]\nkind = "ipc"\npeer = "{peer}"\ntransports = ["{transport}"]\n'
                      f"sizes = {sizes}\ncount = {count}\n"
                      for name, peer, transport, sizes in (("to_g1", "g1", "tcp", [16, 1024]),
                                                           ("to_native", "native", "udp", [16])))
    return f'name = "net"\nseed = 3\n[environments.native]\ntarget = "local"\n{envs}\n{benches}'


@pytest.fixture(scope="module")
def network_run(probe, tmp_path_factory):
    """One campaign: a local environment and two guests; each benchmark is measured in all three,
    so host -> guest (tcp), guest -> host (udp) and guest -> guest (tcp) are all there."""
    _needs_network()
    kernel = _net_kernel()
    tmp = tmp_path_factory.mktemp("net")
    (tmp / "c.toml").write_text(_campaign(kernel, COUNT))
    links = _host_links()
    started = time.monotonic()
    proc = start_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json",
                     cwd=tmp, env=cli_env(probe))
    seen: dict[str, str] = {}
    try:
        # A hang guard: the whole campaign takes well under a minute on a quiet machine.
        while proc.poll() is None and time.monotonic() - started < 900:
            for name in _ours(proc.pid):
                # The bridge and one tap per guest, all inside the namespace (the last look at it).
                try:
                    seen[name] = _ip("-n", name, "-br", "link")
                except subprocess.CalledProcessError:
                    pass
            time.sleep(0.25)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    doc = json.loads((tmp / "r.json").read_text())
    db = sqlite3.connect(tmp / "s.db")
    results = {}
    for mid, data in db.execute("select measurement_id, data from records where type = 'result'"):
        results.setdefault(mid, []).append(json.loads(data))
    db.close()
    return {"doc": doc, "results": results, "seen": seen, "links": links,
            "after": _ours(proc.pid), "links_after": _host_links(), "elapsed": elapsed}


def _cell(run: dict, environment: str, benchmark: str) -> tuple[dict, list[dict]]:
    [m] = [m for m in run["doc"]["measurements"]
           if m["environment"] == environment and m["benchmark"] == benchmark]
    assert m["status"] == "ok", m.get("error")
    return m, run["results"][m["id"]]


def _check(records: list[dict], transport: str, sizes: list[int]) -> list[dict]:
    assert sorted(r["size_bytes"] for r in records) == sizes
    for r in records:
        assert r["transport"] == transport and r["verified"] is True and r["complete"] is True, r
        assert r["count"] == COUNT, r
        # Round trips, not a unit mix-up: under TCG one through the emulated NIC costs tens of
        # microseconds to milliseconds. The median, not the maximum: on a busy machine a single round
        # trip may wait long for the vCPUs of both ends to be scheduled.
        assert 0 < r["min_ns"] <= r["p50_ns"] <= r["max_ns"] and r["p50_ns"] < 1e9, r
    return records


def test_host_to_guest_tcp_runs_inside_the_namespace(network_run):
    m, records = _cell(network_run, "native", "to_g1")
    argv = m["command"]
    # The host's end joins the guests' namespace; it reaches the guest at its address there.
    assert argv[:3] == ["ip", "netns", "exec"] and argv[3] in network_run["seen"]
    assert argv[5:7] == ["ipc", "--connect"]
    host = argv[7].rpartition(":")[0]
    assert ADDRESS.fullmatch(host) and host.rsplit(".", 1)[1] != "1"
    _check(records, "tcp", [16, 1024])


def test_guest_to_host_udp_reaches_the_bridge(network_run):
    m, records = _cell(network_run, "g1", "to_native")
    assert m["command"][:3] == ["/init", "ipc", "--connect"]
    host = m["command"][3].rpartition(":")[0]
    assert ADDRESS.fullmatch(host).group(1) == "1"          # the bridge: the host's end
    _check(records, "udp", [16])


def test_guest_to_guest_tcp(network_run):
    m, records = _cell(network_run, "g2", "to_g1")
    host = m["command"][3].rpartition(":")[0]
    native, _ = _cell(network_run, "native", "to_g1")
    # g2 reaches g1 at the very address the host does, on the same bridge.
    assert host == native["command"][7].rpartition(":")[0]
    _check(records, "tcp", [16, 1024])
    # The peer's own cells: loopback in the guest and on the host, nothing through the namespace.
    assert _cell(network_run, "g1", "to_g1")[0]["command"][3].startswith("127.0.0.1:")
    assert _cell(network_run, "native", "to_native")[0]["command"][0] != "ip"


def test_the_namespace_lives_as_long_as_the_run(network_run):
    [(name, links)] = network_run["seen"].items()
    assert re.fullmatch(r"rtvb-\d+-[0-9a-f]{6}", name)
    names = sorted(line.split()[0].split("@")[0] for line in links.splitlines())
    assert names == ["lo", netns.BRIDGE, "rtvbtap2", "rtvbtap3"], links
    assert network_run["after"] == set()
    # Nothing was created on (or moved to) the host's side.
    assert network_run["links_after"] == network_run["links"]
    # The run waited for its namespace's keeper to end (the keeper's command line names the namespace).
    assert processes_with(name) == []
    print(f"network campaign: {network_run['elapsed']:.1f} s")


def test_a_sigkilled_runner_leaves_no_namespace(probe, tmp_path):
    _needs_network()
    (tmp_path / "c.toml").write_text(_campaign(_net_kernel(), 10**6, guests=1))
    links = _host_links()
    proc = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    try:
        # Hang guards: a CLI start and a TCG guest's start take seconds, more on a busy machine.
        [name] = wait_for(lambda: _ours(proc.pid), 120, "the run's network namespace")
        # The guest is on its way (QEMU started inside the namespace): the worst moment to die.
        [qemu] = wait_for(lambda: _children(proc.pid, "qemu-system-x86_64"), 120, "QEMU")
        assert os.readlink(f"/proc/{qemu}/ns/net") != os.readlink("/proc/self/ns/net")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    # Each goes as soon as the runner is gone; the limits are hang guards for a busy machine.
    wait_for(lambda: name not in _ours(), 60, f"namespace {name} to be deleted")
    wait_for(lambda: not processes_with(name), 60, "the namespace's keeper to end")
    wait_for(lambda: not Path(f"/proc/{qemu}").exists() or "Z" in _state(qemu), 60, "QEMU to end")
    assert _host_links() == links


def _children(parent: int, marker: str) -> list[int]:
    found = []
    for pid in processes_with(marker):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent:
            found.append(pid)
    return found


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat[stat.rindex(")") + 2]


def test_namespaces_of_dead_runners_are_swept():
    """When the keeper died with its runner (both SIGKILLed at once), the next run's set-up deletes
    the namespace; one whose runner lives is left alone."""
    _needs_network()
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone, live = f"rtvb-{dead.pid}-abcdef", f"rtvb-{os.getpid()}-abcdef"
    try:
        for name in (gone, live):
            _ip("netns", "add", name)
        assert netns.sweep() == [gone]
        assert live in _ours() and gone not in _ours()
    finally:
        for name in (gone, live):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def _validate(tmp_path: Path, probe, text: str) -> subprocess.CompletedProcess:
    (tmp_path / "vmlinuz").write_bytes(b"\0" * 64)
    (tmp_path / "c.toml").write_text(text)
    return run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))


GUEST = '''
name = "v"
[environments.native]
target = "local"
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "vmlinuz"
{keys}
[benchmarks.rtt]
kind = "ipc"
peer = "{peer}"
{bench}
'''


def test_validate_accepts_a_guest_with_network_and_names_the_key_without(tmp_path, probe):
    r = _validate(tmp_path, probe, GUEST.format(keys="network = true", peer="native", bench=""))
    assert r.returncode == 0, r.stderr
    r = _validate(tmp_path, probe, GUEST.format(keys="", peer="guest", bench=""))
    assert r.returncode == 2
    assert ("benchmarks.rtt.peer: environment guest is a qemu guest without a network, so it cannot do round "
            "trips with environment native; set `network = true` in environment guest") in r.stderr, r.stderr
    r = _validate(tmp_path, probe, GUEST.format(keys="network = true", peer="guest", bench='transports = ["vsock"]'))
    assert r.returncode == 2
    assert ('transport "vsock" does not cross between environments: rtvbench gives guests no vhost-vsock device'
            in r.stderr), r.stderr


def test_without_root_one_sentence_names_the_fix(monkeypatch, tmp_path):
    (tmp_path / "vmlinuz").write_bytes(bytes(0x202) + b"HdrS" + bytes(64))
    c = parse_campaign(GUEST.format(keys="network = true", peer="native", bench=""), "c.toml", tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    # Before anything is built or booted, and nothing is left behind (by this process: tests beside
    # this one may add and delete namespaces of their own meanwhile).
    before = _ours(os.getpid()) if shutil.which("ip") else set()
    with pytest.raises(TargetError) as e:
        c.environments["guest"].deploy_probe()
    assert str(e.value) == ("environment guest: network = true needs root (a network namespace, a bridge and tap "
                            "devices are created for the guests); run rtvbench as root, e.g. with sudo, or drop "
                            "`network`.")
    assert (_ours(os.getpid()) if shutil.which("ip") else set()) == before
