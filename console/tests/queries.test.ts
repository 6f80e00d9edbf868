import { afterEach, describe, expect, it } from "vitest";
import { looksLikeWrite } from "../src/queries";

describe("the confirmation before a query runs", () => {
  it("calls a statement a write unless its first word is a read's, past comments", () => {
    expect(looksLikeWrite("select 1")).toBe(false);
    expect(looksLikeWrite("  -- why\n/* note */ SELECT * FROM t")).toBe(false);
    expect(looksLikeWrite("(select 1)")).toBe(false);
    expect(looksLikeWrite("EXPLAIN delete from t")).toBe(false);
    expect(looksLikeWrite("update orders set paid = true where id = 4")).toBe(true);
    expect(looksLikeWrite("-- select\nDELETE FROM t")).toBe(true);
    expect(looksLikeWrite("insert into t values (1)")).toBe(true);
  });
});

/** The browser's storage, as a map (the tests run in node). */
function storage(): Storage {
  const kept = new Map<string, string>();
  return {
    get length() {
      return kept.size;
    },
    clear: () => kept.clear(),
    getItem: (key) => kept.get(key) ?? null,
    key: (index) => [...kept.keys()][index] ?? null,
    removeItem: (key) => void kept.delete(key),
    setItem: (key, value) => void kept.set(key, String(value)),
  };
}

describe("the row limit kept in the browser", () => {
  globalThis.localStorage = storage();
  afterEach(() => localStorage.clear());

  it("is the one chosen last, per user, and 1000 when none or a bad one is kept", async () => {
    const { keptLimit } = await import("../src/query");
    expect(keptLimit("ann")).toBe(1000);
    localStorage.setItem("dbconsole.limit.ann", "250");
    localStorage.setItem("dbconsole.limit.bo", "-3");
    expect(keptLimit("ann")).toBe(250);
    expect(keptLimit("bo")).toBe(1000);
    expect(keptLimit("cy")).toBe(1000);
  });
});
