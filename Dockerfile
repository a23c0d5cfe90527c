# One image for the API and the worker: Node 24 runs the TypeScript sources directly (type stripping).
#   api:    node apps/api/src/main.ts     (default command)
#   worker: node apps/worker/src/main.ts
FROM node:24-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, from the manifests only, so source edits keep this layer cached.
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/core/package.json packages/core/
COPY apps/worker/package.json apps/worker/
COPY apps/api/package.json apps/api/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY packages ./packages
COPY apps ./apps

USER node
EXPOSE 3000
STOPSIGNAL SIGTERM
CMD ["node", "apps/api/src/main.ts"]
