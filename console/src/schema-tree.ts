// The schema browser beside the editor: the tables and views of the schema endpoint (the one
// completion reads), by schema, each with its columns and types and a "masked" badge where the
// database's data protection masks one (a hidden column is not listed); a filter; a click puts
// a name into the editor; "Preview" runs the first 100 rows, as a query like any other.

import { h, isolated, replace, visible } from "./dom";
import type { Table } from "./editor";

/** `name` as the adapter reads it: bare when it needs no quotes, else quoted (quotes doubled). */
export function quoteIdent(adapter: string, name: string): string {
  switch (adapter) {
    case "postgres":
      return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
    case "oracle":
      return /^[A-Z][A-Z0-9_$#]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
    case "sqlserver":
      return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `[${name.replaceAll("]", "]]")}]`;
    default:
      return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `\`${name.replaceAll("`", "``")}\``;
  }
}

/** A table's name for a statement: with its schema unless it is the adapter's default one. */
export function qualified(adapter: string, table: Pick<Table, "schema" | "table">): string {
  const bare = (adapter === "postgres" && table.schema === "public") || (adapter === "sqlserver" && table.schema === "dbo");
  return bare ? quoteIdent(adapter, table.table) : `${quoteIdent(adapter, table.schema)}.${quoteIdent(adapter, table.table)}`;
}

/** A statement that reads a table's first 100 rows, in the adapter's dialect. */
export function previewStatement(adapter: string, table: Pick<Table, "schema" | "table">): string {
  const name = qualified(adapter, table);
  if (adapter === "sqlserver") return `SELECT TOP 100 * FROM ${name}`;
  if (adapter === "oracle") return `SELECT * FROM ${name} FETCH FIRST 100 ROWS ONLY`;
  return `SELECT * FROM ${name} LIMIT 100`;
}

export interface TreeActions {
  /** Puts `text` into the editor at the cursor. */
  insert: (text: string) => void;
  /** Runs the first 100 rows of `table` (absent: no credential may preview). */
  preview?: (table: Table) => void;
}

export class SchemaTree {
  readonly element: HTMLElement;
  private readonly filter = h("input", { attrs: { type: "search", autocomplete: "off", "aria-label": "Filter tables and columns" } });
  private readonly list = h("div", { class: "tree" });
  private readonly note = h("p", { class: "hint" });
  private tables: Table[] = [];
  private adapter = "";
  private actions: TreeActions = { insert: () => undefined };

  constructor() {
    this.element = h("section", { class: "schema-tree", attrs: { "aria-label": "Tables" } }, h("h2", {}, "Tables"), this.filter, this.note, this.list);
    let timer = 0;
    this.filter.addEventListener("input", () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => this.draw(), 120);
    });
  }

  /** Shows `tables` of a database of `adapter` (`why`: why there are none). */
  show(tables: Table[], adapter: string, actions: TreeActions, why = ""): void {
    this.tables = tables;
    this.adapter = adapter;
    this.actions = actions;
    this.note.textContent = why;
    this.draw();
  }

  private draw(): void {
    const needle = this.filter.value.trim().toLowerCase();
    const bySchema = new Map<string, Table[]>();
    for (const table of this.tables) {
      const columns = table.columns.filter((c) => !needle || c.name.toLowerCase().includes(needle));
      const tableMatches = !needle || table.table.toLowerCase().includes(needle);
      if (!tableMatches && columns.length === 0) continue;
      const shown = { ...table, columns: tableMatches ? table.columns : columns };
      bySchema.set(table.schema, [...(bySchema.get(table.schema) ?? []), shown]);
    }
    const open = needle !== "" || bySchema.size === 1;
    replace(
      this.list,
      ...[...bySchema].map(([schema, tables]) =>
        h(
          "details",
          { class: "schema", attrs: { open } },
          h("summary", {}, isolated(schema), h("span", { class: "count" }, ` ${tables.length}`)),
          h("ul", {}, ...tables.map((table) => this.table(table, needle !== ""))),
        ),
      ),
    );
    if (this.tables.length > 0 && bySchema.size === 0) this.list.append(h("p", {}, "Nothing matches."));
  }

  private table(table: Table, open: boolean): HTMLElement {
    const columns = h("ul", { class: "columns" });
    const drawColumns = () =>
      replace(
        columns,
        ...table.columns.map((column) =>
          h(
            "li",
            {},
            h(
              "button",
              {
                class: "link",
                attrs: { type: "button", title: `Insert ${visible(column.name)}` },
                on: { click: () => this.actions.insert(quoteIdent(this.adapter, column.name)) },
              },
              isolated(column.name),
            ),
            " ",
            column.masked && column.type === "masked" ? "" : h("span", { class: "type" }, visible(column.type)),
            column.masked ? h("span", { class: "masked-badge", attrs: { title: "Masked by the database's data protection" } }, "masked") : "",
          ),
        ),
      );
    const details = h(
      "details",
      { class: "table", attrs: { open } },
      h("summary", {}, isolated(table.table)),
      h(
        "div",
        { class: "table-actions" },
        h(
          "button",
          { class: "link", attrs: { type: "button", "aria-label": `Insert ${visible(table.table)}` }, on: { click: () => this.actions.insert(qualified(this.adapter, table)) } },
          "Insert",
        ),
        this.actions.preview
          ? h(
              "button",
              { class: "link", attrs: { type: "button", "aria-label": `Preview ${visible(table.table)}` }, on: { click: () => this.actions.preview?.(table) } },
              "Preview 100 rows",
            )
          : "",
      ),
      columns,
    );
    // Columns are drawn when a table opens: a catalog of thousands stays quick to show.
    if (open) drawColumns();
    else details.addEventListener("toggle", () => details.open && columns.childElementCount === 0 && drawColumns());
    return h("li", {}, details);
  }
}
