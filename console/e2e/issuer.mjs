// A stand-in OIDC issuer for the browser tests: discovery, a key set (an ES256 key made here),
// an authorization endpoint that approves at once (as a signed-in user at the issuer would)
// and a token endpoint that checks the PKCE verifier, the client and the redirect URI, then
// answers an ID token carrying the nonce it was asked for.

import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { createServer } from "node:http";

const b64 = (bytes) => Buffer.from(bytes).toString("base64url");

export async function startIssuer({ clientId, clientSecret, claims }) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "k1", alg: "ES256", use: "sig" };
  const codes = new Map();
  const seen = { authorizations: [], exchanges: 0 };
  let base = "";
  const server = createServer((request, response) => {
    const url = new URL(request.url, base);
    const json = (status, body) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/openid-configuration") {
      return json(200, {
        issuer: base,
        jwks_uri: `${base}/jwks`,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
      });
    }
    if (url.pathname === "/jwks") return json(200, { keys: [jwk] });
    if (url.pathname === "/authorize") {
      const asked = Object.fromEntries(url.searchParams);
      seen.authorizations.push(asked);
      if (asked.client_id !== clientId || asked.code_challenge_method !== "S256" || !asked.nonce || !asked.state) {
        return json(400, { error: "invalid_request" });
      }
      const code = b64(randomBytes(16));
      codes.set(code, asked);
      const back = new URL(asked.redirect_uri);
      back.searchParams.set("code", code);
      back.searchParams.set("state", asked.state);
      response.writeHead(302, { location: back.toString() });
      return response.end();
    }
    if (url.pathname === "/token" && request.method === "POST") {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        const sent = Object.fromEntries(new URLSearchParams(body));
        const asked = codes.get(sent.code);
        codes.delete(sent.code);
        const challenge = asked && b64(createHash("sha256").update(sent.code_verifier ?? "").digest());
        if (
          !asked ||
          challenge !== asked.code_challenge ||
          sent.client_id !== clientId ||
          sent.client_secret !== clientSecret ||
          sent.redirect_uri !== asked.redirect_uri
        ) {
          return json(400, { error: "invalid_grant" });
        }
        seen.exchanges += 1;
        const now = Math.floor(Date.now() / 1000);
        const header = b64(JSON.stringify({ alg: "ES256", typ: "JWT", kid: "k1" }));
        const payload = b64(JSON.stringify({ iss: base, aud: clientId, iat: now, exp: now + 300, nonce: asked.nonce, ...claims }));
        const signature = sign("sha256", Buffer.from(`${header}.${payload}`), { key: privateKey, dsaEncoding: "ieee-p1363" });
        json(200, { access_token: "opaque", token_type: "Bearer", id_token: `${header}.${payload}.${b64(signature)}` });
      });
      return undefined;
    }
    json(404, { error: "not_found" });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  return { base, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}
