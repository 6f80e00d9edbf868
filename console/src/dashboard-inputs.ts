// A dashboard's inputs, once for the whole page: one control per input key its panels declare,
// of the type the presentation gives it (text, number, date, date and time, a choice from a
// list or from a query run at page load), with its default; and the time range panels bind as
// ${__from} and ${__to}. The values live in the page's URL (`in.<key>`, `range`, `from`, `to`),
// so a shared URL opens as it was. A bad value is shown on its field, as the server names it.

import { call, type Panel } from "./api";
import { field, h, replace, uid } from "./dom";
import { presetRange, RANGE_PRESETS, type InputSpec, type Presentation, type RangePreset } from "./presentation";

/** An input as the bar shows it: its key, description and type. */
interface Declared {
  key: string;
  description: string;
  spec: InputSpec | undefined;
}

export class InputBar {
  readonly element: HTMLElement;
  private readonly controls = new Map<string, HTMLInputElement | HTMLSelectElement>();
  private readonly problems = new Map<string, HTMLElement>();
  private readonly range: HTMLSelectElement;
  private readonly from: HTMLInputElement;
  private readonly to: HTMLInputElement;
  private readonly custom: HTMLElement;
  private readonly declared: Declared[];

  constructor(
    private readonly dashboardId: string,
    panels: Panel[],
    private readonly presentation: Presentation,
    params: URLSearchParams,
    apply: () => void,
    /** Whether any panel binds the time range (the control shows only then). */
    usesTime: boolean,
  ) {
    const seen = new Map<string, Declared>();
    for (const panel of panels) {
      for (const input of panel.inputs) {
        if (!seen.has(input.key)) seen.set(input.key, { key: input.key, description: input.description, spec: presentation.inputs[input.key] });
      }
    }
    this.declared = [...seen.values()];
    const fields = this.declared.map((input) => this.fieldOf(input, params));
    this.range = h("select", { attrs: { name: "range" } }, ...RANGE_PRESETS.map(([value, label]) => h("option", { attrs: { value } }, label)), h("option", { attrs: { value: "custom" } }, "Custom…"));
    const preset = params.get("range") ?? presentation.time_range ?? "7d";
    this.range.value = RANGE_PRESETS.some(([v]) => v === preset) || preset === "custom" ? preset : "7d";
    this.from = h("input", { attrs: { type: "datetime-local", step: 1, name: "from" } });
    this.to = h("input", { attrs: { type: "datetime-local", step: 1, name: "to" } });
    this.from.value = params.get("from") ?? "";
    this.to.value = params.get("to") ?? "";
    this.custom = h("div", { class: "row custom-range" }, field("From (UTC)", this.from), field("To (UTC)", this.to));
    this.custom.hidden = this.range.value !== "custom";
    this.range.addEventListener("change", () => {
      this.custom.hidden = this.range.value !== "custom";
      if (this.range.value !== "custom") {
        this.keep();
        apply();
      }
    });
    const timeField = usesTime ? h("div", { class: "time-range" }, field("Time range", this.range), this.custom) : null;
    this.element = h(
      "form",
      {
        class: "dashboard-inputs",
        attrs: { "aria-label": "Dashboard inputs" },
        on: {
          submit: (event) => {
            event.preventDefault();
            this.keep();
            apply();
          },
        },
      },
      timeField,
      ...fields,
      (fields.length > 0 || usesTime) && h("button", { class: "primary", attrs: { type: "submit" } }, "Apply"),
    );
    this.element.hidden = fields.length === 0 && !usesTime;
  }

  private fieldOf(input: Declared, params: URLSearchParams): HTMLElement {
    const spec = input.spec;
    const given = params.get(`in.${input.key}`);
    const value = given ?? spec?.default ?? "";
    const required = spec ? spec.required !== false : true;
    let control: HTMLInputElement | HTMLSelectElement;
    switch (spec?.type) {
      case "number":
        control = h("input", { attrs: { type: "text", inputmode: "decimal", name: input.key, autocomplete: "off" } });
        break;
      case "date":
        control = h("input", { attrs: { type: "date", name: input.key } });
        break;
      case "datetime":
        control = h("input", { attrs: { type: "datetime-local", step: 1, name: input.key } });
        break;
      case "choice": {
        const select = h("select", { attrs: { name: input.key } }, h("option", { attrs: { value: "" } }, required ? "Choose…" : "(none)"));
        this.fillChoices(select, input.key, spec, value);
        control = select;
        break;
      }
      default:
        control = h("input", { attrs: { type: "text", name: input.key, autocomplete: "off" } });
    }
    control.value = value;
    if (required) control.setAttribute("aria-required", "true");
    const problemId = uid("input-problem");
    const problem = h("span", { class: "field-error", attrs: { id: problemId, role: "alert" } });
    this.controls.set(input.key, control);
    this.problems.set(input.key, problem);
    const hint = [input.description, required ? "" : "optional"].filter(Boolean).join(" — ");
    const labelled = field(input.key, control, hint || undefined);
    const described = control.getAttribute("aria-describedby");
    control.setAttribute("aria-describedby", described ? `${described} ${problemId}` : problemId);
    return h("div", { class: "input-field" }, labelled, problem);
  }

  /** A choice's options: its list, or its query's values (fetched now). */
  private fillChoices(select: HTMLSelectElement, key: string, spec: InputSpec, value: string): void {
    const add = (choices: string[]) => {
      for (const choice of choices) select.append(h("option", { attrs: { value: choice } }, choice));
      select.value = value;
    };
    if (!spec.choices_query) {
      add(spec.choices ?? []);
      return;
    }
    select.setAttribute("aria-busy", "true");
    void call<{ choices: string[]; truncated: boolean }>("GET", `/api/v1/dashboards/${encodeURIComponent(this.dashboardId)}/inputs/${encodeURIComponent(key)}/choices`)
      .then((answer) => {
        add(answer.choices);
        if (answer.truncated) this.problem(key, `Only the first ${answer.choices.length} values are offered.`);
      })
      .catch((error: unknown) => this.problem(key, `The choices could not be read: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => select.removeAttribute("aria-busy"));
  }

  /** The values a panel binds: each of its inputs (as typed; blank is sent blank). */
  valuesFor(panel: Panel): Record<string, string> {
    const values: Record<string, string> = {};
    for (const input of panel.inputs) values[input.key] = this.controls.get(input.key)?.value ?? "";
    return values;
  }

  /** The inputs of `panel` that are required, blank and without a default: it can't run yet. */
  missingFor(panel: Panel): string[] {
    return panel.inputs
      .filter((input) => {
        const spec = this.presentation.inputs[input.key];
        const required = spec ? spec.required !== false : true;
        return required && (this.controls.get(input.key)?.value ?? "") === "";
      })
      .map((input) => input.key);
  }

  /** The time range to send: the preset's, ending now, or the custom one (read as UTC). */
  timeRange(): { from: string; to: string } | undefined {
    if (this.range.value === "custom") {
      const from = Date.parse(`${this.from.value}Z`);
      const to = Date.parse(`${this.to.value}Z`);
      if (Number.isFinite(from) && Number.isFinite(to)) return { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
      return undefined;
    }
    return presetRange(this.range.value as RangePreset);
  }

  /** Shows the server's field errors (`inputs.<key>`, `time_range…`) on their fields. */
  showErrors(fields: Record<string, string[]>): boolean {
    let shown = false;
    for (const [name, messages] of Object.entries(fields)) {
      const key = name.startsWith("inputs.") ? name.slice(7) : null;
      if (key !== null && this.problems.has(key)) {
        this.problem(key, messages.join(", "));
        shown = true;
      }
    }
    return shown;
  }

  clearErrors(): void {
    for (const [key, problem] of this.problems) {
      replace(problem);
      this.controls.get(key)?.removeAttribute("aria-invalid");
    }
  }

  private problem(key: string, message: string): void {
    const problem = this.problems.get(key);
    if (!problem) return;
    replace(problem, message);
    this.controls.get(key)?.setAttribute("aria-invalid", "true");
  }

  /** Puts the values into the page's URL, so that it can be shared and reloaded. */
  private keep(): void {
    const next = new URLSearchParams(location.search);
    for (const [key, control] of this.controls) next.set(`in.${key}`, control.value);
    next.set("range", this.range.value);
    if (this.range.value === "custom") {
      next.set("from", this.from.value);
      next.set("to", this.to.value);
    } else {
      next.delete("from");
      next.delete("to");
    }
    history.replaceState(null, "", `${location.pathname}?${next.toString()}`);
  }
}
