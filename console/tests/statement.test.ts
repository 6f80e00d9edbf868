import { describe, expect, it } from "vitest";
import { runnableSpan, statementSpans } from "../src/statement";

const run = (text: string, from: number, to = from) => {
  const span = runnableSpan(text, { from, to });
  return span ? text.slice(span.from, span.to) : null;
};

describe("statementSpans", () => {
  it("splits at semicolons outside strings, identifiers, comments and dollar quotes", () => {
    const text = "select ';' as a; select \"x;y\" from t -- ;\n; select $$ a; b $$; /* ; */ select 4";
    const parts = statementSpans(text).map((s) => text.slice(s.from, s.to).trim());
    expect(parts).toEqual(["select ';' as a", 'select "x;y" from t -- ;', "select $$ a; b $$", "/* ; */ select 4"]);
  });

  it("keeps doubled quotes and backslash escapes inside literals", () => {
    const text = "select 'it''s; fine'; select 'a\\'; b'";
    expect(statementSpans(text).length).toBe(2);
  });
});

describe("runnableSpan", () => {
  const text = "select 1;\n\nselect 2\n  from t;\nselect 3";
  it("runs the statement under the cursor", () => {
    expect(run(text, 3)).toBe("select 1");
    expect(run(text, text.indexOf("from"))).toBe("select 2\n  from t");
    expect(run(text, text.length)).toBe("select 3");
  });

  it("runs the statement before the cursor from the blank after its semicolon", () => {
    expect(run("select 1;   ", 12)).toBe("select 1");
    expect(run(text, 9)).toBe("select 1");
  });

  it("runs the selection when there is one, trimmed", () => {
    expect(run(text, 0, 20)).toBe("select 1;\n\nselect 2");
  });

  it("answers null for a blank editor", () => {
    expect(run("   \n ", 2)).toBeNull();
    expect(run("", 0)).toBeNull();
  });
});
