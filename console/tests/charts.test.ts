import { describe, expect, it } from "vitest";
import { formatNumber, isTimeType, numberOf, planOf, pointName, timeOf, timeTicks } from "../src/chart-model";
import { mayEdit, nudged, parseMembers, placed, pruned, readingOrder, type Presentation } from "../src/presentation";
import type { Me } from "../src/api";
import { placeholders } from "../src/dashboard-editor";

const columns = [
  { name: "status", type: "text" },
  { name: "orders", type: "int8" },
  { name: "amount", type: "numeric" },
];
const rows = [
  ["paid", 12, "10.5"],
  ["new", 5, "2"],
  ["paid", 3, null],
];

describe("what a display draws", () => {
  it("draws one point per row and per series, never aggregating", () => {
    const plan = planOf({ kind: "bar" }, columns, rows);
    if (!plan.ok || plan.plan.kind === "number") throw new Error(JSON.stringify(plan));
    expect(plan.plan.labels).toEqual(["paid", "new", "paid"]);
    expect(plan.plan.datasets.map((d) => d.name)).toEqual(["orders", "amount"]);
    expect(plan.plan.datasets[0]?.points.map((p) => [p.row, p.value])).toEqual([
      [0, 12],
      [1, 5],
      [2, 3],
    ]);
    // A NULL is no point.
    expect(plan.plan.datasets[1]?.points.map((p) => p.row)).toEqual([0, 1]);
  });

  it("splits a series by a grouping column, rows of one label sharing its place", () => {
    const plan = planOf({ kind: "line", x: "status", series: ["orders"], group: "amount" }, columns, [
      ["a", 1, "x"],
      ["a", 2, "y"],
      ["b", 3, "x"],
    ]);
    if (!plan.ok || plan.plan.kind === "number") throw new Error(JSON.stringify(plan));
    expect(plan.plan.labels).toEqual(["a", "b"]);
    expect(plan.plan.datasets.map((d) => [d.name, d.points.map((p) => p.x)])).toEqual([
      ["x", [0, 1]],
      ["y", [0]],
    ]);
  });

  it("puts dates on a time axis", () => {
    const plan = planOf({ kind: "line" }, [{ name: "day", type: "date" }, { name: "n", type: "int4" }], [
      ["2026-12-01", 1],
      ["2026-12-02 06:00:00", 2],
    ]);
    if (!plan.ok || plan.plan.kind === "number") throw new Error(JSON.stringify(plan));
    expect(plan.plan.time).toBe(true);
    expect(plan.plan.datasets[0]?.points.map((p) => p.x)).toEqual([Date.UTC(2026, 11, 1), Date.UTC(2026, 11, 2, 6)]);
    expect(isTimeType("Nullable(DateTime64(3))")).toBe(true);
    expect(isTimeType("timestamp with time zone")).toBe(true);
    expect(isTimeType("text")).toBe(false);
    expect(timeOf("2026-12-01T10:00:00+01:00")).toBe(Date.UTC(2026, 11, 1, 9));
    expect(timeOf("soon")).toBeNull();
  });

  it("says why columns don't fit", () => {
    const missing = planOf({ kind: "bar", x: "nope" }, columns, rows);
    expect(missing.ok ? "" : missing.why).toMatch(/nope/);
    const text = planOf({ kind: "bar", series: ["status"] }, columns, rows);
    expect(text.ok ? "" : text.why).toMatch(/not numbers.*status/);
    const pie = planOf({ kind: "pie", series: ["orders", "amount"] }, columns, rows);
    expect(pie.ok ? "" : pie.why).toMatch(/one numeric column/);
    const none = planOf({ kind: "number" }, columns, []);
    expect(none.ok ? "" : none.why).toMatch(/no row/);
  });

  it("compares a single number with a second column of its row", () => {
    const plan = planOf({ kind: "number", series: ["orders"], compare: "amount" }, columns, rows);
    if (!plan.ok || plan.plan.kind !== "number") throw new Error(JSON.stringify(plan));
    expect(plan.plan.value).toBe(12);
    expect(plan.plan.compare?.difference).toBeCloseTo(1.5);
    expect(plan.plan.compare?.percent).toBeCloseTo((1.5 / 10.5) * 100);
  });

  it("writes numbers as the format says, and names points by series, label and value", () => {
    expect(formatNumber(1234.5, { decimals: 2, unit: "€" }, "en")).toBe("1,234.50 €");
    expect(formatNumber(0.256, { percent: true, decimals: 1 }, "en")).toBe("25.6%");
    expect(formatNumber(1234567, { separators: false }, "en")).toBe("1234567");
    expect(numberOf("1e3")).toBe(1000);
    expect(numberOf("12 apples")).toBeNull();
    expect(pointName({ row: 0, series: "orders", label: "<b>paid</b>", x: 0, value: 12 }, undefined, "en")).toBe("orders, <b>paid</b>: 12");
  });

  it("puts time ticks on round times", () => {
    const day = 86_400_000;
    const ticks = timeTicks(Date.UTC(2026, 10, 30, 13), Date.UTC(2026, 11, 7, 13));
    expect(ticks.every((t) => t % day === 0)).toBe(true);
    expect(ticks.length).toBeLessThanOrEqual(8);
  });
});

describe("the presentation's layout and people", () => {
  it("places panels without a place full width below the placed ones, in reading order", () => {
    const layouts = placed(["a", "b", "c"], { b: { layout: { x: 6, y: 0, w: 6, h: 4 } }, c: { layout: { x: 0, y: 0, w: 6, h: 3 } } });
    expect(layouts.get("a")).toEqual({ x: 0, y: 4, w: 12, h: 5 });
    expect(readingOrder(layouts)).toEqual(["c", "b", "a"]);
    expect(placed(["x"], { x: { layout: { x: 10, y: -2, w: 6, h: 99 } } }).get("x")).toEqual({ x: 6, y: 0, w: 6, h: 24 });
  });

  it("moves and resizes within the grid", () => {
    const layout = { x: 0, y: 0, w: 4, h: 3 };
    expect(nudged(layout, -1, -1)).toEqual(layout);
    expect(nudged(layout, 20, 2)).toEqual({ x: 8, y: 2, w: 4, h: 3 });
    expect(nudged({ x: 8, y: 0, w: 4, h: 3 }, 0, 0, 2, 0)).toEqual({ x: 6, y: 0, w: 6, h: 3 });
  });

  it("keeps only the panels and inputs still there", () => {
    const doc: Presentation = {
      editors: [],
      viewers: [],
      panels: { a: { layout: { x: 0, y: 0, w: 1, h: 1 } }, gone: { display: { kind: "bar" } }, bare: {} },
      inputs: { k: { type: "date" }, old: { type: "text" } },
    };
    const kept = pruned(doc, ["a", "bare"], ["k"]);
    expect(Object.keys(kept.panels)).toEqual(["a"]);
    expect(Object.keys(kept.inputs)).toEqual(["k"]);
  });

  it("reads editors one per line and tells who may edit", () => {
    expect(parseMembers(" ann@example.com \n\ngroup: Ops\nuser:bo")).toEqual([
      { kind: "user", name: "ann@example.com" },
      { kind: "group", name: "Ops" },
      { kind: "user", name: "bo" },
    ]);
    const me = (user: string, groups: string[], manage = false): Me => ({
      user,
      groups,
      role: "member",
      agent: false,
      scope: "query",
      may: { query: true, review: true, bypass_reviews: false, manage_databases: false, manage_dashboards: manage, make_dashboards: true, read_audit: false },
    });
    const doc: Presentation = { editors: [{ kind: "group", name: "OPS" }, { kind: "user", name: "Ann@Example.com" }], viewers: [], panels: {}, inputs: {} };
    expect(mayEdit(me("ann@example.com", []), doc)).toBe(true);
    expect(mayEdit(me("cy@example.com", ["ops"]), doc)).toBe(true);
    expect(mayEdit(me("bo@example.com", ["sales"]), doc)).toBe(false);
    expect(mayEdit(me("bo@example.com", [], true), doc)).toBe(true);
  });

  it("leaves the time range's own keys out of a query's declared inputs", () => {
    expect(placeholders("select ${a} where t between ${__from} and ${__to} and ${a}")).toEqual(["a"]);
  });
});
