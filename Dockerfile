# The Hoist controller image: Node 24, git (git sources) and helm (helm processor).
# Not built or published by CI yet; the chart's image.repository must point at where you push it.
#
#   docker build -t <registry>/hoist:0.1.0 .
#
# helm is built from its Go module at the version the tests use (scripts/tool-versions.env),
# the same way scripts/ensure-tools.sh builds it for development.
ARG NODE_IMAGE=node:24-bookworm-slim
ARG GO_IMAGE=golang:1.25-bookworm

FROM ${GO_IMAGE} AS helm
ARG HELM_VERSION=v3.19.5
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath -ldflags="-s -w" helm.sh/helm/v3/cmd/helm@${HELM_VERSION}

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# scripts off: the image's own Node runs the build, the `node` devDependency's binary is not needed
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY api ./api
COPY src ./src
# only the shipped code; the emitted JavaScript keeps the source layout (api/, src/) under dist/
RUN echo '{"extends":"./tsconfig.json","include":["api","src"],"exclude":["**/*.test.ts"]}' > tsconfig.build.json \
 && node node_modules/typescript/bin/tsc -p tsconfig.build.json --outDir dist --sourceMap false
RUN npm ci --omit=dev --ignore-scripts

FROM ${NODE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=helm /out/helm /usr/local/bin/helm
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/dist/api ./dist/api
COPY --from=build /app/dist/src ./dist/src
# read at run time beside the compiled modules
COPY api/v1alpha2/bundledeployment-crd.yaml ./dist/api/v1alpha2/
COPY scripts/tool-versions.env ./dist/scripts/
ENV NODE_ENV=production \
    HOIST_HELM=/usr/local/bin/helm \
    HOIST_CACHE=/var/cache/hoist \
    HOME=/tmp
USER 65532:65532
# node is PID 1 and handles SIGTERM itself (graceful drain, Lease release)
ENTRYPOINT ["node", "/app/dist/src/cli/main.js"]
CMD ["run"]
