import { defineConfig } from "vitest/config";

// The server (`sentient serve`) serves dist/ at "/", and the API at /api and /socket.io.
// In `npm run dev`, point SENTIENT_URL at a running server to proxy those paths to it.
const target = process.env.SENTIENT_URL ?? "http://127.0.0.1:5000";

export default defineConfig({
  base: "/",
  // JSX through esbuild (no Babel, no plugin): the build needs nothing beyond Vite itself.
  esbuild: { jsx: "automatic" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 900,
    rollupOptions: {
      // React Flow ships a "use client" directive (for server components); it means nothing here.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
      output: {
        manualChunks: {
          flow: ["@xyflow/react", "d3-hierarchy"],
          markdown: ["react-markdown", "remark-gfm"],
        },
      },
    },
  },
  server: {
    proxy: {
      "/api": target,
      "/socket.io": { target, ws: true },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
