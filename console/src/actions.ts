// A panel's row actions as the interface renders them (2.5, 2.6): which are shown, what each
// button says, when one is disabled and why, and the fields of the prompt modal. Pure
// functions, so each rule is unit-tested apart from the page.

import type { Action, InputMapping } from "./api";
import type { Column } from "./ndjson";

/** `.` and `..` name no workflow (the server refuses them: a path's dot segments). */
function namesWorkflow(workflowId: string | null): workflowId is string {
  return workflowId !== null && workflowId.trim() !== "" && workflowId !== "." && workflowId !== "..";
}

function blank(text: string | null): boolean {
  return text === null || text.trim() === "";
}

/** The actions a rendered dashboard shows, in order: an action with neither label nor workflow_id is hidden. */
export function shownActions(actions: Action[]): Action[] {
  return actions.filter((action) => !(blank(action.label) && blank(action.workflow_id)));
}

/** The button's text: its label, or one that names the workflow when the label is blank. */
export function actionLabel(action: Action): string {
  if (!blank(action.label)) return action.label ?? "";
  return `Start ${action.workflow_id ?? ""}`;
}

/** The mappings the prompt modal asks for, in order. */
export function promptedMappings(action: Action): InputMapping[] {
  return action.input_mappings.filter((mapping) => mapping.prompt_user);
}

/** The label above a prompted field: its prompt, or its workflow input key when the prompt is blank. */
export function promptLabel(mapping: InputMapping): string {
  return blank(mapping.prompt) ? mapping.workflow_input_key : (mapping.prompt ?? "");
}

/** Whether an action's button works on rows of a result with `columns`, and why not. */
export function actionState(action: Action, columns: Column[]): { enabled: true } | { enabled: false; why: string } {
  if (!namesWorkflow(action.workflow_id)) {
    return { enabled: false, why: "This action has no workflow: it starts nothing." };
  }
  for (const mapping of action.input_mappings) {
    if (mapping.prompt_user) continue;
    const name = mapping.column ?? "";
    const column = columns.find((c) => c.name === name);
    if (!column) {
      return { enabled: false, why: `Its input ${mapping.workflow_input_key} takes column ${name}, which the result does not have (hidden, or not selected).` };
    }
    if (column.type === "masked") {
      return { enabled: false, why: `Its input ${mapping.workflow_input_key} takes column ${name}, which data protection masks.` };
    }
  }
  return { enabled: true };
}

/** Whether any shown action of a panel starts a workflow: its runs then ask for row tokens. */
export function triggerable(actions: Action[]): boolean {
  return actions.some((action) => namesWorkflow(action.workflow_id));
}
