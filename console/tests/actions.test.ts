import { describe, expect, it } from "vitest";
import { actionLabel, actionState, promptLabel, promptedMappings, shownActions, triggerable } from "../src/actions";
import type { Action, InputMapping } from "../src/api";
import { parseLine } from "../src/ndjson";

function action(id: string, label: string | null, workflow: string | null, mappings: InputMapping[] = []): Action {
  return { id, label, workflow_id: workflow, input_mappings: mappings };
}

function column(name: string): InputMapping {
  return { workflow_input_key: name, column: name, prompt_user: false, prompt: null };
}

function prompted(key: string, prompt: string | null): InputMapping {
  return { workflow_input_key: key, column: null, prompt_user: true, prompt };
}

describe("row actions (interface 2.5)", () => {
  it("hides an action with neither label nor workflow_id, keeping the order of the others", () => {
    const actions = [
      action("a", "Refund", "refund"),
      action("b", null, null),
      action("c", "  ", ""),
      action("d", null, "notify"),
      action("e", "Label only", null),
    ];
    expect(shownActions(actions).map((a) => a.id)).toEqual(["a", "d", "e"]);
  });

  it("labels a blank label by its workflow", () => {
    expect(actionLabel(action("d", null, "notify"))).toBe("Start notify");
    expect(actionLabel(action("d", " ", "notify"))).toBe("Start notify");
    expect(actionLabel(action("a", "Refund", "refund"))).toBe("Refund");
  });

  it("disables an action without a workflow, or whose column is masked or missing", () => {
    const columns = [
      { name: "id", type: "int8" },
      { name: "email", type: "masked" },
    ];
    expect(actionState(action("e", "Label only", null), columns)).toMatchObject({ enabled: false, why: expect.stringContaining("no workflow") });
    expect(actionState(action("x", "Climb", ".."), columns).enabled).toBe(false);
    expect(actionState(action("a", "Refund", "refund", [column("id")]), columns)).toEqual({ enabled: true });
    expect(actionState(action("m", "Mail", "mail", [column("email")]), columns)).toMatchObject({ enabled: false, why: expect.stringContaining("masks") });
    expect(actionState(action("h", "Hidden", "h", [column("ssn")]), columns)).toMatchObject({ enabled: false, why: expect.stringContaining("does not have") });
    // A prompted mapping takes no column.
    expect(actionState(action("p", "Ask", "ask", [prompted("reason", null)]), columns)).toEqual({ enabled: true });
    expect(triggerable([action("e", "Label only", null)])).toBe(false);
    expect(triggerable([action("e", "Label only", null), action("a", null, "refund")])).toBe(true);
  });
});

describe("the prompt modal (interface 2.6)", () => {
  it("asks only for the prompted mappings, labelled by prompt or by key when the prompt is blank", () => {
    const refund = action("a", "Refund", "refund", [
      column("id"),
      prompted("reason", "Why?"),
      prompted("note", null),
      prompted("ticket", ""),
      prompted("agent", "   "),
    ]);
    const fields = promptedMappings(refund);
    expect(fields.map((m) => m.workflow_input_key)).toEqual(["reason", "note", "ticket", "agent"]);
    expect(fields.map(promptLabel)).toEqual(["Why?", "note", "ticket", "agent"]);
  });
});

describe("row tokens in NDJSON", () => {
  it("reads a token line as the token of the row before it", () => {
    expect(parseLine('{"row_token":"abc"}')).toEqual({ kind: "token", token: "abc" });
    expect(parseLine('{"row_token":null}')).toEqual({ kind: "token", token: null });
  });
});
