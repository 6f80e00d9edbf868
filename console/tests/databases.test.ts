import { describe, expect, it } from "vitest";
import { base64, flatten, formProblems } from "../src/databases";

const credential = (username: string, extra: Record<string, unknown> = {}) => ({
  username,
  hostname: null,
  ai_allowed: false,
  timeout: null,
  reviews_required: 0,
  default_credential: false,
  ...extra,
});

describe("formProblems", () => {
  it("accepts a complete form", () => {
    const db = { name: "Orders", adapter: "postgres", hostname: "db", credentials: [credential("reader", { default_credential: true })] };
    expect(formProblems(db, ["pw"])).toEqual({});
  });

  it("names each missing or clashing field", () => {
    const db = {
      name: " ",
      adapter: "db2",
      hostname: "",
      credentials: [credential("a"), credential("a", { id: "crd_1" }), credential("", { id: "crd_2" })],
    };
    expect(formProblems(db, ["", "", ""])).toEqual({
      name: "A name is required.",
      adapter: "Pick an adapter.",
      hostname: "A host is required.",
      "credentials.0.password": "A new credential needs its password.",
      "credentials.1.username": "Usernames must be unique.",
      "credentials.2.username": "A username is required.",
      default_credential: "Mark exactly one credential as the default.",
    });
  });

  it("keeps a stored credential's password unchanged when left blank", () => {
    const db = { name: "Orders", adapter: "mysql", hostname: "db", credentials: [credential("reader", { id: "crd_1", default_credential: true })] };
    expect(formProblems(db, [""])).toEqual({});
  });

  it("needs at least one credential", () => {
    expect(formProblems({ name: "x", adapter: "oracle", hostname: "h", credentials: [] }, [])).toEqual({ credentials: "Add at least one credential." });
  });
});

describe("base64", () => {
  it("encodes UTF-8 text as TLS material travels", () => {
    expect(base64("-----BEGIN CERTIFICATE-----\né")).toBe("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCsOp");
  });
});

describe("flatten", () => {
  it("gathers every message of a refusal, in order", () => {
    expect(flatten({ query: ["can read ssn: REVOKE SELECT (ssn) ON t FROM r", "is a member of pg_monitor"], other: { deep: [1] } })).toEqual([
      "can read ssn: REVOKE SELECT (ssn) ON t FROM r",
      "is a member of pg_monitor",
      "1",
    ]);
    expect(flatten(null)).toEqual([]);
  });
});
