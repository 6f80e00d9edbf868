// One clock for every screen: times are shown in one format with their zone
// (`2026-12-07 18:06:13 CET`), in the zone the person chose in their settings: the browser's,
// or UTC. The theme of their settings is applied here too.

let utc = false;

/** Follows the person's settings: `time_zone` "UTC" or null (the browser's), `theme` "light",
 * "dark" or null (the system's). */
export function applySettings(settings: { theme: string | null; time_zone: string | null }): void {
  utc = settings.time_zone === "UTC";
  const root = document.documentElement;
  if (settings.theme === "light" || settings.theme === "dark") root.dataset.theme = settings.theme;
  else delete root.dataset.theme;
}

/** The zone times are shown in: "UTC", or undefined for the browser's. */
export function shownZone(): string | undefined {
  return utc ? "UTC" : undefined;
}

/** An RFC 3339 time in the one format, with its zone; "" for none; text that is no time stays
 * as it is. */
export function when(at: string | null | undefined, zone = shownZone()): string {
  if (!at) return "";
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return at;
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  }).formatToParts(date);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
  return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}:${part("second")} ${part("timeZoneName")}`;
}

/** A `datetime-local` input's value (in the shown zone) as RFC 3339 in UTC; "" stays "". */
export function inputToRfc3339(value: string): string {
  if (!value) return "";
  const at = new Date(utc ? `${value}Z` : value);
  return Number.isNaN(at.getTime()) ? "" : at.toISOString();
}

/** An RFC 3339 time as a `datetime-local` input's value in the shown zone. */
export function rfc3339ToInput(value: string): string {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) return "";
  if (utc) return at.toISOString().slice(0, 16);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}
