// Which text Mod-Enter runs: the selection, or else the statement under the cursor. Statements
// end at a `;` outside a string literal, a quoted identifier, a comment or a `$$` string.

export interface Span {
  from: number;
  to: number;
}

/** The spans of the statements of `text` (each without its `;`), in order. */
export function statementSpans(text: string): Span[] {
  const spans: Span[] = [];
  let start = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "'" || c === '"' || c === "`") {
      i += 1;
      while (i < n) {
        if (text[i] === c) {
          if (text[i + 1] === c) {
            i += 2;
            continue;
          }
          break;
        }
        if (text[i] === "\\" && c === "'") i += 1;
        i += 1;
      }
      i += 1;
    } else if (c === "-" && next === "-") {
      while (i < n && text[i] !== "\n") i += 1;
    } else if (c === "#") {
      while (i < n && text[i] !== "\n") i += 1;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === "$") {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i));
      if (tag) {
        const end = text.indexOf(tag[0], i + tag[0].length);
        i = end < 0 ? n : end + tag[0].length;
      } else i += 1;
    } else if (c === ";") {
      spans.push({ from: start, to: i });
      i += 1;
      start = i;
    } else i += 1;
  }
  spans.push({ from: start, to: n });
  return spans;
}

function trimmed(text: string, span: Span): Span {
  let { from, to } = span;
  while (from < to && /\s/.test(text[from] ?? "")) from += 1;
  while (to > from && /\s/.test(text[to - 1] ?? "")) to -= 1;
  return { from, to };
}

/**
 * The span to run: the selection when there is one, else the statement the cursor is in (or,
 * from the blank after a statement's `;`, that statement), trimmed; `null` when it is blank.
 */
export function runnableSpan(text: string, selection: Span): Span | null {
  if (selection.to > selection.from) {
    const span = trimmed(text, selection);
    return span.to > span.from ? span : null;
  }
  const cursor = selection.from;
  const spans = statementSpans(text).map((span) => ({ raw: span, trim: trimmed(text, span) }));
  const inside = spans.find(({ raw }) => cursor >= raw.from && cursor <= raw.to);
  // On the line of a statement's `;`, after it, the cursor still means that statement.
  const sameLineAsEnd =
    inside !== undefined && cursor <= inside.trim.from && !text.slice(inside.raw.from, cursor).includes("\n");
  if (inside && inside.trim.to > inside.trim.from && !(sameLineAsEnd && inside.raw.from > 0)) return inside.trim;
  const before = spans.filter(({ trim }) => trim.to > trim.from && trim.to <= cursor).pop();
  return before ? before.trim : null;
}
