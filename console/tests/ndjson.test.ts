import { describe, expect, it } from "vitest";
import { LineSplitter, parseLine, readNdjson, type Line } from "../src/ndjson";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

describe("LineSplitter", () => {
  it("joins lines cut across chunks and keeps the rest for later", () => {
    const splitter = new LineSplitter();
    expect(splitter.push('{"colu')).toEqual([]);
    expect(splitter.push('mns":[]}\n[1]\n[2')).toEqual(['{"columns":[]}', "[1]"]);
    expect(splitter.push("]\n")).toEqual(["[2]"]);
    expect(splitter.finish()).toEqual([]);
  });

  it("hands over a last line without its newline at the end", () => {
    const splitter = new LineSplitter();
    expect(splitter.push('[1]\n{"row_count":1}')).toEqual(["[1]"]);
    expect(splitter.finish()).toEqual(['{"row_count":1}']);
  });
});

describe("parseLine", () => {
  it("tells columns, rows and the end apart", () => {
    expect(parseLine('{"columns":[{"name":"a","type":"int4"}]}').kind).toBe("columns");
    expect(parseLine('[null,"NULL"]')).toEqual({ kind: "row", row: [null, "NULL"] });
    expect(parseLine('{"row_count":0,"truncated":false,"duration_ms":1}').kind).toBe("end");
    expect(parseLine('{"row_count":1,"truncated":false,"duration_ms":1,"error":{"detail":"boom"}}')).toMatchObject({
      kind: "end",
      outcome: { error: { detail: "boom" } },
    });
  });

  it("refuses a line that is not a result line", () => {
    expect(() => parseLine('{"other":1}')).toThrow();
    expect(() => parseLine("not json")).toThrow();
  });
});

describe("readNdjson", () => {
  it("reads a stream cut anywhere, multi-byte characters included, in batches", async () => {
    const whole = '{"columns":[{"name":"é","type":"text"}]}\n["日本"]\n["ü"]\n{"row_count":2,"truncated":true,"duration_ms":3}\n';
    const bytes = new TextEncoder().encode(whole);
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += 5) chunks.push(bytes.slice(i, i + 5));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const seen: Line[] = [];
    let batches = 0;
    await readNdjson(stream, (lines) => {
      batches += 1;
      seen.push(...lines);
    });
    expect(seen.map((l) => l.kind)).toEqual(["columns", "row", "row", "end"]);
    expect(seen[1]).toEqual({ kind: "row", row: ["日本"] });
    expect(batches).toBeGreaterThan(1);
    expect(batches).toBeLessThanOrEqual(chunks.length);
  });

  it("reads a last line without a newline", async () => {
    const seen: Line[] = [];
    await readNdjson(streamOf(['{"columns":[]}\n{"row_count":0,"truncated":false,"duration_ms":0}']), (l) => seen.push(...l));
    expect(seen.map((l) => l.kind)).toEqual(["columns", "end"]);
  });
});
