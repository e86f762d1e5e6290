"""The `command` kind and `rtvbench import` with the real tools (Debian's cyclictest, hyperfine,
stress-ng, openssl, iperf3; scripts/setup.sh installs them): each tool runs briefly, its results go
through `rtvbench run` (kind = "command", local target) or `rtvbench import`, and the stored figures
are checked against the numbers the tool prints itself in its other output form, or recomputed from
its raw numbers. rtla cannot run on a kernel without the timerlat and osnoise tracers: its parsers
are checked on summaries written by hand in the layout of rtla's manual pages (fixtures/command).
Network traffic stays on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shutil
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from host_helpers import cli_env, run_cli, wait_for
from rtvbench.analysis.metrics import known_figure
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.cli import main
from rtvbench.kinds.command.formats import FormatError, parse
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.functional

FIXTURES = Path(__file__).parent / "fixtures" / "command"
STORE = "sqlite:///s.db"


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/setup.sh installs them)")


def records(tmp_path: Path, measurement_id: int, kind: str) -> list[dict]:
    with sqlite3.connect(tmp_path / "s.db") as db:
        rows = db.execute("SELECT data FROM records WHERE measurement_id = ? AND type = ? ORDER BY seq",
                          (measurement_id, kind)).fetchall()
    return [json.loads(r[0]) for r in rows]


def figures_of(tmp_path: Path, run_id: int) -> dict[str, dict[str, float]]:
    """benchmark -> its stored figures, of the run's measurements that are ok."""
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), run_id)
    out = {}
    for m in run.measurements:
        assert m.status == "ok", (m.benchmark, m.error)
        [result] = m.results
        out[m.benchmark] = result["figures"]
    return out


# -- rtvbench run: the tools as measured benchmarks ----------------------------------------------

CYCLICTEST_SUMMARY = re.compile(r"^T:\s*(\d+).*C:\s*(\d+)\s+Min:\s*(\d+)\s+Act:\s*\d+\s+Avg:\s*(\d+)\s+Max:\s*(\d+)",
                                re.MULTILINE)
DURATION_S, INTERVAL_US = 1, 1000

def campaign(name: str, benchmarks: dict[str, dict], requirements: list[dict] = (),
             conditions: dict[str, float] | None = None) -> str:
    """A campaign of command benchmarks on this machine: name -> keys, `figures` a list of tables."""
    lines = [f"name = {json.dumps(name)}"]
    if conditions:
        lines += ["[conditions]"] + [f"{k} = {json.dumps(v)}" for k, v in conditions.items()]
    lines += ["[environments.native]", 'target = "local"']
    for req in requirements:
        lines += ["[[requirements]]"] + [f"{k} = {json.dumps(v)}" for k, v in req.items()]
    for bench, keys in benchmarks.items():
        lines += [f"[benchmarks.{bench}]", 'kind = "command"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items() if k != "figures"]
        for figure in keys.get("figures", []):
            lines += [f"[[benchmarks.{bench}.figures]]"] + [f"{k} = {json.dumps(v)}" for k, v in figure.items()]
    return "\n".join(lines) + "\n"


HYPERFINE = "hyperfine -N -r 3 --style none 'sleep 0.01' --export-json {output}"
SHA_REGEX = r"^\+F:\d+:sha256:([0-9.]+)"
RUN_CAMPAIGN = campaign("tools", {
    "sleep": {"command": HYPERFINE, "format": "hyperfine-json", "timeout_s": 60},
    "wakeup": {"command": f"cyclictest -D{DURATION_S} -i{INTERVAL_US} -q --json={{output}}",
               "format": "cyclictest-json", "timeout_s": 60},
    "sha": {"command": "openssl speed -seconds 1 -bytes 64 -mr sha256", "format": "mapping",
            "figures": [{"name": "sha256_64B", "regex": SHA_REGEX, "unit": "B/s", "direction": "higher"}]},
    "sleep_mean": {"command": HYPERFINE, "format": "mapping", "figures": [
        {"name": "mean_s", "json_path": "results[0].mean", "unit": "s", "direction": "lower"},
        {"name": "first_s", "json_path": "results[0].times[0]", "unit": "s", "direction": "lower"}]},
},
    # Requirements that the tools' figures meet however busy the machine is (a 10 ms sleep cannot average
    # a minute under a 60 s timeout; openssl hashes something; cyclictest wakes at least once), and
    # condition limits that cannot be exceeded: the CPU time of other processes, or a hypervisor's
    # steal, on a shared machine would otherwise make a verdict INCONCLUSIVE. Whether requirements
    # are judged on the tools' figures is the point here, not how fast this machine is.
    requirements=[{"metric": "sleep.sleep_0_01.mean_ms", "max": 60000}, {"metric": "sha.sha256_64B", "min": 1},
                  {"metric": "wakeup.count", "min": 1}],
    conditions={"max_foreign_percent": 100, "max_steal_percent": 100})


def test_tools_run_as_command_benchmarks(tmp_path, probe):
    need("hyperfine", "cyclictest", "openssl")
    (tmp_path / "c.toml").write_text(RUN_CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", STORE, cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 0, r.stderr
    assert "Run 1 of tools finished: 4 of 4 measurements ok." in r.stdout
    # The requirements on the tools' figures were judged (exit 0: all passed).
    assert "3 PASS, 0 FAIL, 0 INCONCLUSIVE" in r.stdout, r.stdout
    figs = figures_of(tmp_path, 1)
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    by_bench = {m.benchmark: m for m in run.measurements}
    # What ran: the command with {output} replaced by a file in /tmp, under `timeout`; the file is gone.
    cmd = by_bench["sleep"].command
    assert cmd[:4] == ["timeout", "-k", "5", "60"] and cmd[4] == "hyperfine" and cmd[-1].startswith("/tmp/rtvbench-output-") and cmd[-1].endswith("/output")
    assert not Path(cmd[-1]).exists()

    # hyperfine: the figures are its file's numbers (stored verbatim), in ms; 10 ms sleeps.
    [out] = records(tmp_path, by_bench["sleep"].id, "output")
    own = json.loads(out["file"])["results"][0]
    f = figs["sleep"]
    assert f["sleep_0_01.mean_ms"] == pytest.approx(own["mean"] * 1e3)
    assert f["sleep_0_01.min_ms"] <= f["sleep_0_01.mean_ms"] <= f["sleep_0_01.max_ms"]
    assert f["sleep_0_01.mean_ms"] >= 10                # sleeps of 10 ms: never shorter, longer when busy
    assert f["sleep_0_01.runs"] == 3
    assert sum(own["times"]) / 3 * 1e3 == pytest.approx(f["sleep_0_01.mean_ms"])

    # cyclictest: the JSON file's figures equal the summary line it printed on stdout (the average
    # there cut to whole us); the count is at most duration / interval (fewer on a loaded machine).
    [out] = records(tmp_path, by_bench["wakeup"].id, "output")
    [line] = CYCLICTEST_SUMMARY.findall(out["stdout"])
    thread, count, lo, avg, hi = (int(x) for x in line)
    f = figs["wakeup"]
    cpu = json.loads(out["file"])["thread"]["0"]["cpu"]
    assert (f["count"], f["min_us"], f["max_us"]) == (count, lo, hi)
    assert (f[f"cpu{cpu}.count"], f[f"cpu{cpu}.max_us"]) == (count, hi)
    # The summary line cuts the average to whole us, the JSON file rounds it to hundredths: an average
    # of 69.996 us is 69 in one and 70.00 in the other (seen beside stress-ng). At most 1 us apart.
    assert 0 <= f["avg_us"] - avg <= 1
    assert f["max_us"] >= f["avg_us"] >= f["min_us"]
    expected = DURATION_S * 1e6 / INTERVAL_US
    assert 1 <= f["count"] <= 1.02 * expected

    # mapping, regex: the same number the +F line holds, also recomputed from openssl's +R lines
    # (operations done in the seconds measured, of 64 bytes each).
    [out] = records(tmp_path, by_bench["sha"].id, "output")
    plus_f = float(re.search(SHA_REGEX, out["stdout"], re.MULTILINE).group(1))
    assert figs["sha"]["sha256_64B"] == plus_f
    ops, seconds = re.search(r"^\+R:(\d+):sha256:([0-9.]+)", out["stdout"] + out["stderr"], re.MULTILINE).groups()
    assert figs["sha"]["sha256_64B"] == pytest.approx(int(ops) * 64 / float(seconds), rel=1e-3)
    assert figs["sha"] == parse("mapping", out["stdout"], [
        {"name": "sha256_64B", "regex": SHA_REGEX, "unit": "B/s", "direction": "higher"}]).figures
    assert parse("openssl-speed", out["stdout"]).figures["sha256.64B.bytes_per_s"] == plus_f

    # mapping, json_path: hyperfine's mean and first run, in seconds.
    [out] = records(tmp_path, by_bench["sleep_mean"].id, "output")
    own = json.loads(out["file"])["results"][0]
    assert figs["sleep_mean"] == {"mean_s": own["mean"], "first_s": own["times"][0]}
    assert figs["sleep_mean"]["mean_s"] >= 0.01

    # The report has the kind's tables, with the units and directions the records carry.
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.analysis.kind import get_kind
    ev = evaluate_run(run)
    kind = get_kind("command")
    assert kind.unit("sleep_0_01.mean_ms") == "ms" and kind.lower_is_better("sleep_0_01.mean_ms")
    assert kind.unit("sha256_64B") == "B/s" and not kind.lower_is_better("sha256_64B")
    assert ev.summary("native", "idle", "wakeup", "max_us").median == hi


FAILING_CAMPAIGN = campaign("failing", {
    "exits": {"command": "sh -c 'echo partial; echo something broke >&2; exit 3'", "format": "hyperfine-json"},
    "unparsable": {"command": "echo no json here", "format": "hyperfine-json"},
    "hangs": {"command": "sleep 3600", "format": "hyperfine-json", "timeout_s": 0.5},
    "nofile": {"command": "true {output}", "format": "hyperfine-json"},
    "regex": {"command": "echo value: none", "format": "mapping",
              "figures": [{"name": "value", "regex": "value: ([0-9.]+)"}]},
})


def test_failures_are_failed_measurements_with_one_sentence(tmp_path, probe):
    (tmp_path / "c.toml").write_text(FAILING_CAMPAIGN)
    # The hung command sleeps for an hour: that the run ends at all (within run_cli's guard, far above
    # what five short measurements take on a busy machine) says it was stopped at its timeout_s.
    r = run_cli("run", "c.toml", "--store", STORE, cwd=tmp_path, env=cli_env(probe), timeout=300)
    assert r.returncode == 3, r.stderr                # no measurement succeeded
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    errors = {m.benchmark: (m.status, m.error) for m in run.measurements}
    assert errors == {
        "exits": ("error", "the command exited with status 3: something broke"),
        "unparsable": ("error", "hyperfine-json: the output is not JSON (Expecting value at line 1); "
                                "expected the file hyperfine --export-json FILE writes."),
        "hangs": ("error", "the command did not end within timeout_s = 0.5 s; `timeout` sent it SIGTERM"),
        "nofile": ("error", errors["nofile"][1]),
        "regex": ("error", "mapping: regex value: ([0-9.]+) of figure value matches nothing in the output."),
    }
    assert errors["nofile"][1].startswith("the command ended without writing its output file /tmp/rtvbench-output-")
    # The output is kept even when it could not be read, to be read again.
    m = next(m for m in run.measurements if m.benchmark == "exits")
    [out] = records(tmp_path, m.id, "output")
    assert (out["stdout"], out["returncode"]) == ("partial\n", 3) and "something broke" in out["stderr"]


@pytest.mark.parametrize("table, message", [
    ('command = "no-such-tool-xyz --json={output}"\nformat = "cyclictest-json"',
     'benchmarks.t.command: in environment native: program "no-such-tool-xyz" is not found on PATH'),
    ('command = "true"\nformat = "junit"', "benchmarks.t.format: "),
    ('command = "true"\nformat = "mapping"', 'format = "mapping" needs figures'),
    ('command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\nregex = "(a)(b)"',
     "must have exactly one capture group"),
    ('command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\njson_path = "a..b"',
     "is not a JMESPath expression"),
    ('command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\njson_path = "end.sum-sent.bytes"',
     """benchmarks.t.figures[0].json_path: is read as JMESPath, where a key that is not an identifier """
     """is quoted: write it 'end."sum-sent".bytes'"""),
    ('command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\nregex = "(a)"\njson_path = "a"',
     "needs exactly one of regex and json_path"),
    ('command = "true"\nformat = "iperf3-json"\n[[requirements]]\nmetric = "t.mean_ms"\nmax = 1',
     '"mean_ms" is not a figure format "iperf3-json" yields'),
])
def test_validation_says_what_is_wrong(table, message):
    text = f'name = "v"\n[environments.native]\ntarget = "local"\n[benchmarks.t]\nkind = "command"\n{table}\n'
    with pytest.raises(CampaignError) as e:
        parse_campaign(text, "c.toml", known_figure=known_figure)
    assert e.value.exit_code == 2
    [line] = e.value.issue_lines()
    assert message in line, line


def test_a_qemu_guest_cannot_run_a_tool(tmp_path):
    (tmp_path / "k").write_bytes(b"\0" * 16)
    text = ('name = "v"\n[environments.native]\ntarget = "local"\n[environments.vm]\ntarget = "qemu"\n'
            'arch = "x86_64"\nkernel = "k"\n[benchmarks.t]\nkind = "command"\ncommand = "true"\n'
            'format = "hyperfine-json"\n')
    with pytest.raises(CampaignError) as e:
        parse_campaign(text, "c.toml", tmp_path)
    [line] = e.value.issue_lines()
    assert line.startswith('c.toml:10: benchmarks.t.command: in environment vm: program "true" cannot run in a '
                           "qemu guest: its initramfs holds only rtvb-probe"), line


# -- rtvbench import: results made elsewhere -----------------------------------------------------

def import_cli(tmp_path: Path, path: Path, fmt: str, env: str = "board", *more: str):
    return run_cli("import", str(path), "--format", fmt, "--environment", env, "--store", STORE, *more,
                   cwd=tmp_path, env=cli_env())


def imported(tmp_path: Path, path: Path, fmt: str, *more: str) -> tuple[int, dict[str, float]]:
    r = import_cli(tmp_path, path, fmt, "board", *more)
    assert r.returncode == 0, r.stderr
    run_id = int(re.match(r"Run (\d+) ", r.stdout).group(1))
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), run_id)
    [m] = run.measurements
    assert (run.status, m.status, m.environment, m.kind) == ("finished", "ok", "board", "command")
    [out] = records(tmp_path, m.id, "output")
    assert out["file"] == path.read_text()            # kept verbatim, to be parsed again
    return run_id, m.results[0]["figures"]


def test_stress_ng_yaml_import(tmp_path):
    need("stress-ng")
    yaml = tmp_path / "sn.yaml"
    p = subprocess.run(["stress-ng", "--cpu", "1", "-t", "2", "--metrics", "--yaml", str(yaml)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    _, f = imported(tmp_path, yaml, "stress-ng-yaml")
    # Its own table on stderr: "cpu  <bogo ops> <real s> <usr s> <sys s> <ops/s real> <ops/s usr+sys> ...".
    row = re.search(r"metrc: \[\d+\] cpu\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+([0-9.]+)",
                    p.stdout + p.stderr)
    assert f["cpu.bogo_ops"] == int(row.group(1))
    assert f["cpu.bogo_ops_per_s"] == pytest.approx(float(row.group(2)), abs=0.006)
    assert f["cpu.bogo_ops_per_cpu_s"] == pytest.approx(float(row.group(3)), abs=0.006)
    assert f["cpu.bogo_ops_per_s"] == pytest.approx(f["cpu.bogo_ops"] / f["cpu.wall_s"], rel=1e-3)
    # -t 2: the stressor ran its 2 s (later stopped on a busy machine, never sooner).
    assert f["cpu.wall_s"] >= 1.9


def test_openssl_speed_table_import(tmp_path):
    need("openssl")
    out = tmp_path / "speed.txt"
    p = subprocess.run(["openssl", "speed", "-seconds", "1", "-bytes", "64", "md5"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out.write_text(p.stdout)
    _, f = imported(tmp_path, out, "openssl-speed")
    # The table's number is in 1000s of bytes per second; stderr said how many operations in how long.
    shown = float(re.search(r"^md5\s+([0-9.]+)k\s*$", p.stdout, re.MULTILINE).group(1))
    assert f == {"md5.64B.bytes_per_s": pytest.approx(shown * 1000)}
    ops, seconds = re.search(r"Doing md5 for \S+ on 64 size blocks: (\d+) md5's in ([0-9.]+)s", p.stderr).groups()
    assert f["md5.64B.bytes_per_s"] == pytest.approx(int(ops) * 64 / float(seconds), rel=0.01)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    """Whether a TCP socket listens on 127.0.0.1:port (state 0A in /proc/net/tcp)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(r.split()[1] == f"0100007F:{port:04X}" and r.split()[3] == "0A" for r in rows)


@pytest.mark.parametrize("udp", [False, True], ids=["tcp", "udp"])
def test_iperf3_json_import(tmp_path, udp):
    need("iperf3")
    port = str(_free_port())
    server = subprocess.Popen(["iperf3", "-s", "-B", "127.0.0.1", "-p", port],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Until the server listens, seen in /proc/net/tcp: a connection to find out would be taken by
        # the server for a client's and reset the test's own. (60 s only stops a server that never does.)
        wait_for(lambda: _listening(int(port)) or server.poll() is not None, 60, "iperf3 -s to listen")
        assert server.poll() is None, "iperf3 -s ended before it listened"
        args = ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"] + (["-u", "-b", "20M"] if udp else [])
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    finally:
        server.kill()
        server.wait()
    assert p.returncode == 0, p.stdout[-500:] + p.stderr
    path = tmp_path / "iperf3.json"
    path.write_text(p.stdout)
    run_id, f = imported(tmp_path, path, "iperf3-json")
    own = json.loads(p.stdout)
    # Every interval is kept, and the test's own parameters.
    [m] = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), run_id).measurements
    stored = m.results[0]
    assert [t for t, _ in stored["series"]["bps"]] == [i["sum"]["end"] for i in own["intervals"]]
    assert stored["parameters"]["protocol"] == ("UDP" if udp else "TCP")
    assert f["interval_min_bps"] <= f["interval_max_bps"]
    # Received bytes: its own sum over the streams; sent bytes: the sum of its intervals.
    received = sum(s["receiver"]["bytes"] if "receiver" in s else s["udp"]["bytes"] for s in own["end"]["streams"])
    sent = sum(i["sum"]["bytes"] for i in own["intervals"])
    assert f["received_bytes"] == own["end"]["sum_received"]["bytes"]
    assert f["sent_bytes"] == sent
    assert f["received_bytes"] == received or udp
    assert f["sent_bps"] == pytest.approx(f["sent_bytes"] * 8 / own["end"]["sum_sent"]["seconds"], rel=1e-6)
    assert f["received_bps"] == own["end"]["sum_received"]["bits_per_second"]
    if udp:
        assert f["lost_percent"] == own["end"]["sum"]["lost_percent"] and 0 <= f["lost_percent"] <= 100
        assert f["packets"] == own["end"]["sum"]["packets"] > 0
        # -b 20M paces the sender: never above it (a busy machine may send less).
        assert 0 < f["sent_bps"] <= 30e6
    else:
        assert f["retransmits"] == own["end"]["sum_sent"]["retransmits"]
        assert f["received_bps"] > 0


def test_cyclictest_hist_and_json_of_one_run_agree(tmp_path):
    need("cyclictest")
    json_file, text_file, all_file = tmp_path / "ct.json", tmp_path / "ct.txt", tmp_path / "ct-all.txt"
    # Two runs at once (one second for both): -h with its JSON, and -H with its column over all threads.
    both = subprocess.Popen(["cyclictest", "-D1", "-i1000", "-t2", "-H", "20000", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p = subprocess.run(["cyclictest", "-D1", "-i1000", "-t2", "-a", "-h", "20000", "-q", f"--json={json_file}"],
                       capture_output=True, text=True, timeout=120)
    all_out, all_err = both.communicate(timeout=120)
    assert p.returncode == 0 and both.returncode == 0, p.stderr + all_err
    text_file.write_text(p.stdout)
    all_file.write_text(all_out)
    _, hist = imported(tmp_path, text_file, "cyclictest-hist", "--benchmark", "hist")
    run_id, js = imported(tmp_path, json_file, "cyclictest-json", "--benchmark", "json")
    threads = json.loads(json_file.read_text())["thread"]
    for i in ("0", "1"):
        t = threads[i]
        # The text's Min/Max and Total + overflows are the JSON's min, max and cycles; its average is cut.
        assert (hist[f"thread{i}.min_us"], hist[f"thread{i}.max_us"], hist[f"thread{i}.count"]) == (
            t["min"], t["max"], t["cycles"])
        assert hist[f"thread{i}.overflows"] == t["cycles"] - sum(t["histogram"].values())
        # The JSON rounds its average to two decimals: 5.996 us there is 6.00, and 5 in the text.
        assert 0 <= t["avg"] - hist[f"thread{i}.avg_us"] <= 1
        cpu = t["cpu"]
        assert (js[f"cpu{cpu}.min_us"], js[f"cpu{cpu}.max_us"], js[f"cpu{cpu}.count"]) == (t["min"], t["max"], t["cycles"])
        assert js[f"cpu{cpu}.max_us"] >= js[f"cpu{cpu}.avg_us"] >= js[f"cpu{cpu}.min_us"]
    assert (hist["count"], hist["max_us"], hist["min_us"]) == (js["count"], js["max_us"], js["min_us"])
    # Both histograms hold the same samples (those below 20 ms), in 1 us bins from the smallest.
    store = open_store(f"sqlite:///{tmp_path}/s.db")
    hist_buckets, json_buckets = (load_run(store, i).measurements[0].results[0]["histograms"]
                                  for i in (run_id - 1, run_id))
    assert hist_buckets["all"] == json_buckets["all"]
    assert sum(c for *_, c in json_buckets["all"]) == hist["count"] - hist["overflows"]
    assert json_buckets["all"][0][:2] == [js["min_us"] * 1000, (js["min_us"] + 1) * 1000]

    # -H: the merged figures are cyclictest's own column over all threads.
    _, merged = imported(tmp_path, all_file, "cyclictest-hist", "--benchmark", "hist_all")
    column = {k: int(v.split()[-1]) for k, v in re.findall(r"^# (Total|Max Latencies|Histogram Overflows):(.*)$",
                                                           all_out, re.MULTILINE)}
    assert merged["count"] == column["Total"] + column["Histogram Overflows"]
    assert (merged["max_us"], merged["overflows"]) == (column["Max Latencies"], column["Histogram Overflows"])


def test_imported_runs_work_with_report_compare_and_history(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, mean in ((a, 0.0111), (b, 0.0125)):
        path.write_text(json.dumps({"results": [{"command": "sleep 0.01", "mean": mean, "stddev": 0.0001,
                                                 "median": mean, "min": mean - 0.0002, "max": mean + 0.0002,
                                                 "times": [mean - 0.0002, mean, mean + 0.0002]}]}))
    ids = [imported(tmp_path, path, "hyperfine-json", "--campaign", "sleeps", "--benchmark", "sleep")[0]
           for path in (a, b)]
    assert ids == [1, 2]
    r = run_cli("report", "--campaign", "2", "--format", "md", "-o", "r.md", "--store", STORE,
                cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "r.md").read_text()
    assert "Benchmark `sleep` (command)" in report and "b.json" in report
    assert "what the tool recorded of how it ran: `commands: sleep 0.01`" in report
    r = run_cli("compare", "1", "2", "--store", STORE, cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert re.search(r"sleep_0_01\.mean_ms.*11\.1 ms.*12\.5 ms.*12\.6 %", r.stdout), r.stdout
    r = run_cli("history", "sleep.sleep_0_01.mean_ms", "--json", "--store", STORE, cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert [p["median"] for s in json.loads(r.stdout)["series"] for p in s["points"]] == [11.1, 12.5]


@pytest.mark.parametrize("args, message", [
    (["missing.json", "hyperfine-json"], "rtvbench: missing.json: no such results file; check the path."),
    (["bad.json", "hyperfine-json"], "rtvbench: bad.json: hyperfine-json: the JSON has no `results` list with a "
                                     "command in it."),
    (["bad.json", "mapping"], "rtvbench: --format 'mapping' is not one import reads"),
    (["bad.json", "junit"], "rtvbench: --format 'junit' is not one import reads"),
])
def test_import_refuses_bad_files_and_formats(tmp_path, monkeypatch, capsys, args, message):
    (tmp_path / "bad.json").write_text('{"result": []}')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["import", args[0], "--format", args[1], "--environment", "board", "--store", STORE])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(message), err
    assert len(err.strip().splitlines()) == 1


# -- rtla: the documented summary layout ----------------------------------------------------------

def test_rtla_timerlat_summary():
    f = parse("rtla-timerlat", (FIXTURES / "rtla-timerlat-top.txt").read_text()).figures
    assert (f["cpu1.thread_max_us"], f["cpu1.irq_avg_us"], f["cpu3.count"]) == (41, 2, 5000)
    assert "cpu0.irq_cur_us" not in f                     # the last sample, not a statistic
    assert (f["irq_min_us"], f["irq_max_us"], f["thread_max_us"], f["count"]) == (0, 19, 41, 25000)
    assert f["thread_avg_us"] == pytest.approx((8 * 10000 + 10 * 10000 + 5 * 5000) / 25000)


def test_rtla_timerlat_histogram():
    out = parse("rtla-timerlat-hist", (FIXTURES / "rtla-timerlat-hist.txt").read_text())
    f = out.figures
    assert (f["cpu0.thread_max_us"], f["cpu1.thread_max_us"], f["cpu0.irq_max_us"]) == (40, 37, 4)
    assert (f["cpu0.thread_count"], f["cpu0.thread_overflows"], f["thread_count"], f["thread_overflows"]) == \
        (10000, 1, 20000, 2)
    assert (f["thread_min_us"], f["thread_max_us"], f["irq_max_us"]) == (1, 40, 4)
    # The merged histogram holds every CPU's bins: its count is theirs, each bin one unit wide.
    merged = out.histograms["thread"]
    assert sum(n for _, _, n in merged) == sum(n for _, _, n in out.histograms["cpu0.thread"]) + \
        sum(n for _, _, n in out.histograms["cpu1.thread"]) == 20000 - 2
    assert merged[0] == [1000, 2000, 13000] and all(hi - lo == 1000 for lo, hi, _ in merged)
    assert out.parameters == {"columns": ["cpu0.irq", "cpu0.thread", "cpu1.irq", "cpu1.thread"],
                              "duration": "0 00:00:30"}


def test_rtla_timerlat_histogram_percentiles_come_from_its_bins():
    """Decoded as an import is: the percentiles at the middle of the bin of their rank among all
    samples (overflows included), per CPU and merged, in order, and the histograms kept for plots."""
    from rtvbench.kinds.command.decode import CommandKind
    from rtvbench.results import Measurement
    out = parse("rtla-timerlat-hist", (FIXTURES / "rtla-timerlat-hist.txt").read_text())
    m = Measurement(id=1, environment="board", load="idle", benchmark="t", kind="command", repetition=0,
                    status="ok", command=[], load_commands=[], started_at=None, finished_at=None, meta=None,
                    results=[out.record("rtla-timerlat-hist")])
    r = CommandKind().decode(m)
    # 20000 samples: ranks 10000, 18000, 19800, 19980 fall in the bins from 1, 2, 3 and 6 us.
    assert [r.figures[f"thread_{p}_us"] for p in ("p50", "p90", "p99", "p999")] == [1.5, 2.5, 3.5, 6.5]
    assert r.figures["cpu1.thread_p999_us"] == 6.5 and r.figures["irq_p50_us"] == 0.5
    assert set(r.distributions) == {"irq latency", "thread latency"} and set(r.cpu_distributions) == {0, 1}


def test_rtla_timerlat_histogram_in_nanoseconds_reads_as_microseconds():
    text = (FIXTURES / "rtla-timerlat-hist.txt").read_text().replace("microseconds (us)", "nanoseconds (ns)")
    out = parse("rtla-timerlat-hist", text)
    assert out.figures["thread_max_us"] == 0.04 and out.histograms["thread"][0] == [1, 2, 13000]


@pytest.mark.parametrize("edit, said", [
    (lambda t: t.replace("count:    10000     10000", "count:    10000     10001"),
     "rtla-timerlat-hist: CPU 0 (thread) counts 10001 samples, but its bins and `over:` hold 10000."),
    (lambda t: t.replace("max:          4        40", "max:          4         0"),
     "rtla-timerlat-hist: CPU 0 (thread) has min 1 us above its max 0 us."),
    (lambda t: t.replace("Thr-001", "Foo-001"),
     "rtla-timerlat-hist: the header has a column 'Foo-001', not IRQ-<cpu>, Thr-<cpu> or Usr-<cpu>."),
    (lambda t: t.replace("over:", "under:"), "rtla-timerlat-hist: no `over:` row"),
    (lambda t: t.replace("12            0         0         0         1",
                         "99999999999   0         0         0         1"),
     "rtla-timerlat-hist: a bin starts at 99999999999 us, beyond the one hour"),
])
def test_rtla_timerlat_histogram_that_contradicts_itself_is_refused(edit, said):
    with pytest.raises(FormatError) as e:
        parse("rtla-timerlat-hist", edit((FIXTURES / "rtla-timerlat-hist.txt").read_text()))
    assert str(e.value).startswith(said), str(e.value)


def test_rtla_osnoise_summary():
    f = parse("rtla-osnoise", (FIXTURES / "rtla-osnoise-top.txt").read_text()).figures
    assert (f["cpu1.noise_us"], f["cpu1.availability_percent"], f["cpu1.irq"]) == (27000, 99.9, 30101)
    assert (f["noise_us"], f["max_noise_us"], f["max_single_us"], f["hw"]) == (27540, 4000, 1500, 2)
    assert f["availability_percent"] == pytest.approx(100 * (1 - 27540 / 54000000))


@pytest.mark.parametrize("fmt", ["rtla-timerlat", "rtla-timerlat-hist", "rtla-osnoise", "cyclictest-hist",
                                 "openssl-speed", "stress-ng-yaml"])
def test_a_parser_failure_is_one_sentence_naming_the_format(fmt):
    with pytest.raises(FormatError) as e:
        parse(fmt, "nothing of the kind\n")
    assert str(e.value).startswith(fmt + ": ") and str(e.value).endswith((".", ")")) and "\n" not in str(e.value)
