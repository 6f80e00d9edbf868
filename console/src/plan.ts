// PostgreSQL's EXPLAIN (FORMAT JSON) as a collapsible tree: each plan node a disclosure with its
// type, relation, costs and rows, its children inside; every other key listed as text.

import { h, isolated, visible } from "./dom";
import type { Column } from "./ndjson";

interface PlanNode {
  "Node Type"?: string;
  "Relation Name"?: string;
  Alias?: string;
  "Total Cost"?: number;
  "Plan Rows"?: number;
  "Actual Total Time"?: number;
  "Actual Rows"?: number;
  Plans?: PlanNode[];
  [key: string]: unknown;
}

/** The plan of a result, when it is one JSON plan (one `QUERY PLAN` column of type json, one
 * row): its top node; else null. */
export function planOf(columns: Column[], rows: unknown[][]): PlanNode | null {
  if (columns.length !== 1 || columns[0]?.name !== "QUERY PLAN" || !/json/.test(columns[0].type) || rows.length !== 1) return null;
  let value = rows[0]?.[0];
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return null;
    }
  }
  const first = Array.isArray(value) ? (value[0] as { Plan?: PlanNode } | undefined) : undefined;
  return first?.Plan && typeof first.Plan === "object" ? first.Plan : null;
}

/** A node's line: "Hash Join on orders o · cost 12.5 · 40 rows". */
export function nodeLine(node: PlanNode): string {
  const parts = [node["Node Type"] ?? "Node"];
  if (node["Relation Name"]) parts[0] += ` on ${node["Relation Name"]}${node.Alias && node.Alias !== node["Relation Name"] ? ` ${node.Alias}` : ""}`;
  if (typeof node["Total Cost"] === "number") parts.push(`cost ${node["Total Cost"]}`);
  if (typeof node["Actual Total Time"] === "number") parts.push(`${node["Actual Total Time"]} ms`);
  const rows = node["Actual Rows"] ?? node["Plan Rows"];
  if (typeof rows === "number") parts.push(`${rows} rows`);
  return parts.join(" · ");
}

const SHOWN = new Set(["Node Type", "Relation Name", "Alias", "Total Cost", "Plan Rows", "Actual Total Time", "Actual Rows", "Plans"]);

/** The tree of `node`, open to `depth` levels. */
export function planTree(node: PlanNode, depth = 3): HTMLElement {
  const details = Object.entries(node)
    .filter(([key]) => !SHOWN.has(key))
    .map(([key, value]) => h("li", {}, h("span", { class: "key" }, `${key}: `), isolated(typeof value === "string" ? value : JSON.stringify(value))));
  return h(
    "details",
    { class: "plan-node", attrs: { open: depth > 0 } },
    h("summary", {}, visible(nodeLine(node))),
    details.length ? h("ul", { class: "plan-details" }, ...details) : "",
    ...(node.Plans ?? []).map((child) => planTree(child, depth - 1)),
  );
}
