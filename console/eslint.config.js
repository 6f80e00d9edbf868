// Lints the app, its unit tests and the browser tests. Markup is never built from strings:
// innerHTML, outerHTML, insertAdjacentHTML, document.write and friends are refused, so every
// value reaches the page as text.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const noMarkup = {
  "no-restricted-properties": [
    "error",
    { property: "innerHTML", message: "Render values as text: use textContent or the h() helper." },
    { property: "outerHTML", message: "Render values as text." },
    { property: "insertAdjacentHTML", message: "Render values as text." },
    { property: "createContextualFragment", message: "Render values as text." },
    { property: "parseFromString", message: "Never parse markup from data." },
    { object: "document", property: "write", message: "Render values as text." },
    { object: "document", property: "writeln", message: "Render values as text." },
  ],
  "no-restricted-syntax": [
    "error",
    { selector: "CallExpression[callee.name='eval']", message: "No eval." },
    { selector: "NewExpression[callee.name='Function']", message: "No new Function." },
    { selector: "CallExpression[callee.property.name='setHTMLUnsafe']", message: "Render values as text." },
  ],
  "no-implied-eval": "error",
};

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      ...noMarkup,
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["e2e/**/*.mjs", "bench/**/*.mjs", "eslint.config.js"],
    languageOptions: {
      globals: {
        process: "readonly", console: "readonly", URL: "readonly", URLSearchParams: "readonly", setTimeout: "readonly",
        clearTimeout: "readonly", Buffer: "readonly", fetch: "readonly", performance: "readonly",
        document: "readonly", window: "readonly", localStorage: "readonly", sessionStorage: "readonly", axe: "readonly", MutationObserver: "readonly", PerformanceObserver: "readonly", requestAnimationFrame: "readonly", setInterval: "readonly", clearInterval: "readonly", navigator: "readonly", TextDecoder: "readonly", AbortController: "readonly",
      },
    },
    rules: noMarkup,
  },
);
