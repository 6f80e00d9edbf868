import { describe, expect, it } from "vitest";
import { when } from "../src/clock";

describe("the one clock", () => {
  it("writes every time in one format with its zone", () => {
    expect(when("2026-12-07T17:06:13.391184Z", "UTC")).toBe("2026-12-07 17:06:13 UTC");
    expect(when("2026-12-07T17:06:13Z", "Europe/Paris")).toBe("2026-12-07 18:06:13 GMT+1");
    expect(when("2026-07-01T23:30:00Z", "America/New_York")).toBe("2026-07-01 19:30:00 EDT");
  });

  it("leaves what is no time as it is", () => {
    expect(when(null)).toBe("");
    expect(when("soon", "UTC")).toBe("soon");
  });
});
