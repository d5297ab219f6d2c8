# syntax=docker/dockerfile:1.7
#
# VolumeScope container image: one image, two programs (scripts/container-entrypoint.sh).
#   docker run IMAGE dashboard             # next start on port 3000 (the default command)
#   docker run --user 0 IMAGE agent ...    # the node agent; flags as `npm run agent -- --help`
# Kubernetes manifests: deploy/ (docs/cluster.md).
#
# Build:  docker build -t volumescope:dev .
#   --build-arg VOLUMESCOPE_FRAME_ANCESTORS="https://wiki.example.com"   origins that may frame
#     /embed/... pages; Next bakes it in at build time (lib/dashboard/README.md).
#   --secret id=npmrc,src=$HOME/.npmrc   a registry mirror or token for `npm ci`; it is mounted
#     for that step only and never stored in a layer.
#
# Runtime base: node:24-slim (Debian slim with the official Node 24), not debian:*-slim plus the
# Node binary from node_modules. The `node` npm package that pins Node for npm scripts is a
# devDependency: a production install leaves it out, and copying its 120 MB binary by hand would
# bypass the package manager without saving anything, since node:24-slim carries the same major
# and gets rebuilt upstream with Node security releases. The build stage uses the same base, so
# `npm ci` and `next build` run on the Node the image ships. The tag follows the 24.x line; for
# reproducible builds pass an exact version or digest, e.g.
# --build-arg NODE_IMAGE=node:24.21.0-slim (the version package-lock.json pins).
ARG NODE_IMAGE=node:24-slim

# ---------------------------------------------------------------------------------------------
# build: every dependency (dev included), the dashboard's `next build`, and the agent bundled
# into one script plus its entry (deploy/image/bundle-agent.mjs explains why and what it keeps).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    --mount=type=secret,id=npmrc,target=/root/.npmrc \
    npm ci --no-audit --no-fund
COPY . .
ARG VOLUMESCOPE_FRAME_ANCESTORS=""
# The same path (/app) as at run time: Next records absolute paths in parts of its build output.
RUN node node_modules/next/dist/bin/next build \
 && rm -rf .next/cache
RUN node deploy/image/bundle-agent.mjs dist/agent.mjs

# ---------------------------------------------------------------------------------------------
# prod-deps: `dependencies` only. Also without optional packages: they are platform binaries
# for Next's compiler (swc; `next start` serves a finished build and does not load it) and for
# sharp (image optimisation; the dashboard does not use next/image). No install scripts run:
# none of the production packages needs one.
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    --mount=type=secret,id=npmrc,target=/root/.npmrc \
    npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# ---------------------------------------------------------------------------------------------
# runtime
FROM ${NODE_IMAGE} AS runtime
# util-linux/mount: mount(8) and umount(8), which the agent runs in managed mode.
# tini: a small init that forwards signals and reaps orphans. `-s` registers it as a subreaper,
# so it also works where it is not PID 1 (the agent DaemonSet shares the host's PID namespace).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends util-linux mount tini \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
ENV NODE_ENV=production \
    NEXT_TELEMETRY_DISABLED=1
# package.json: "type": "module" (next.config.js is an ES module) and the agent's version.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json next.config.js ./
COPY lib/dashboard/frame-ancestors.js ./lib/dashboard/
COPY --from=build /app/.next ./.next
# The agent: the bundle, and the CSI .proto files it loads at the same place relative to it.
COPY --from=build /app/dist ./dist
COPY lib/csi-spec/*.proto ./lib/csi-spec/
# The child process of the mount health checks and the blocker search (agent/node/fs-probe/), found
# beside its source location as the bundle's import.meta.url rule keeps it.
COPY agent/node/fs-probe/probe-child.mjs ./agent/node/fs-probe/
COPY --chmod=0755 scripts/container-entrypoint.sh /usr/local/bin/volumescope-entrypoint
# Next's runtime cache (fetch and image caches): the one place the dashboard writes; a volume in
# Kubernetes (the root filesystem is read-only there).
RUN mkdir -p .next/cache && chown 1000:1000 .next/cache

# Fail the build, not the first start, when a production dependency or file is missing: every
# package the agent imports is loaded by --help, and Next must be able to load its config.
RUN volumescope-entrypoint agent --help >/dev/null \
 && node --input-type=module -e "await import('/app/next.config.js'); await import('next/dist/server/next.js')" \
 && mount --version >/dev/null && umount --version >/dev/null \
 && node agent/node/fs-probe/probe-child.mjs </dev/null

# The dashboard runs as the image's `node` user. A numeric id, so that Kubernetes can check
# runAsNonRoot. The agent needs root and says so (runAsUser: 0 in deploy/, --user 0 with docker).
USER 1000:1000
EXPOSE 3000 7070
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/local/bin/volumescope-entrypoint"]
CMD ["dashboard"]
