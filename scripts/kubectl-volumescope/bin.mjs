#!/usr/bin/env node
// The `kubectl-volumescope` executable (package.json `bin`; kubectl runs any `kubectl-<name>`
// on PATH as `kubectl <name>`). A launcher, because the plugin is TypeScript that imports the
// project's own modules (lib/api, lib/dashboard): it moves to the pinned Node 24 when an older
// Node started it, registers tsx and runs main.ts. `npm install -g <checkout>` links the
// checkout, so its node_modules (tsx, client-node, zod) are the ones used.
import { ensurePinnedNode } from '../pinned-node.mjs';

ensurePinnedNode(import.meta.url);
const { register } = await import('tsx/esm/api');
register();
await import('./main.ts');
