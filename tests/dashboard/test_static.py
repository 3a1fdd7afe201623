"""The dashboard's route and files: public, locked down by its headers, and
written so that no datum can become markup or script."""
from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from cirrus.api.app import build_app
from cirrus.api.auth import is_public
from cirrus.dashboard import CONTENT_SECURITY_POLICY, STATIC_DIR

FILES = sorted(p for p in STATIC_DIR.iterdir() if p.is_file())
SCRIPTS = [p for p in FILES if p.suffix == ".js"]
PAGES = [p for p in FILES if p.suffix == ".html"]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    # The static route needs none of the services: an app with no state serves it.
    transport = httpx.ASGITransport(app=build_app({}))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8774") as c:
        yield c


@pytest.mark.parametrize("path", ["/dashboard/", "/dashboard/index.html", "/dashboard/app.js",
                                  "/dashboard/style.css"])
async def test_files_are_served_without_a_token_with_the_security_headers(
        client: httpx.AsyncClient, path: str) -> None:
    resp = await client.get(path)
    assert resp.status_code == 200
    assert resp.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["x-frame-options"] == "DENY"
    assert resp.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("path,content_type", [
    ("/dashboard/", "text/html"), ("/dashboard/app.js", "javascript"), ("/dashboard/style.css", "text/css")])
async def test_each_file_has_its_type(client: httpx.AsyncClient, path: str, content_type: str) -> None:
    # nosniff: a module script is refused unless it is served as JavaScript
    assert content_type in (await client.get(path)).headers["content-type"]


async def test_the_bare_prefix_redirects_to_the_index(client: httpx.AsyncClient) -> None:
    resp = await client.get("/dashboard")
    assert resp.status_code in (301, 307, 308)
    assert resp.headers["location"].endswith("/dashboard/")


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/dashboard/missing.js", 404),
    ("GET", "/dashboard/%2e%2e/__init__.py", 404),
    ("POST", "/dashboard/", 405),
    ("DELETE", "/dashboard/app.js", 405),
])
async def test_nothing_else_is_served(client: httpx.AsyncClient, method: str, path: str,
                                      status: int) -> None:
    resp = await client.request(method, path)
    assert resp.status_code == status
    assert "__future__" not in resp.text


@pytest.mark.parametrize("path,public", [
    ("/dashboard", True), ("/dashboard/", True), ("/dashboard/app.js", True),
    ("/dashboardx", False), ("/compute/v2.1/servers", False), ("/dashboard-admin", False),
])
def test_only_the_dashboard_prefix_is_public(path: str, public: bool) -> None:
    assert is_public("GET", path) is public


# What would turn a datum into markup or code, or reach past this origin.
FORBIDDEN_IN_SCRIPTS = {
    "innerHTML": re.compile(r"\binnerHTML\b"), "outerHTML": re.compile(r"\bouterHTML\b"),
    "insertAdjacentHTML": re.compile(r"insertAdjacentHTML"),
    "document.write": re.compile(r"document\.write"), "eval": re.compile(r"\beval\s*\("),
    "new Function": re.compile(r"new\s+Function\b"), "a style attribute": re.compile(r"'style'"),
    "an absolute URL": re.compile(r"https?://"), "a token in a URL": re.compile(r"[?&]token="),
    "localStorage": re.compile(r"\blocalStorage\b"),
}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
@pytest.mark.parametrize("what", sorted(FORBIDDEN_IN_SCRIPTS))
def test_scripts_render_data_as_text_only(path: Path, what: str) -> None:
    assert not FORBIDDEN_IN_SCRIPTS[what].search(path.read_text()), f"{path.name} uses {what}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_pages_have_no_inline_script_or_style(path: Path) -> None:
    html = path.read_text()
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag, f"inline script in {path.name}: {tag}"
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    assert not re.search(r"\sstyle\s*=|<style", html), "inline style"
    assert not re.search(r"(src|href)=\"(https?:)?//", html), "a file from another origin"


def test_every_file_is_packaged() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"dashboard/static/*"' in pyproject
    assert {p.suffix for p in FILES} <= {".html", ".js", ".css", ".svg"}
