# One image for the API and the worker: Node 24 runs the TypeScript sources directly (type stripping).
#   api:    node apps/api/src/main.ts     (default command)
#   worker: node apps/worker/src/main.ts
# The run console (apps/console) is built with Vite in its own stage; only its static files
# reach the runtime image, where the API serves them at /console.
FROM node:24-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/core/package.json packages/core/
COPY packages/client/package.json packages/client/
COPY packages/runtime/package.json packages/runtime/
COPY packages/cli/package.json packages/cli/
COPY packages/testing/package.json packages/testing/
COPY apps/worker/package.json apps/worker/
COPY apps/api/package.json apps/api/
COPY apps/console/package.json apps/console/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY packages ./packages
COPY apps/console ./apps/console
RUN npm run build:console

FROM node:24-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, from the manifests only, so source edits keep this layer cached.
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/core/package.json packages/core/
COPY packages/client/package.json packages/client/
COPY packages/runtime/package.json packages/runtime/
COPY packages/cli/package.json packages/cli/
COPY packages/testing/package.json packages/testing/
COPY apps/worker/package.json apps/worker/
COPY apps/api/package.json apps/api/
COPY apps/console/package.json apps/console/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY packages ./packages
COPY apps ./apps
COPY --from=console /app/apps/console/dist ./apps/console/dist

USER node
EXPOSE 3000
STOPSIGNAL SIGTERM
CMD ["node", "apps/api/src/main.ts"]
