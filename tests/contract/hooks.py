"""Schemathesis hooks of the contract tests (SCHEMATHESIS_HOOKS=hooks, run.sh).

Every write takes an `Idempotency-Key` (README, "Retrying a write safely"): the same key sent
again answers the first request's answer, and with another body 422. Schemathesis draws header
values from a small space and sends the same ones again and again, so its unrelated requests
would meet as retries of each other. A well-formed key is therefore made unique per request here
(a malformed one is left as it is, for the negative tests); the retry behaviour itself is proven
by the HTTP suite (tests/src/idempotency.rs).
"""

import re
import uuid

import schemathesis

WELL_FORMED = re.compile(r"^[ -~]{1,255}$")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str):
            if WELL_FORMED.match(value) and value.strip():
                headers[name] = f"contract-{uuid.uuid4()}"
