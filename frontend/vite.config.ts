/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// The backend serves `dist/` at `/` with a strict CSP (no inline scripts or styles), so the build
// must emit only external files. In development, `/api` is proxied to a local `almanac serve`.
export default defineConfig({
  oxc: {
    jsx: { runtime: "automatic", importSource: "preact" },
  },
  resolve: {
    alias: {
      react: "preact/compat",
      "react-dom": "preact/compat",
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Never inline assets as data: URLs into CSS/JS (keeps the CSP story simple).
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    port: 5173,
    proxy: {
      "/api": { target: process.env.ALMANAC_API ?? "http://127.0.0.1:8765", changeOrigin: false },
    },
  },
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
    environment: "node",
  },
});
