// The keyboard shortcuts of the query console, listed in a dialog ("?", or its button).

import { h, uid } from "./dom";

const SHORTCUTS: [string, string][] = [
  ["Ctrl+Enter (⌘+Enter)", "Run the selection, or the statement under the cursor"],
  ["Shift+Alt+F", "Format the selection, or the whole text"],
  ["Ctrl+Space", "Complete a table, column or keyword"],
  ["Ctrl+Z / Ctrl+Shift+Z", "Undo / redo in the editor"],
  ["Tab", "Leave the editor (and reach the grid: one stop)"],
  ["Arrow keys, Home, End, Page Up, Page Down", "Move in the grid (Ctrl+Home/End: first and last row)"],
  ["Shift + a move", "Select a range of cells"],
  ["Ctrl+A, Shift+Space, Ctrl+Space", "Select every cell, the row, the column"],
  ["Ctrl+C", "Copy the selected cells as TSV"],
  ["Enter", "On a header: sort by it. On a cut value: show it whole. On actions: reach them"],
  ["Escape", "Keep the active cell only; close a dialog"],
  ["?", "This list"],
];

export function shortcutsDialog(): HTMLDialogElement {
  const titleId = uid("shortcuts-title");
  const dialog = h(
    "dialog",
    { class: "shortcuts", attrs: { "aria-labelledby": titleId } },
    h("h2", { attrs: { id: titleId } }, "Keyboard shortcuts"),
    h("dl", {}, ...SHORTCUTS.flatMap(([keys, what]) => [h("dt", {}, h("kbd", {}, keys)), h("dd", {}, what)])),
    h("div", { class: "actions" }, h("button", { attrs: { type: "button" }, on: { click: () => dialog.close() } }, "Close")),
  );
  return dialog;
}
