// The console's icons, as inline SVG drawn with the text's colour: a font without a glyph shows
// an empty box, an SVG always draws. Each is decorative (aria-hidden): its button has a name.

const PATHS = {
  copy: "M9 9h10v12H9zM5 3h10v3H8v11H5z",
  up: "M12 6l6 8H6z",
  down: "M12 18l-6-8h12z",
  star: "M12 3l2.7 5.9 6.3.6-4.8 4.3 1.4 6.3L12 16.8 6.4 20.1l1.4-6.3L3 9.5l6.3-.6z",
  sun: "M12 7a5 5 0 100 10 5 5 0 000-10zM11 1h2v4h-2zM11 19h2v4h-2zM1 11h4v2H1zM19 11h4v2h-4z",
  moon: "M20 15.5A8.5 8.5 0 018.5 4 8.5 8.5 0 1020 15.5z",
} as const;

export type IconName = keyof typeof PATHS;

/** The icon `name`, 1em square, hidden from assistive technology. */
export function icon(name: IconName, outline = false): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "1em");
  svg.setAttribute("height", "1em");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.classList.add("icon");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", PATHS[name]);
  if (outline) {
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", "currentColor");
    path.setAttribute("stroke-width", "1.6");
  } else path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}
