"""The dashboard in headless Chromium against a real ``cirrus up``: log in,
boot a server from the form, see it ACTIVE, open its boot waterfall and the
scheduler's filter table; hosts as a member and as an admin; quotas. The
screenshots go to docs/images (checked in, shown in docs/dashboard.md).

The tests run in file order and share one browser and one cloud.
"""
from __future__ import annotations

import os
import tempfile

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.dashboard.conftest import Cloud

# In file order on one worker: the tests share the browser, the cloud and its servers.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard")]

# The checked-in screenshots are refreshed only on request
# (CIRRUS_SCREENSHOTS=1): a CI run must not leave the tree modified.
IMAGES = Path(__file__).parents[2] / "docs" / "images" if os.environ.get("CIRRUS_SCREENSHOTS") \
    else Path(tempfile.gettempdir()) / "cirrus-dashboard-screenshots"
SCHEDULE = "conductor_schedule_and_build_instances"
BUILD = "compute__do_build_and_run_instance"
T = TypeVar("T")


def wait(driver: Any, condition: Callable[[Any], T], timeout: float = 60) -> T:
    """``condition``'s first truthy answer; the lists are redrawn every poll, so
    an element gone stale between finding and reading it means "ask again"."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2,
                         ignored_exceptions=[StaleElementReferenceException]).until(condition)


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def one(driver: Any, selector: str, timeout: float = 30) -> Any:
    return wait(driver, lambda d: (css(d, selector) or [None])[0], timeout)


def log_in(driver: Any, cloud: Cloud, name: str) -> None:
    auth = cloud.users[name]
    driver.get(f"{cloud.url}/dashboard/")
    one(driver, "#login")
    if css(driver, "#logout:not([hidden])"):
        css(driver, "#logout")[0].click()
    for field, value in (("user", auth["username"]), ("password", auth["password"]),
                         ("project", auth["project_name"])):
        box = one(driver, f"#login input[name={field}]")
        box.clear()
        box.send_keys(value)
    one(driver, "#login button[type=submit]").click()
    wait(driver, lambda d: d.current_url.endswith("#/servers") and css(d, "#servers"))


def screenshot(driver: Any, name: str) -> None:
    """The whole page (the window grown to its height for the picture)."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    width, height = driver.get_window_size()["width"], driver.get_window_size()["height"]
    page = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, max(height, page + 140))  # + the window's frame
    try:
        driver.save_screenshot(str(IMAGES / name))
    finally:
        driver.set_window_size(width, height)


def row_of(driver: Any, name: str) -> Any:
    for row in css(driver, "#servers tbody tr"):
        if row.find_elements("css selector", "td a")[0].text == name:
            return row
    return None


# Read in one script, so a redraw cannot come between finding a row and reading it.
STATUSES = """return Object.fromEntries([...document.querySelectorAll('#servers tbody tr')].map(
    (row) => [row.querySelector('td a').textContent, row.querySelector('.status').dataset.status]));"""


def status_of(driver: Any, name: str) -> str | None:
    return driver.execute_script(STATUSES).get(name)


def server_names(driver: Any) -> list[str]:
    return sorted(driver.execute_script(STATUSES))


def choose(driver: Any, select: str, text: str) -> None:
    from selenium.webdriver.support.ui import Select

    menu = Select(one(driver, f"#create select[name={select}]"))
    wait(driver, lambda d: menu.options)
    menu.select_by_visible_text(next(o.text for o in menu.options if text in o.text))


def browser_problems(driver: Any) -> list[str]:
    """The console's errors since the last call: script errors and content
    security policy violations (a refused API call, such as a member's 403 for
    the hosts, is the page's to explain and is left out)."""
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]]


def test_a_wrong_password_is_refused_with_the_identity_services_message(
        browser: Any, live_cloud: Cloud) -> None:
    browser.get(f"{live_cloud.url}/dashboard/")
    for field, value in (("user", "demo"), ("password", "not-the-password"), ("project", "demo")):
        one(browser, f"#login input[name={field}]").send_keys(value)
    one(browser, "#login button[type=submit]").click()
    assert "requires authentication" in one(browser, "#login-status .notice.error").text
    assert browser.execute_script("return sessionStorage.getItem('cirrus.session')") is None
    assert one(browser, "#nav").get_attribute("hidden") is not None


def test_a_member_logs_in_and_boots_a_server_from_the_form(browser: Any, live_cloud: Cloud) -> None:
    log_in(browser, live_cloud, "cirrus")
    one(browser, "#create select[name=image] option")
    one(browser, "#create input[name=name]").send_keys("web-1")
    choose(browser, "flavor", "m1.tiny")
    one(browser, "#create button[type=submit]").click()
    wait(browser, lambda d: status_of(d, "web-1") == "ACTIVE", timeout=120)
    # the token is the session's, kept in sessionStorage and never in a URL
    token = browser.execute_script("return JSON.parse(sessionStorage.getItem('cirrus.session')).token")
    assert token and token not in browser.current_url
    screenshot(browser, "dashboard-servers.png")
    assert (problems := browser_problems(browser)) == [], problems


def test_the_server_page_shows_its_boot_waterfall_and_filter_table(browser: Any) -> None:
    row_of(browser, "web-1").find_element("css selector", "td a").click()
    bars = {step.get_attribute("data-event"): step for step in
            wait(browser, lambda d: len(css(d, "#waterfall .bar")) >= 2 and css(d, "#waterfall .step"))}
    assert {SCHEDULE, BUILD} <= set(bars), sorted(bars)
    for event in (SCHEDULE, BUILD):
        label = one(browser, f'#waterfall .step[data-event="{event}"] .label strong').text
        duration = one(browser, f'#waterfall .step[data-event="{event}"] .duration').text
        assert label and duration.endswith(("ms", "s")), (event, label, duration)
    assert one(browser, "#waterfall .bar").value_of_css_property("width") != "0px"
    rows = wait(browser, lambda d: css(d, "#decision table.filters tbody tr"))
    cells = [[c.text for c in r.find_elements("css selector", "td")] for r in rows]
    assert all(name and hosts_in.isdigit() and hosts_out.isdigit()
               and int(removed) == int(hosts_in) - int(hosts_out)
               for name, hosts_in, hosts_out, removed, _ in cells), cells
    assert cells[0][1] == "2"  # the cloud's two computes go in to the first filter
    one(browser, "#decision table.weights tbody tr")
    assert "ACTIVE" in one(browser, ".facts .status").text
    one(browser, "#console")
    screenshot(browser, "dashboard-server.png")
    assert (problems := browser_problems(browser)) == [], problems


def test_a_member_is_told_hosts_are_for_admins(browser: Any) -> None:
    browser.get(browser.current_url.split("#")[0] + "#/hosts")
    message = one(browser, "#hosts .notice.warn").text
    assert "administrators only" in message and "member" in message


def test_the_quotas_page_shows_the_projects_usage(browser: Any) -> None:
    browser.get(browser.current_url.split("#")[0] + "#/quotas")
    rows = wait(browser, lambda d: css(d, "#quotas tbody tr"))
    cells = {r.find_elements("css selector", "td")[0].text: r.find_elements("css selector", "td")
             for r in rows}
    assert cells["instances"][1].text == "1"
    assert cells["cores"][1].text == "1"


def token_of(cloud: Cloud, name: str) -> str:
    auth = cloud.users[name]
    domain = {"name": auth["user_domain_name"]}
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": auth["username"], "domain": domain, "password": auth["password"]}}},
        "scope": {"project": {"name": auth["project_name"], "domain": domain}}}}
    resp = httpx.post(f"{cloud.url}/identity/v3/auth/tokens", json=body, timeout=30)
    assert resp.status_code == 201, resp.text
    return resp.headers["X-Subject-Token"]


def boot(cloud: Cloud, name: str, flavor: str | None = None) -> str:
    """A server of the demo project booted through the API (not the form)."""
    with httpx.Client(base_url=cloud.url, timeout=30,
                      headers={"X-Auth-Token": token_of(cloud, "cirrus")}) as http:
        flavor = flavor or http.get("/compute/v2.1/flavors").json()["flavors"][0]["id"]
        image = http.get("/image/v2/images").json()["images"][0]["id"]
        resp = http.post("/compute/v2.1/servers", json={"server": {
            "name": name, "flavorRef": flavor, "imageRef": image, "networks": "auto"}})
        assert resp.status_code == 202, resp.text
        return str(resp.json()["server"]["id"])


def test_names_are_shown_as_text_never_markup(browser: Any, live_cloud: Cloud) -> None:
    name = '<img src=x id=injected onerror="document.title=\'owned\'">'
    boot(live_cloud, name)
    browser.get(browser.current_url.split("#")[0] + "#/servers")
    wait(browser, lambda d: row_of(d, name) is not None)
    assert css(browser, "#injected") == [] and browser.title != "owned"


def test_a_failed_boot_shows_its_fault_and_the_hosts_each_filter_removed(
        browser: Any, live_cloud: Cloud) -> None:
    admin = {"X-Auth-Token": token_of(live_cloud, "cirrus-admin")}
    resp = httpx.post(f"{live_cloud.url}/compute/v2.1/flavors", headers=admin, timeout=30, json={
        "flavor": {"name": "huge", "ram": 512, "vcpus": 1, "disk": 100000}})
    assert resp.status_code == 200, resp.text
    server = boot(live_cloud, "too-big", resp.json()["flavor"]["id"])
    browser.get(browser.current_url.split("#")[0] + f"#/server/{server}")
    assert "No valid host" in one(browser, "#fault", timeout=60).text
    assert one(browser, ".facts .status").get_attribute("data-status") == "ERROR"
    rows = wait(browser, lambda d: css(d, "#decision table.filters tbody tr"))
    cells = {r.find_elements("css selector", "td")[0].text: [c.text for c in r.find_elements(
        "css selector", "td")] for r in rows}
    assert cells["DiskFilter"][1:4] == ["2", "0", "2"], cells
    assert "compute1" in cells["DiskFilter"][4] and "compute2" in cells["DiskFilter"][4]
    failed = one(browser, f'#waterfall .step[data-event="{SCHEDULE}"] .bar')
    assert "failed" in failed.get_attribute("class").split()


def click_action(driver: Any, name: str, action: str) -> None:
    def click(d: Any) -> bool:
        row = row_of(d, name)
        if row is None:
            return False
        row.find_element("css selector", f'button[data-action="{action}"]').click()
        return True
    wait(driver, click)  # a stale row raised before the click: found again and clicked


def test_stop_start_reboot_and_delete_from_the_list(browser: Any) -> None:
    browser.get(browser.current_url.split("#")[0] + "#/servers")
    click_action(browser, "web-1", "stop")
    wait(browser, lambda d: status_of(d, "web-1") == "SHUTOFF")
    click_action(browser, "web-1", "start")
    wait(browser, lambda d: status_of(d, "web-1") == "ACTIVE")
    click_action(browser, "web-1", "reboot")
    wait(browser, lambda d: css(d, "#servers-status .notice") == [] and status_of(d, "web-1") == "ACTIVE")
    for name in ("too-big", next(n for n in server_names(browser) if "<img" in n)):
        click_action(browser, name, "delete")
        wait(browser, lambda d: d.switch_to.alert).accept()  # "Delete server …?"
        wait(browser, lambda d, name=name: status_of(d, name) is None)
    assert server_names(browser) == ["web-1"]


def test_an_action_the_server_refuses_is_explained(browser: Any) -> None:
    click_action(browser, "web-1", "start")  # it is running already: 409
    assert "web-1" in one(browser, "#servers-status .notice.error").text


def test_an_expired_token_goes_back_to_the_login_page(browser: Any) -> None:
    saved = browser.execute_script("return sessionStorage.getItem('cirrus.session')")
    browser.execute_script(
        "const s = JSON.parse(arguments[0]); s.token = 'gAAAAA-not-a-token';"
        "sessionStorage.setItem('cirrus.session', JSON.stringify(s));", saved)
    one(browser, "#login", timeout=10)  # the next poll's 401 ends the session
    assert browser.execute_script("return sessionStorage.getItem('cirrus.session')") is None
    browser.execute_script("sessionStorage.setItem('cirrus.session', arguments[0]);", saved)
    browser.get(browser.current_url.split("#")[0] + "#/servers")
    wait(browser, lambda d: status_of(d, "web-1") == "ACTIVE")


def test_sign_out_forgets_the_token(browser: Any) -> None:
    one(browser, "#logout").click()
    one(browser, "#login")
    assert browser.execute_script("return sessionStorage.getItem('cirrus.session')") is None


def test_an_admin_sees_every_host_with_its_usage(browser: Any, live_cloud: Cloud) -> None:
    log_in(browser, live_cloud, "cirrus-admin")
    browser.get(browser.current_url.split("#")[0] + "#/hosts")
    def running(d: Any) -> int:
        return sum(int(r.find_elements("css selector", "td")[-1].text) for r in css(d, "#hosts tbody tr"))

    wait(browser, lambda d: len(css(d, "#hosts tbody tr")) == 2 and running(d) == 1)  # web-1
    assert len(css(browser, "#hosts .meter .fill")) == 6
    screenshot(browser, "dashboard-hosts.png")
    assert (problems := browser_problems(browser)) == [], problems
