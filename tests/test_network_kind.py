"""The `network` benchmark kind in a campaign: local <-> local over 127.0.0.1 (the receiver started in
`peer` before each measurement, the sender pointed at the port it chose), the figures, the report's
section and JSON; the campaign errors of its keys.

Ground truth as in tests/test_probe_network.py: tcp loses nothing, and a udp stream paced at
10 Mbit/s over loopback arrives at 10 Mbit/s (within 5 %) with (almost) nothing lost. A zero-loss
search whose ceiling is 5 Mbit/s ends at its first trial, which loses nothing, and the report says
that the limit is that ceiling or above.
"""

from __future__ import annotations

import html
import json
import re
import pytest

from host_helpers import cli_env, processes_with, run_cli, run_report

def bench(name: str, peer: str, **keys) -> str:
    """A `network` benchmark's table in a campaign."""
    return f'[benchmarks.{name}]\nkind = "network"\npeer = "{peer}"\n' + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


CAMPAIGN = ('name = "net-local"\nseed = 2\n[environments.native]\ntarget = "local"\n'
            '[environments.partner]\ntarget = "local"\n'
            + bench("tcp", "partner", duration_s=1, size=65536)
            + bench("udp", "partner", transport="udp", rate_bps=10_000_000, duration_s=1)
            + bench("both", "partner", duration_s=1, bidir=True)
            + bench("search", "partner", transport="udp", rate_bps=5_000_000, search_steps=4, duration_s=0.3))


@pytest.fixture(scope="module")
def local_run(probe, tmp_path_factory) -> tuple[dict, str]:
    tmp = tmp_path_factory.mktemp("netkind")
    (tmp / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    for fmt in ("md", "csv"):
        out = run_cli("report", "--store", "sqlite:///s.db", "--format", fmt, "-o", f"r.{fmt}", cwd=tmp,
                      env=cli_env(probe))
        assert out.returncode == 0, out.stderr
    global OTHER_FORMATS
    OTHER_FORMATS = {fmt: (tmp / f"r.{fmt}").read_text() for fmt in ("md", "csv")}
    return json.loads((tmp / "r.json").read_text()), run_report(r)


#: the Markdown and CSV reports of the module's run (written by local_run)
OTHER_FORMATS: dict[str, str] = {}


def _cell(doc: dict, env: str, bench: str) -> dict:
    [m] = [m for m in doc["measurements"] if m["environment"] == env and m["benchmark"] == bench]
    assert m["status"] == "ok", m.get("error")
    return m


def test_tcp_between_two_local_environments(local_run):
    doc, _ = local_run
    m = _cell(doc, "native", "tcp")
    argv = m["command"]
    assert argv[1:3] == ["network", "--connect"] and argv[3].startswith("127.0.0.1:")
    assert argv[argv.index("--size") + 1] == "65536"
    f = m["figures"]
    assert f["rate_bps"] > 0 and f["rate_Mbps"] == pytest.approx(f["rate_bps"] / 1e6)
    assert "loss_percent" not in f
    assert 0 < f["sender_cpu_percent"] <= 101 and 0 < f["receiver_cpu_percent"] <= 101
    # No server is left behind.
    assert processes_with("network --serve") == []


def test_udp_between_two_local_environments(local_run):
    doc, _ = local_run
    for env in ("native", "partner"):            # partner: its own loopback
        f = _cell(doc, env, "udp")["figures"]
        assert abs(f["rate_bps"] / 10e6 - 1) < 0.05, f
        assert f["loss_percent"] < 5, f


def test_report_has_a_table_per_cell(local_run):
    doc, page = local_run
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for bench in ("tcp", "udp"):
        for env in ("native", "partner"):
            assert f"{bench}: {env} under idle, each repetition" in text
    assert "rate at the receiver" in text and "Mbit/s" in text
    assert "A one-way udp stream from this environment to a receiver in partner" in text
    assert doc["benchmarks"]["udp"]["kind"] == "network"


def test_bidir_has_both_directions_and_their_sum(local_run):
    doc, _ = local_run
    m = _cell(doc, "native", "both")
    assert "--bidir" in m["command"]
    f = m["figures"]
    assert f["rate_Mbps"] > 0 and f["reverse_rate_Mbps"] > 0
    assert f["sum_rate_Mbps"] == pytest.approx(f["rate_Mbps"] + f["reverse_rate_Mbps"])


def test_a_search_has_its_result_and_every_trial_in_every_format(local_run):
    doc, page = local_run
    m = _cell(doc, "native", "search")
    argv = m["command"]
    assert argv[argv.index("--search-steps") + 1] == "4"
    f = m["figures"]
    # The ceiling lost nothing: the search ended there.
    assert f["zero_loss_Mbps"] == f["step1.offered_Mbps"] == 5.0 and f["search_resolution_Mbps"] == 0
    assert f["zero_loss_kpps"] == pytest.approx(5e6 / (8 * 1400) / 1e3) == f["step1.offered_kpps"]
    assert f["step1.loss_percent"] == 0 and "step2.offered_Mbps" not in f
    assert not {"rate_bps", "loss_percent", "sender_cpu_percent"} & set(f)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    md, csv = OTHER_FORMATS["md"], OTHER_FORMATS["csv"]
    for report in (text, md):
        assert "search: the zero-loss search, each trial" in report
        assert "highest rate without loss" in report and "5.00 Mbit/s" in report and "0.446 kpps" in report
        assert ("search in native under idle: the ceiling (rate_bps) lost nothing in 1 repetition(s), so "
                "the highest rate without loss is that ceiling or above it") in report.replace("`", "")
        assert "both directions" in report and "rate back from the peer" in report
    for figure, unit in (("zero_loss_Mbps", "Mbit/s"), ("zero_loss_kpps", "kpps"), ("step1.offered_Mbps", "Mbit/s"),
                         ("step1.loss_percent", "%"), ("sum_rate_Mbps", "Mbit/s"), ("reverse_rate_Mbps", "Mbit/s")):
        assert re.search(rf",{re.escape(figure)},[0-9.e+-]+,{re.escape(unit)}$", csv, re.M), figure
    assert doc["benchmarks"]["search"]["kind"] == "network"


BASE = '''
name = "bad"
[environments.native]
target = "local"
[benchmarks.stream]
kind = "network"
'''


@pytest.mark.parametrize("keys,expected", [
    ('transport = "tcp"', "c.toml:5: benchmarks.stream.peer: is required"),
    ('peer = "board"', 'c.toml:7: benchmarks.stream.peer: environment "board" is not defined (defined: "native")'),
    ('peer = "native"\ntransport = "udp"', "udp needs rate_bps (bits per second)"),
    ('peer = "native"\nrate_bps = 1000000', "rate_bps paces udp only"),
    ('peer = "native"\ntransport = "udp"\nrate_bps = 1000000\nsize = 65508', "a udp datagram is 65507 bytes at most"),
    ('peer = "native"\ntransport = "sctp"', "benchmarks.stream.transport"),
    ('peer = "native"\ntransport = "udp"\nrate_bps = 1000000\nbidir = true', "bidir is a tcp session"),
    ('peer = "native"\nsearch_steps = 3', "search_steps searches the highest udp pace without loss"),
    ('peer = "native"\ntransport = "udp"\nrate_bps = 1000000\nsearch_steps = 31', "benchmarks.stream.search_steps"),
])
def test_bad_keys_are_campaign_errors(tmp_path, probe, keys, expected):
    (tmp_path / "c.toml").write_text(BASE + keys + "\n")
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr, r.stderr


def test_validate_refuses_a_peer_that_run_could_not_reach(tmp_path, probe):
    (tmp_path / "vmlinuz").write_bytes(b"\0" * 64)
    (tmp_path / "c.toml").write_text(BASE + 'peer = "native"\n[environments.guest]\ntarget = "qemu"\n'
                                     'arch = "x86_64"\nkernel = "vmlinuz"\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    assert "benchmarks.stream.peer: environment guest is a qemu guest without a network" in r.stderr, r.stderr


def test_a_requirement_on_tcp_loss_is_refused(tmp_path, probe):
    (tmp_path / "c.toml").write_text(BASE + 'peer = "native"\n[[requirements]]\nmetric = "stream.loss_percent"\n'
                                     'max = 1\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2 and "is a udp figure" in r.stderr, r.stderr


@pytest.mark.parametrize("keys,metric,expected", [
    ('transport = "udp"\nrate_bps = 1000000\nsearch_steps = 3', "stream.rate_bps", "is a figure of a single stream"),
    ('transport = "udp"\nrate_bps = 1000000', "stream.zero_loss_Mbps", "is a figure of the zero-loss search"),
    ('transport = "udp"\nrate_bps = 1000000', "stream.step2.loss_percent", "is a figure of the zero-loss search"),
    ('transport = "tcp"', "stream.sum_rate_Mbps", "is a figure of a session in both directions"),
])
def test_a_requirement_on_a_figure_the_benchmark_cannot_have_is_refused(tmp_path, probe, keys, metric, expected):
    (tmp_path / "c.toml").write_text(BASE + f'peer = "native"\n{keys}\n[[requirements]]\nmetric = "{metric}"\n'
                                     'min = 1\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2 and expected in r.stderr, r.stderr
