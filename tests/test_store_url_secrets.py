"""A store URL's password never reaches a message: not in the command rtvbench suggests after an
interrupted run (a URL from RTVBENCH_STORE is not repeated at all, since the suggested command
inherits it), not in the error about a URL that does not parse."""

from __future__ import annotations

import pytest

from rtvbench.cli import _store_given, cli, resume_hint, run
from rtvbench.errors import InputError
from rtvbench.store.db import open_store, without_password

SECRET = "s3cret-pw"
URL = f"postgresql://alice:{SECRET}@db.lab.example/results"


def test_the_resume_hint_shows_the_url_without_its_password():
    hint = resume_hint(URL, "c.toml")
    assert SECRET not in hint
    assert hint == "rtvbench run --resume --store 'postgresql://alice:***@db.lab.example/results' c.toml"
    assert resume_hint(None, None) == "rtvbench run --resume"
    assert resume_hint("sqlite:///s.db", "c.toml") == "rtvbench run --resume --store sqlite:///s.db c.toml"


def test_a_url_from_the_environment_is_not_repeated_one_typed_is(monkeypatch):
    monkeypatch.setenv("RTVBENCH_STORE", URL)
    parent = cli.make_context("rtvbench", [], resilient_parsing=True)
    parent.obj = {"store_url": parent.params["store_url"]}
    sub = run.make_context("run", ["c.toml"], parent=parent, resilient_parsing=True)
    assert sub.params["store_url"] == URL and _store_given(sub, sub.params["store_url"]) is None
    typed = run.make_context("run", ["--store", "sqlite:///s.db", "c.toml"], parent=parent, resilient_parsing=True)
    assert _store_given(typed, typed.params["store_url"]) == "sqlite:///s.db"


def test_a_url_that_does_not_parse_is_named_without_its_password():
    bad = f"postgres ql://alice:{SECRET}@db.lab.example/results"     # a typo in the scheme
    assert SECRET not in without_password(bad) and "alice:***@db.lab.example" in without_password(bad)
    with pytest.raises(InputError) as e:
        open_store(bad)
    assert SECRET not in str(e.value) and "is not a database URL" in str(e.value)
