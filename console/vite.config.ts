import { defineConfig } from "vitest/config";

// Served by the dbconsole server under /console/ (console-assets embeds dist/). Hashed file
// names under assets/ are cached as immutable; index.html carries the CSP nonce placeholder the
// server fills per response.
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    target: "es2022",
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:4000",
    },
  },
  test: {
    include: ["tests/**/*.test.ts"],
    environment: "node",
  },
});
