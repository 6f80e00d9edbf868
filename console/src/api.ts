// The server's HTTP API, as the console calls it: same-origin, the session cookie, and the
// header without which the cookie counts for nothing (the server's CSRF guard).

export const CSRF_HEADER = "x-dbconsole-request";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: Record<string, string[]> = {},
    /** The error body as the server sent it (nested field errors included). */
    readonly body: unknown = null,
  ) {
    super(message);
  }
}

/** Every field error of an error body with its path (`panels[1].title: can't be blank`). */
export function fieldProblems(body: unknown): string[] {
  const errors = (body as { errors?: unknown } | null)?.errors;
  const out: string[] = [];
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") out.push(path ? `${path}: ${value}` : value);
    else if (Array.isArray(value)) {
      if (value.every((v) => typeof v === "string")) {
        for (const v of value) out.push(path ? `${path}: ${String(v)}` : String(v));
      } else value.forEach((v, i) => walk(v, `${path}[${i + 1}]`));
    } else if (value && typeof value === "object") {
      for (const [key, v] of Object.entries(value)) {
        if (key === "detail" || key === "hint") continue;
        walk(v, path ? `${path}.${key}` : key);
      }
    }
  };
  walk(errors, "");
  return out;
}

/** The message an error body carries: its detail, hint or the first field error. */
export function errorMessage(status: number, body: unknown): { message: string; fields: Record<string, string[]> } {
  const errors = (body as { errors?: Record<string, unknown> } | null)?.errors;
  const fields: Record<string, string[]> = {};
  let message = "";
  if (errors && typeof errors === "object") {
    for (const [key, value] of Object.entries(errors)) {
      if (key === "detail" || key === "hint") continue;
      if (Array.isArray(value)) fields[key] = value.map(String);
    }
    const detail = typeof errors.detail === "string" ? errors.detail : "";
    const hint = typeof errors.hint === "string" ? errors.hint : "";
    const first = Object.entries(fields)[0];
    message = hint || (first ? `${first[0]}: ${first[1].join(", ")}` : "") || detail;
    if (detail && hint && detail !== "Unauthorized" && detail !== "Forbidden") message = `${detail}: ${hint}`;
  }
  return { message: message || `the server answered ${status}`, fields };
}

export function headers(json: boolean, accept = "application/json"): Headers {
  const result = new Headers({ [CSRF_HEADER]: "1", accept });
  if (json) result.set("content-type", "application/json");
  return result;
}

/** A request whose answer is JSON (or nothing, for 204). */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  return read<T>(response);
}

export async function read<T>(response: Response): Promise<T> {
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const { message, fields } = errorMessage(response.status, parsed);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("dbconsole:signed-out"));
    throw new ApiError(response.status, message, fields, parsed);
  }
  return parsed as T;
}

const CHANGED_ELSEWHERE = "Changed by someone else since you opened it: reload to see their change, then make yours again.";

/** An error as a person reads it; a 412 says someone else changed the record. */
export function problem(error: unknown): string {
  if (error instanceof ApiError && error.status === 412) return CHANGED_ELSEWHERE;
  return error instanceof ApiError ? error.message : error instanceof Error ? error.message : String(error);
}

/** A request that answers JSON and its ETag. */
export async function withEtag<T>(method: string, path: string, body?: unknown, ifMatch?: string): Promise<{ value: T; etag: string }> {
  const requestHeaders = headers(body !== undefined);
  if (ifMatch) requestHeaders.set("if-match", ifMatch);
  const response = await fetch(path, {
    method,
    headers: requestHeaders,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const { message, fields } = errorMessage(response.status, parsed);
    throw new ApiError(response.status, message, fields, parsed);
  }
  return { value: parsed as T, etag: response.headers.get("etag") ?? "" };
}

export interface Me {
  user: string | null;
  groups: string[];
  role: string | null;
  agent: boolean;
  scope: string;
  may: {
    query: boolean;
    review: boolean;
    bypass_reviews: boolean;
    manage_databases: boolean;
    manage_dashboards: boolean;
    make_dashboards: boolean;
    read_audit: boolean;
  };
}

export interface QueryableCredential {
  id: string;
  username: string;
  reviews_required: number;
  default_credential: boolean;
}

export interface QueryableDatabase {
  id: string;
  name: string;
  group: string | null;
  adapter: string;
  restrict_access: boolean;
  review_bypass_allowed: boolean;
  credentials: QueryableCredential[];
}

export interface QueryRun {
  run_by: string;
  started_at: string;
  finished_at: string | null;
  row_count: number | null;
  /** The rows a write changed, when the database said. */
  affected_rows?: number | null;
  truncated: boolean | null;
  duration_ms: number | null;
  error: string | null;
}

export interface Review {
  reviewer: string;
  decision: string;
  comment: string | null;
  reviewed_at: string;
  revision: number;
}

export interface Comment {
  author: string;
  text: string;
  at: string;
}

export interface Query {
  id: string;
  database_id: string;
  credential_id: string;
  query: string;
  title: string;
  description: string;
  limit: number;
  author: string;
  status: string;
  by_agent?: boolean;
  inserted_at: string;
  updated_at?: string;
  revision: number;
  approvals: number;
  reviews: Review[];
  comments: Comment[];
  run?: QueryRun | null;
  bypass?: { by: string; at: string; reason: string; approvals: number; required: number } | null;
  /** The saved query it is a run of, or null. */
  saved_query_id?: string | null;
  /** Its parameters' values, in the statement's order (a saved query's run). */
  params?: { name: string; value: string }[];
}

/** The person's own settings (…/me/settings). */
export interface Settings {
  theme: "light" | "dark" | null;
  time_zone: "UTC" | null;
}

/** A saved query (…/saved-queries). */
export interface SavedQuery {
  id: string;
  name: string;
  description: string;
  query: string;
  /** The names of its `${name}` parameters, each once. */
  params: string[];
  database_id: string;
  credential_id: string;
  tags: string[];
  sharing: "author" | "groups" | "database";
  groups: string[];
  author: string;
  /** Whether the caller wrote it. */
  mine: boolean;
  created_at: string;
  updated_at: string;
}

export interface Page<T> {
  data: T[];
  next: string | null;
}

export interface InputMapping {
  workflow_input_key: string;
  column: string | null;
  prompt_user: boolean;
  prompt: string | null;
}

export interface Action {
  id: string;
  label: string | null;
  workflow_id: string | null;
  input_mappings: InputMapping[];
}

export interface Panel {
  id: string;
  title: string;
  inputs: { key: string; description: string }[];
  actions: Action[];
  details: { __type__: "query"; query: string; credential_id: string };
}

export interface Dashboard {
  id: string;
  name: string;
  restricted_access: boolean;
  panels: Panel[];
}

/** How a workflow run the caller started is doing (`GET /api/v1/console/me/deliveries/{id}`). */
export interface DeliveryProgress {
  id: string;
  workflow_id: string | null;
  status: "pending" | "delivering" | "delivered" | "dead";
  attempts: number;
  due_at: string | null;
  last_error: string | null;
  updated_at: string;
  delivered_at: string | null;
}
