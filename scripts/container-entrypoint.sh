#!/bin/sh
# Entrypoint of the VolumeScope container image (Dockerfile): one image runs either program.
#
#   agent [flags...]      the node agent; the flags are the agent's own (`agent --help`)
#   dashboard [args...]   the dashboard: `next start` on 0.0.0.0:${PORT:-3000}; extra args go
#                         to `next start` and win over these defaults (e.g. `dashboard -H ::`)
#
# Either program replaces this shell (exec), so it receives SIGTERM directly and its exit code
# is the container's. Exit code 2 (the agent's "bad flag" code) for a missing or unknown command.
set -eu

app_dir="${VOLUMESCOPE_APP_DIR:-/app}"

usage() {
  cat <<USAGE
Usage: volumescope-entrypoint agent [flags...]     the node agent (agent --help lists the flags)
       volumescope-entrypoint dashboard [args...]  the dashboard (next start, port ${PORT:-3000})
USAGE
}

command="${1:-}"
case "$command" in
  agent)
    shift
    # One process (no npm or tsx in between), with the V8 flags of `npm run agent` (the semi-space
    # cap; --expose-gc for the heap trim after a burst, agent/node/heap-trim.ts). No
    # --enable-source-maps: it costs about 240 ms of every start (deploy/image/bundle-agent.mjs
    # says why); NODE_OPTIONS=--enable-source-maps turns it on for a debugging session.
    exec node --max-semi-space-size=8 --expose-gc "$app_dir/dist/agent.mjs" "$@"
    ;;
  dashboard)
    shift
    cd "$app_dir"
    export NEXT_TELEMETRY_DISABLED=1
    exec node "$app_dir/node_modules/next/dist/bin/next" start -H 0.0.0.0 -p "${PORT:-3000}" "$@"
    ;;
  help | -h | --help)
    usage
    exit 0
    ;;
  '')
    echo "volumescope-entrypoint: no command given" >&2
    usage >&2
    exit 2
    ;;
  *)
    echo "volumescope-entrypoint: unknown command \"$command\"" >&2
    usage >&2
    exit 2
    ;;
esac
