// Building the page: every element through h(), every value as a text node. Nothing here (or
// anywhere in the app) parses markup; the linter refuses innerHTML and its kin.

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  class?: string;
  /** Attributes, set with setAttribute (aria-*, role, type, for, …). */
  attrs?: Record<string, string | number | boolean | undefined>;
  /** Event listeners. */
  on?: Partial<{ [K in keyof HTMLElementEventMap]: (event: HTMLElementEventMap[K]) => void }>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const [name, listener] of Object.entries(props.on ?? {})) {
    element.addEventListener(name, listener as EventListener);
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent` with `children`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/**
 * Text as it should be shown: control characters and bidirectional controls made visible
 * (U+2400 pictures, or ⟨U+XXXX⟩), so a value can't hide text or reorder what surrounds it.
 */
export function visible(text: string): string {
  let out = "";
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code === 0x0a) out += "↵";
    else if (code === 0x09) out += "⇥";
    else if (code < 0x20) out += String.fromCodePoint(0x2400 + code);
    else if (code === 0x7f) out += "␡";
    else if (
      (code >= 0x80 && code <= 0x9f) ||
      (code >= 0x200b && code <= 0x200f) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069) ||
      code === 0xfeff
    ) {
      out += `⟨U+${code.toString(16).toUpperCase().padStart(4, "0")}⟩`;
    } else out += char;
  }
  return out;
}

/** A value in a `<bdi>`: isolated from the text around it, shown with visible controls. */
export function isolated(text: string, props: Props = {}): HTMLElement {
  return h("bdi", props, visible(text));
}

let nextId = 0;
/** A fresh element id (for labels and aria references). */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled field: the label, then the control. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || uid("field");
  control.id = id;
  let hintNode: HTMLElement | null = null;
  if (hint) {
    hintNode = h("small", { class: "hint", attrs: { id: `${id}-hint` } }, hint);
    control.setAttribute("aria-describedby", `${id}-hint`);
  }
  return h("div", { class: "field" }, h("label", { attrs: { for: id } }, label), control, hintNode);
}

/** A table of `rows` under the column labels `head`, captioned for screen readers. */
export function table(caption: string, head: string[], rows: HTMLElement[]): HTMLElement {
  return h(
    "table",
    { class: "list" },
    h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {}, ...head.map((label) => h("th", { attrs: { scope: "col" } }, label)))),
    h("tbody", {}, ...rows),
  );
}

/**
 * A modal that asks before what can't be undone: a title, what it does, and the button that does
 * it (`act`; its error is shown in the dialog, which then stays open). "Keep it" closes it.
 */
export function dangerDialog(title: Child[], text: Child[], confirm: string, act: () => Promise<void>): HTMLDialogElement {
  const titleId = uid("danger-title");
  const error = h("p", { class: "error", attrs: { role: "alert" } });
  const dialog = h(
    "dialog",
    { attrs: { "aria-labelledby": titleId } },
    h("h2", { attrs: { id: titleId } }, ...title),
    h("p", {}, ...text),
    error,
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          class: "danger",
          attrs: { type: "button" },
          on: {
            click: () => {
              error.textContent = "";
              act()
                .then(() => dialog.close())
                .catch((e: unknown) => {
                  error.textContent = e instanceof Error ? e.message : String(e);
                });
            },
          },
        },
        confirm,
      ),
      h("button", { attrs: { type: "button" }, on: { click: () => dialog.close() } }, "Keep it"),
    ),
  );
  return dialog;
}
