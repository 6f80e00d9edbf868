import { describe, expect, it } from "vitest";
import type { Dashboard } from "../src/api";
import { dashboardBody, draftOf, moved, placeholders } from "../src/dashboard-editor";

const stored: Dashboard = {
  id: "dash_1",
  name: "Orders",
  restricted_access: true,
  panels: [
    {
      id: "pl_1",
      title: "Recent",
      inputs: [{ key: "since", description: "" }],
      actions: [
        {
          id: "act_1",
          label: null,
          workflow_id: "refund",
          input_mappings: [
            { workflow_input_key: "order", column: "id", prompt_user: false, prompt: null },
            { workflow_input_key: "why", column: null, prompt_user: true, prompt: null },
          ],
        },
      ],
      details: { __type__: "query", query: "select * from o where d > ${since}", credential_id: "crd_1" },
    },
  ],
};

describe("the dashboard editor's body", () => {
  it("gives back what it was given, ids kept, blanks as null, no key the contract lacks", () => {
    const body = dashboardBody(draftOf(stored));
    expect(body).toEqual({
      name: "Orders",
      restricted_access: true,
      panels: [
        {
          id: "pl_1",
          title: "Recent",
          inputs: [{ key: "since", description: "" }],
          actions: [
            {
              id: "act_1",
              label: null,
              workflow_id: "refund",
              input_mappings: [
                { workflow_input_key: "order", column: "id" },
                { workflow_input_key: "why", prompt_user: true, prompt: null },
              ],
            },
          ],
          details: { __type__: "query", query: "select * from o where d > ${since}", credential_id: "crd_1" },
        },
      ],
    });
  });

  it("drops the ids of a copy", () => {
    const body = dashboardBody(draftOf(stored), false) as { panels: Record<string, unknown>[] };
    expect(body.panels[0]?.id).toBeUndefined();
    expect((body.panels[0]?.actions as Record<string, unknown>[])[0]?.id).toBeUndefined();
  });

  it("moves an item, keeping the others in order", () => {
    expect(moved(["a", "b", "c"], 0, 2)).toEqual(["b", "c", "a"]);
    expect(moved(["a", "b", "c"], 2, 0)).toEqual(["c", "a", "b"]);
    expect(moved(["a", "b", "c"], 1, 9)).toEqual(["a", "c", "b"]);
    expect(moved(["a"], 3, 0)).toEqual(["a"]);
  });

  it("finds the inputs a query names", () => {
    expect(placeholders("select ${a}, '${b}', ${a} from t where x = ${c_1}")).toEqual(["a", "b", "c_1"]);
    expect(placeholders("select $1, ${ not }")).toEqual([]);
  });
});
