"""The /docs page in headless Chromium: every operation of /openapi.json is listed, and one
call made from the page with its Authorize dialog answers 200 with what the store holds.

Run by tests/contract/run.sh: python docs_page.py BASE_URL API_KEY
"""

import json
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import WebDriverWait

BASE, API_KEY = sys.argv[1], sys.argv[2]
NAME = "docs-page-check"


def fetch(path, body=None):
    request = urllib.request.Request(
        BASE + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"x-api-key": API_KEY, "content-type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)


document = fetch("/openapi.json")
expected = {
    (method.upper(), path)
    for path, item in document["paths"].items()
    for method in item
}
fetch(
    "/api/v1/console/databases",
    {
        "name": NAME,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": "docs-page-secret"}],
    },
)

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(driver, 30)
try:
    driver.get(BASE + "/docs")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) > 0)
    # Past 150 operations and tags, Swagger UI draws only those near the view (a virtual
    # list): the page is read while it scrolls, top to bottom, until nothing new comes.
    listed = set()
    driver.execute_script("window.scrollTo(0, 0)")
    for _ in range(2_000):
        seen = driver.execute_script(
            """return Array.from(document.querySelectorAll('.opblock')).map(b => [
                b.querySelector('.opblock-summary-method')?.textContent.trim(),
                b.querySelector('.opblock-summary-path')?.getAttribute('data-path')])"""
        )
        listed.update((method, path) for method, path in seen if method and path)
        if expected <= listed:
            break
        at_end = driver.execute_script(
            "const before = window.scrollY; window.scrollBy(0, window.innerHeight / 2);"
            "return window.scrollY === before"
        )
        if at_end:
            time.sleep(0.2)
            if driver.execute_script("return window.scrollY + window.innerHeight >= document.body.scrollHeight - 2"):
                break
        time.sleep(0.05)
    driver.execute_script("window.scrollTo(0, 0)")
    missing = expected - listed
    assert not missing, f"operations not listed on /docs: {sorted(missing)}"

    # Authorize with the API key (the first scheme of the dialog).
    driver.find_element(By.CSS_SELECTOR, ".auth-wrapper .authorize").click()
    dialog = wait.until(ready.visibility_of_element_located((By.CSS_SELECTOR, ".modal-ux")))
    section = dialog.find_elements(By.CSS_SELECTOR, ".auth-container")[0]
    section.find_element(By.CSS_SELECTOR, "input").send_keys(API_KEY)
    section.find_element(By.CSS_SELECTOR, "button.authorize").click()
    dialog.find_element(By.CSS_SELECTOR, "button.btn-done").click()

    # List the databases from the page.
    operation = driver.find_element(By.ID, "operations-databases-listDatabases")
    operation.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait.until(lambda d: operation.find_elements(By.CSS_SELECTOR, ".try-out__btn"))
    operation.find_element(By.CSS_SELECTOR, ".try-out__btn").click()
    wait.until(lambda d: operation.find_elements(By.CSS_SELECTOR, ".execute"))
    operation.find_element(By.CSS_SELECTOR, ".execute").click()
    status = wait.until(
        lambda d: operation.find_element(By.CSS_SELECTOR, ".live-responses-table tbody .response-col_status")
    )
    assert status.text.strip().startswith("200"), f"the call from the page answered {status.text!r}"
    body = operation.find_element(By.CSS_SELECTOR, ".live-responses-table tbody .response-col_description").text
    assert NAME in body, f"the answer on the page does not list the database: {body[:500]!r}"
    assert "docs-page-secret" not in driver.page_source
    print(f"docs page: {len(listed)} operations listed; an authorized call from the page answered 200")
finally:
    driver.quit()
