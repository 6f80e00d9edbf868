import { describe, expect, it } from "vitest";
import { nodeLine, planOf } from "../src/plan";

const plan = [{ Plan: { "Node Type": "Hash Join", "Total Cost": 12.5, "Plan Rows": 40, Plans: [{ "Node Type": "Seq Scan", "Relation Name": "orders", Alias: "o", "Plan Rows": 100 }] } }];

describe("a JSON plan", () => {
  it("is found in one QUERY PLAN column of one row, as JSON or as its text", () => {
    expect(planOf([{ name: "QUERY PLAN", type: "json" }], [[plan]])?.["Node Type"]).toBe("Hash Join");
    expect(planOf([{ name: "QUERY PLAN", type: "json" }], [[JSON.stringify(plan)]])?.["Node Type"]).toBe("Hash Join");
    expect(planOf([{ name: "QUERY PLAN", type: "text" }], [["Seq Scan"]])).toBeNull();
    expect(planOf([{ name: "QUERY PLAN", type: "json" }], [[plan], [plan]])).toBeNull();
  });

  it("says each node in a line", () => {
    expect(nodeLine(plan[0]!.Plan)).toBe("Hash Join · cost 12.5 · 40 rows");
    expect(nodeLine(plan[0]!.Plan.Plans[0]!)).toBe("Seq Scan on orders o · 100 rows");
  });
});
