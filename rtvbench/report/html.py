"""Self-contained HTML report: one file, inline CSS and SVG, no script, no network."""

from __future__ import annotations

import functools
import re

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.model import build

_BACKTICKED = re.compile(r"`([^`]*)`")


def names(text: str) -> Markup:
    """Escape text, then show `quoted` names as code: escaping first means a name can never become markup."""
    return Markup(_BACKTICKED.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(text))))


@functools.cache
def template_environment() -> Environment:
    # One per process: it keeps the templates it compiled, which a publish of a thousand reports would
    # otherwise compile a thousand times (a tenth of a second each).
    # autoescape=True for every template: all names, hosts and commands come from users.
    env = Environment(loader=PackageLoader("rtvbench", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    env.filters["names"] = names
    return env


def render_html(ev: Evaluation, with_plots: bool = True) -> str:
    return template_environment().get_template("report.html.j2").render(m=build(ev, with_plots=with_plots))
