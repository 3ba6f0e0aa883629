import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const backend = process.env.DASHBOARD_BACKEND ?? 'http://127.0.0.1:8080';

/**
 * The dashboard: built to web/dist, served by the service at `/` (src/http/routes/dashboard.ts).
 * `base: './'` keeps every asset URL relative, so the dashboard also works behind a proxy
 * that mounts the service under a sub-path; the API is called relative to the page too.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  // JSX through Vite's own transform (Oxc); no framework plugin needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsDir: 'assets',
    // Everything in its own hashed file: the CSP forbids inline data, and hashed files cache forever.
    assetsInlineLimit: 0,
  },
  // `npm run dev:web`: hot-reloading dashboard against a service running on :8080.
  server: { proxy: { '/backend': backend } },
});
