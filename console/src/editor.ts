// The SQL editor: CodeMirror 6 with the adapter's dialect, completion of keywords and of the
// schema's tables and columns, and Mod-Enter to run. Its style elements carry the page's CSP
// nonce (EditorView.cspNonce), so the policy needs no 'unsafe-inline'.

import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { MSSQL, MySQL, PLSQL, PostgreSQL, StandardSQL, sql, type SQLDialect } from "@codemirror/lang-sql";
import { HighlightStyle, bracketMatching, syntaxHighlighting } from "@codemirror/language";
import { tags } from "@lezer/highlight";
import { Compartment, EditorState, Prec } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  MatchDecorator,
  ViewPlugin,
  drawSelection,
  highlightActiveLine,
  keymap,
  lineNumbers,
  placeholder,
  type DecorationSet,
  type ViewUpdate,
} from "@codemirror/view";
import type { Span } from "./statement";

/** Token colours with at least 4.5:1 contrast on white (and on the active line). */
/** The words shown beside a completion for its kind. */
const KINDS: Record<string, string> = {
  keyword: "key",
  type: "table",
  class: "table",
  property: "column",
  namespace: "schema",
  function: "fn",
  variable: "var",
  constant: "const",
};

function kindBadge(type: string | undefined): Node {
  const badge = document.createElement("span");
  badge.className = "cm-kind";
  badge.setAttribute("aria-hidden", "true");
  badge.textContent = KINDS[type ?? ""] ?? (type ?? "");
  return badge;
}

const highlight = HighlightStyle.define([
  { tag: tags.keyword, color: "var(--sql-keyword)", fontWeight: "600" },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--sql-string)" },
  { tag: [tags.number, tags.bool, tags.null], color: "var(--sql-number)" },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: "var(--sql-comment)", fontStyle: "italic" },
  { tag: [tags.typeName, tags.standard(tags.name)], color: "var(--sql-type)" },
  { tag: [tags.operator, tags.punctuation, tags.bracket], color: "var(--sql-operator)" },
  { tag: [tags.name, tags.propertyName, tags.special(tags.name)], color: "var(--fg)" },
]);

export function dialectOf(adapter: string): SQLDialect {
  switch (adapter) {
    case "postgres":
      return PostgreSQL;
    case "mysql":
      return MySQL;
    case "sqlserver":
      return MSSQL;
    case "oracle":
      return PLSQL;
    default:
      return StandardSQL;
  }
}

/** The nonce the server put in the page for this response. */
export function cspNonce(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content ?? "";
}

export interface Table {
  schema: string;
  table: string;
  columns: { name: string; type: string; nullable: boolean; masked?: boolean }[];
}

export interface Completion {
  schema: Record<string, string[]>;
  defaultSchema?: string;
}

/**
 * What the editor completes from a database's tables: plain table names when they all sit in
 * one schema, else `schema.table` (with the adapter's default schema also completing bare).
 */
export function completionOf(adapter: string, tables: Table[]): Completion {
  const schemas = new Set(tables.map((t) => t.schema));
  const several = schemas.size > 1;
  const schema: Record<string, string[]> = {};
  for (const t of tables) {
    schema[several ? `${t.schema}.${t.table}` : t.table] = t.columns.map((c) => c.name);
  }
  const preferred = adapter === "postgres" ? "public" : adapter === "sqlserver" ? "dbo" : undefined;
  return several && preferred && schemas.has(preferred) ? { schema, defaultSchema: preferred } : { schema };
}

/** A panel's input placeholders, `${key}`, marked in the text (class `cm-input`). */
const inputMarks = new MatchDecorator({
  regexp: /\$\{[A-Za-z0-9_.-]+\}/g,
  decoration: Decoration.mark({ class: "cm-input", attributes: { title: "A panel input: bound as a parameter" } }),
});

const markInputs = ViewPlugin.fromClass(
  class {
    decorations: DecorationSet;
    constructor(view: EditorView) {
      this.decorations = inputMarks.createDeco(view);
    }
    update(update: ViewUpdate) {
      this.decorations = inputMarks.updateDeco(update, this.decorations);
    }
  },
  { decorations: (plugin) => plugin.decorations },
);

export interface EditorOptions {
  /** The editor's accessible name ("SQL editor"). */
  label?: string;
  /** Whether `${key}` placeholders are marked (a panel's query). */
  inputs?: boolean;
  /** Formats the statement (Shift-Alt-F). */
  onFormat?: () => void;
}

export class SqlEditor {
  readonly view: EditorView;
  private readonly language = new Compartment();

  constructor(parent: HTMLElement, doc: string, onRun: () => void, onChange: (text: string) => void, options: EditorOptions = {}) {
    this.view = new EditorView({
      parent,
      state: EditorState.create({
        doc,
        extensions: [
          EditorView.cspNonce.of(cspNonce()),
          lineNumbers(),
          history(),
          drawSelection(),
          highlightActiveLine(),
          bracketMatching(),
          closeBrackets(),
          // The kind of each completion as a short word: the default icons are glyphs many
          // fonts lack (an empty box).
          autocompletion({
            icons: false,
            addToOptions: [{ render: (completion) => kindBadge(completion.type), position: 20 }],
          }),
          syntaxHighlighting(highlight),
          this.language.of(sql({ dialect: StandardSQL })),
          placeholder("select …"),
          Prec.highest(
            keymap.of([
              { key: "Mod-Enter", run: () => (onRun(), true) },
              { key: "Shift-Alt-f", run: () => (options.onFormat?.(), options.onFormat !== undefined) },
            ]),
          ),
          keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap]),
          EditorView.contentAttributes.of({ "aria-label": options.label ?? "SQL editor", "aria-multiline": "true", tabindex: "0" }),
          options.inputs ? markInputs : [],
          EditorView.updateListener.of((update) => {
            if (update.docChanged) onChange(update.state.doc.toString());
          }),
        ],
      }),
    });
  }

  /** The adapter's dialect, and the schema's tables and columns for completion. */
  configure(adapter: string, completion: Completion = { schema: {} }): void {
    this.view.dispatch({
      effects: this.language.reconfigure(
        sql({ dialect: dialectOf(adapter), schema: completion.schema, defaultSchema: completion.defaultSchema, upperCaseKeywords: false }),
      ),
    });
  }

  get text(): string {
    return this.view.state.doc.toString();
  }

  set text(value: string) {
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: value } });
  }

  get selection(): Span {
    const main = this.view.state.selection.main;
    return { from: main.from, to: main.to };
  }

  focus(): void {
    this.view.focus();
  }

  /** Puts the cursor at `offset` (a character of the text, from 0), scrolled into view, and
   * answers its line and column (from 1). */
  markAt(offset: number): { line: number; column: number } {
    const at = Math.max(0, Math.min(offset, this.view.state.doc.length));
    const line = this.view.state.doc.lineAt(at);
    this.view.dispatch({ selection: { anchor: at, head: Math.min(at + 1, line.to) }, scrollIntoView: true });
    this.view.focus();
    return { line: line.number, column: at - line.from + 1 };
  }

  /** Replaces the text from `from` to `to` with `text` (one undo step). */
  replaceRange(from: number, to: number, text: string): void {
    this.view.dispatch({ changes: { from, to, insert: text }, selection: { anchor: from, head: from + text.length } });
  }

  /** Puts `text` in place of the selection, the cursor after it, and takes the focus. */
  insert(text: string): void {
    const { from, to } = this.view.state.selection.main;
    this.view.dispatch({ changes: { from, to, insert: text }, selection: { anchor: from + text.length } });
    this.view.focus();
  }
}
