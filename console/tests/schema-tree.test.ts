import { describe, expect, it } from "vitest";
import { previewStatement, qualified, quoteIdent } from "../src/schema-tree";

describe("names the schema browser puts in", () => {
  it("quotes only what needs quotes, in each dialect, doubling the quote", () => {
    expect(quoteIdent("postgres", "orders")).toBe("orders");
    expect(quoteIdent("postgres", "Orders")).toBe('"Orders"');
    expect(quoteIdent("postgres", 'a"b')).toBe('"a""b"');
    expect(quoteIdent("mysql", "order items")).toBe("`order items`");
    expect(quoteIdent("clickhouse", "a`b")).toBe("`a``b`");
    expect(quoteIdent("sqlserver", "a]b")).toBe("[a]]b]");
    expect(quoteIdent("oracle", "ORDERS")).toBe("ORDERS");
    expect(quoteIdent("oracle", "orders")).toBe('"orders"');
  });

  it("qualifies a table but in the default schema, and previews 100 rows in the dialect", () => {
    expect(qualified("postgres", { schema: "public", table: "t" })).toBe("t");
    expect(qualified("postgres", { schema: "sales", table: "t" })).toBe("sales.t");
    expect(previewStatement("sqlserver", { schema: "dbo", table: "t" })).toBe("SELECT TOP 100 * FROM t");
    expect(previewStatement("oracle", { schema: "APP", table: "T" })).toBe("SELECT * FROM APP.T FETCH FIRST 100 ROWS ONLY");
    expect(previewStatement("mysql", { schema: "shop", table: "t" })).toBe("SELECT * FROM shop.t LIMIT 100");
  });
});
