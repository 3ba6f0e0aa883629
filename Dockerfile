# syntax=docker/dockerfile:1
# The service in a container (docs/deployment.md). No Docker engine runs in this project's CI:
# this file keeps to the commands CI runs (`npm ci`, whose prepare script is `npm run build`),
# and test/container.test.ts runs the entry point and the health check with this file's settings.

# Build: every dependency, the compiled service and the dashboard; then the dev tools go.
FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json rolldown.config.mjs ./
COPY src ./src
COPY scripts ./scripts
COPY web ./web
# npm 11, as CI runs it (the lock file is npm 11's; the node:20 image ships npm 10).
RUN npm install -g npm@11 --no-audit --no-fund \
 && npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime: production dependencies only (better-sqlite3 as built above: same Debian, same Node).
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/web/dist ./web/dist
COPY README.md LICENSE CHANGELOG.md ./
# The data directory (SQLite file, first-key file) belongs to the unprivileged user `node`.
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node itself is the container's main process: it receives SIGTERM and drains (no npm, no shell).
ENTRYPOINT ["node", "dist/cli/copilot-service.cjs"]
CMD ["serve"]
