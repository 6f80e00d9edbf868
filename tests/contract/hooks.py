"""Schemathesis hooks of the contract tests (SCHEMATHESIS_HOOKS=hooks, run.sh).

Every write takes an `Idempotency-Key` (docs/api.md, "Retrying a write safely"): the same key sent
again answers the first request's answer, and with another body 422. Schemathesis draws header
values from a small space and sends the same ones again and again, so its unrelated requests
would meet as retries of each other. A well-formed key is therefore made unique per request here
(a malformed one is left as it is, for the negative tests); the retry behaviour itself is proven
by the HTTP suite (tests/src/idempotency.rs).

A stored query's body is pointed at the database run.sh registered, so that its statement really
runs (as a read-only role on a scratch database) when the stateful phase follows the links from
`createQuery` to `runQuery`.
"""

import os
import re
import uuid

import schemathesis

WELL_FORMED = re.compile(r"^[ -~]{1,255}$")
VALID_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,255}$")

# The database run.sh registered: a stored query's body names it (when the body is an object),
# so that the fuzzed statements are stored and run on a real server as a read-only role.
DATABASE = os.environ.get("CONTRACT_DATABASE_ID")
CREDENTIAL = os.environ.get("CONTRACT_CREDENTIAL_ID")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str):
            if WELL_FORMED.match(value) and value.strip():
                headers[name] = f"contract-{uuid.uuid4()}"
    if (
        DATABASE
        and case.method.upper() == "POST"
        and case.path.endswith("/queries")
        and isinstance(case.body, dict)
    ):
        # Only ids that are valid as drawn are replaced: a case made invalid there stays so.
        for field, value in (("database_id", DATABASE), ("credential_id", CREDENTIAL)):
            drawn = case.body.get(field)
            if isinstance(drawn, str) and drawn.strip() and VALID_NAME.match(drawn):
                case.body[field] = value
