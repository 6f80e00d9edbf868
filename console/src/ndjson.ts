// Reading a run's NDJSON answer as it arrives: a line of columns, a line per row, a last line
// with the outcome (or an error after rows, which never looks like success); a panel run asked
// for row tokens has a token line after each row.

export interface Column {
  name: string;
  type: string;
  encoding?: string;
}

export interface Outcome {
  row_count: number;
  /** The rows a write changed, when the database said. */
  affected_rows?: number | null;
  truncated: boolean;
  duration_ms: number;
  error?: { detail: string };
}

export type Line =
  | { kind: "columns"; columns: Column[] }
  | { kind: "row"; row: unknown[] }
  | { kind: "token"; token: string | null }
  | { kind: "end"; outcome: Outcome };

/** Splits text that arrives in chunks into whole lines; the rest waits for the next chunk. */
export class LineSplitter {
  private rest = "";

  push(chunk: string): string[] {
    const text = this.rest + chunk;
    const lines = text.split("\n");
    this.rest = lines.pop() ?? "";
    return lines.filter((line) => line.trim() !== "");
  }

  /** What is left at the end of the stream (a last line without its newline). */
  finish(): string[] {
    const rest = this.rest;
    this.rest = "";
    return rest.trim() === "" ? [] : [rest];
  }
}

/** One line of the answer, classified. A line that is not JSON is an error. */
export function parseLine(line: string): Line {
  const value: unknown = JSON.parse(line);
  if (Array.isArray(value)) return { kind: "row", row: value };
  if (value && typeof value === "object") {
    const object = value as Record<string, unknown>;
    if (Array.isArray(object.columns)) return { kind: "columns", columns: object.columns as Column[] };
    // A panel run's row token: it belongs to the row line before it.
    if ("row_token" in object) return { kind: "token", token: typeof object.row_token === "string" ? object.row_token : null };
    if ("row_count" in object || "error" in object) return { kind: "end", outcome: object as unknown as Outcome };
  }
  throw new Error(`unexpected line in the result: ${line.slice(0, 80)}`);
}

/**
 * Reads `body` and calls `onLines` with each batch of lines as it arrives (one batch per chunk
 * the network hands over, so the grid paints once per chunk, not once per row).
 */
export async function readNdjson(
  body: ReadableStream<Uint8Array>,
  onLines: (lines: Line[]) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const splitter = new LineSplitter();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = splitter.push(decoder.decode(value, { stream: true }));
    if (lines.length > 0) onLines(lines.map(parseLine));
  }
  const last = splitter.push(decoder.decode()).concat(splitter.finish());
  if (last.length > 0) onLines(last.map(parseLine));
}

/** What a run's end says to a person: the summary line, an error, and the truncation notice
 * (empty when none). `end` is null when the answer was cut before its last line. */
export function outcomeText(end: Outcome | null, rowsSoFar: number, ms: number, more: string): { summary: string; error: string; notice: string } {
  if (!end) return { summary: "", error: "The result ended early: the connection was cut.", notice: "" };
  if (end.error) return { summary: `${rowsSoFar.toLocaleString("en")} rows before the error`, error: end.error.detail, notice: "" };
  const rows = end.row_count === 1 ? "1 row" : `${end.row_count.toLocaleString("en")} rows`;
  // A write that returned no rows says what it changed instead.
  const changed = end.affected_rows !== undefined && end.affected_rows !== null && end.row_count === 0 ? changedText(end.affected_rows) : rows;
  return {
    summary: `${changed} in ${ms.toLocaleString("en")} ms`,
    error: "",
    notice: end.truncated ? `Truncated at ${end.row_count.toLocaleString("en")} rows: ${more}` : "",
  };
}

/** "1 row changed", "3 rows changed". */
export function changedText(affected: number): string {
  return affected === 1 ? "1 row changed" : `${affected.toLocaleString("en")} rows changed`;
}
