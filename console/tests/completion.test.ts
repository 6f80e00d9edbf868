import { describe, expect, it } from "vitest";
import { completionOf } from "../src/editor";

const col = (name: string) => ({ name, type: "text", nullable: true });

describe("completionOf", () => {
  it("completes bare table names when every table sits in one schema", () => {
    expect(completionOf("postgres", [{ schema: "public", table: "users", columns: [col("id"), col("email")] }])).toEqual({
      schema: { users: ["id", "email"] },
    });
  });

  it("qualifies tables by schema when there are several, the default schema completing bare", () => {
    const tables = [
      { schema: "public", table: "users", columns: [col("id")] },
      { schema: "billing", table: "invoices", columns: [col("total")] },
    ];
    expect(completionOf("postgres", tables)).toEqual({
      schema: { "public.users": ["id"], "billing.invoices": ["total"] },
      defaultSchema: "public",
    });
    expect(completionOf("mysql", tables).defaultSchema).toBeUndefined();
  });
});
