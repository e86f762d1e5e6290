"""Text that comes from outside — a load's stderr, a target's error, a campaign's path or names — reaches
the terminal as text: never as Rich markup (which crashed `run` on "[/dev/cpu_dma_latency]") and never as a
control sequence (a window title, a clear screen, an OSC 52 clipboard write)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from host_helpers import cli_env, load_running, run_cli, waiting_benchmark
from rtvbench.terminal import plain

pytestmark = pytest.mark.functional

HOSTILE = "cannot open [/dev/cpu_dma_latency] [red]x[/red] [/]"
ESCAPES = "a\x1b]0;owned\x07b\x1b[2Jc\x1b]52;c;ZXZpbA==\x1b\\d\x9b31me\x07f\x08g"


def _printed(text: str) -> str:
    buf = io.StringIO()
    Console(file=buf, force_terminal=False, width=500, highlight=False).print(f"[red]error[/] {text}")
    return buf.getvalue()


def test_markup_in_outside_text_is_printed_as_text():
    assert _printed(plain(HOSTILE)).strip() == f"error {HOSTILE}"


def test_control_sequences_are_removed_and_lines_kept():
    assert plain(ESCAPES) == "abcdefg"
    assert plain("two\nlines\tand a tab") == "two\nlines\tand a tab"


def test_a_load_whose_error_has_markup_does_not_end_the_run(tmp_path, probe):
    # The load fails at once with a message holding markup and an OSC title sequence (printf makes the bytes).
    (tmp_path / "fail.sh").write_text("printf 'cannot open [/dev/cpu_dma_latency] \\033]0;owned\\007\\n' >&2\nexit 3\n")
    # The benchmark waits until the load has ended: the runner judges a load by whether it still runs
    # when the benchmark ends, and one of fixed length could end before a busy machine ran the script.
    (tmp_path / "c.toml").write_text(
        'name = "markup"\n[environments.native]\ntarget = "local"\n'
        f'[loads.idle]\n[loads.broken]\ncommand = "sh {tmp_path / "fail.sh"}"\n'
        + waiting_benchmark("wakeup", load_running(str(tmp_path / "fail.sh"))))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 0, r.stderr
    assert "Run 1 of markup finished: 1 of 2 measurements ok" in r.stdout
    assert "[/dev/cpu_dma_latency]" in r.stderr and "\x1b]" not in r.stderr + r.stdout
    assert "internal error" not in r.stderr


def test_validate_takes_a_path_with_markup(tmp_path):
    (tmp_path / "[/x]").mkdir(parents=True)
    path = tmp_path / "[/x]" / "c.toml"
    path.write_text('name = "p"\n[environments.native]\ntarget = "local"\n'
                    '[benchmarks.w]\nkind = "latency"\nloops = 10\n')
    r = run_cli("validate", str(path), cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert f"{path} is valid" in r.stdout
