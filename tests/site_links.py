"""Every link of a static site, checked without a browser: each relative href or src names a file of
the site, and each #anchor an id of the page it points into."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            elif name == "id" and value:
                self.ids.add(value)


def _parsed(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(site: Path) -> list[str]:
    """'page: link' for every link that leads nowhere; also every link out of the site (a CDN)."""
    pages = {p: _parsed(p) for p in site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme == "data":
                continue
            if parts.scheme or parts.netloc:
                broken.append(f"{path.relative_to(site)}: {link} leaves the site")
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.is_file() or site.resolve() not in target.parents:
                broken.append(f"{path.relative_to(site)}: {link}")
            elif parts.fragment and parts.fragment not in (pages.get(target) or _parsed(target)).ids:
                broken.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    return broken
