import { describe, expect, it } from "vitest";
import { compareValues, csvField, fileName, isNumericType, rangeTsv, rowTsv, toCsv, toJson, viewOrder, widthOf } from "../src/grid-model";

const rows: unknown[][] = [
  [3, "b", null],
  [null, "a\tx", true],
  [10, "c", false],
  [1, "B", "10"],
  [2, null, "9"],
];

describe("the grid's order of rows", () => {
  it("sorts numbers by value and NULL last both ways, stably", () => {
    expect([...viewOrder(rows, "", { col: 0, direction: "ascending", numeric: true })]).toEqual([3, 4, 0, 2, 1]);
    expect([...viewOrder(rows, "", { col: 0, direction: "descending", numeric: true })]).toEqual([2, 0, 4, 3, 1]);
    expect([...viewOrder(rows, "", { col: 1, direction: "ascending", numeric: false })]).toEqual([3, 1, 0, 2, 4]);
  });

  it("sorts numbers kept as text by value in a numeric column", () => {
    expect([...viewOrder(rows, "", { col: 2, direction: "ascending", numeric: true })].slice(0, 2)).toEqual([4, 3]);
  });

  it("filters on any value's text, case aside, then sorts what is left", () => {
    expect([...viewOrder(rows, " b ", null)]).toEqual([0, 3]);
    expect([...viewOrder(rows, "b", { col: 0, direction: "descending", numeric: true })]).toEqual([0, 3]);
    expect([...viewOrder(rows, "nothing", null)]).toEqual([]);
    expect([...viewOrder(rows, "", null)]).toEqual([0, 1, 2, 3, 4]);
  });

  it("compares mixed values without throwing", () => {
    expect(compareValues(null, 1)).toBe(1);
    expect(compareValues(false, true)).toBeLessThan(0);
    expect(compareValues({ a: 1 }, "{")).toBeGreaterThan(0);
  });
});

describe("copying a range", () => {
  it("is TSV of the shown rows between the two cells, whichever way it was drawn", () => {
    const order = viewOrder(rows, "", { col: 0, direction: "ascending", numeric: true });
    expect(rangeTsv(rows, order, { row: 1, col: 1 }, { row: 0, col: 0 })).toBe("1\tB\n2\t");
    expect(rangeTsv(rows, order, { row: 4, col: 1 }, { row: 4, col: 2 })).toBe("a x\ttrue");
    expect(rowTsv(["a\nb", null, 1])).toBe("a b\t\t1");
  });
});

describe("columns", () => {
  it("knows number types of each adapter", () => {
    for (const type of ["int4", "int8", "numeric", "float8", "bigint", "decimal", "UInt64", "Float64", "Nullable(Int32)", "NUMBER", "double precision"]) {
      expect(isNumericType(type), type).toBe(true);
    }
    for (const type of ["text", "timestamptz", "varchar", "String", "uuid", "interval"]) {
      expect(isNumericType(type), type).toBe(false);
    }
  });

  it("starts wide enough for a timestamp, and never too wide", () => {
    const ts = widthOf({ name: "at", type: "timestamptz" }, 0, [["2025-01-01T00:00:00.000000Z"]]);
    expect(ts).toBeGreaterThan(27 * 7.8);
    expect(widthOf({ name: "x", type: "text" }, 0, [["y".repeat(5000)]])).toBeLessThanOrEqual(34 * 7.8 + 18);
  });
});

describe("downloads of the shown rows", () => {
  const columns = [
    { name: "a", type: "text" },
    { name: "n", type: "int4" },
    { name: "a", type: "text" },
  ];
  const shown: unknown[][] = [
    ["=HYPERLINK(\"x\")", -5, "x,y"],
    ["plain", 3, null],
    ["+1", null, "@me"],
  ];

  it("writes CSV as the values are, quoted where needed", () => {
    expect(toCsv(columns, shown)).toBe('a,n,a\r\n"=HYPERLINK(""x"")",-5,"x,y"\r\nplain,3,\r\n+1,,@me\r\n');
  });

  it("neutralises formulas for spreadsheets, and leaves numbers alone", () => {
    expect(toCsv(columns, shown, true)).toBe('a,n,a\r\n"\'=HYPERLINK(""x"")",-5,"x,y"\r\nplain,3,\r\n\'+1,,\'@me\r\n');
    expect(csvField("-5", true)).toBe("'-5");
    expect(csvField(-5, true)).toBe("-5");
  });

  it("writes JSON objects by column, a repeated name numbered", () => {
    expect(JSON.parse(toJson(columns, shown))[1]).toEqual({ a: "plain", n: 3, a_2: null });
  });

  it("names the file after the query and the time", () => {
    expect(fileName("Monthly revenue: <EU>", new Date(2026, 11, 7, 18, 6, 13), "csv")).toBe("monthly-revenue-eu-2026-12-07-180613.csv");
    expect(fileName("!!!", new Date(2026, 0, 2, 3, 4, 5), "json")).toBe("query-2026-01-02-030405.json");
  });
});
