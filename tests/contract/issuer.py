"""A stand-in OIDC issuer for the contract tests (run.sh): its discovery document, an empty key
set, an authorization endpoint and a token endpoint that refuses every code. The server under
test is started with it as its --oidc-issuer, so that the OIDC routes of the document answer as
they do in production: `…/oidc` says it is on, `…/oidc/start` redirects here, and a callback
that is not the browser's flow is refused. (Signing in for real, with a signed ID token, is the
server's and the browser's tests' part: server/tests/oidc_login.rs, console/e2e/oidc.test.mjs.)

Prints `listening on http://127.0.0.1:PORT` once it listens, then serves until killed.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class Issuer(BaseHTTPRequestHandler):
    base = ""

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/.well-known/openid-configuration":
            self.answer(200, json.dumps({
                "issuer": self.base,
                "jwks_uri": f"{self.base}/jwks",
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
            }))
        elif path == "/jwks":
            self.answer(200, json.dumps({"keys": []}))
        elif path == "/authorize":
            # A person would sign in here; the contract tests stop at the redirect.
            self.answer(200, "stand-in issuer", "text/plain")
        else:
            self.answer(404, json.dumps({"error": "not_found"}))

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        if urlsplit(self.path).path == "/token":
            self.answer(400, json.dumps({"error": "invalid_grant"}))
        else:
            self.answer(404, json.dumps({"error": "not_found"}))


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
    Issuer.base = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"listening on {Issuer.base}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
