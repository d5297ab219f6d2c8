// An observe-mode VolumeScope agent beside node kubelet-0 of the cluster (scripts/cluster/cluster.ts):
// the upstream kubelet manages that node's volumes, and this agent reads its root dir, the mount
// table of the cluster's mount namespace and the API server, as `--mode=observe` does on a real node.
//
// Contract of {@link startKubeletObserver}:
// - the agent's identity is a client certificate of its own (user `volumescope:observer:<name>`),
//   bound to a ClusterRole with the rules of deploy/base/agent-rbac.yaml's
//   `volumescope-agent-observe` (read from that file, so the agent gets exactly what the deployed
//   observe-mode agent gets; a node identity may not list PVs, events or VolumeAttachments);
// - it watches node kubelet-0 (`--node-name=kubelet-0`) and reads `facts.kubelet.rootDir` (never
//   written) and `/proc/self/mountinfo`: the caller runs in the cluster's private mount namespace,
//   so that table is the kubelet's;
// - its own files (token, an empty plugins_registry) live in `<stateDir>/nodes/<name>`, its log is
//   `<logsDir>/agent-<name>.log`; the returned agent's `facts.nodeName` is `<name>` (the name the
//   dashboard lists), its `facts.rootDir` that directory, not the kubelet's;
// - `--allow-orphan-cleanup` only when asked (off by default: the kubelet cleans up its own
//   orphaned pod directories);
// - the agent belongs to the caller, which stops it ({@link ClusterAgent.stop}) before the cluster.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { KUBELET_NODE, issueClientIdentity, kubectl, startAgent, type ClusterAgent, type ClusterFacts } from './cluster.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The deployed observe-mode agent's RBAC; its ClusterRole's rules are the observer's. */
const OBSERVE_RBAC = join(root, 'deploy', 'base', 'agent-rbac.yaml');
const OBSERVE_ROLE = 'volumescope-agent-observe';

/** The rules of the deployed observe-mode ClusterRole. */
function observeRules(): unknown[] {
  for (const doc of parseAllDocuments(readFileSync(OBSERVE_RBAC, 'utf8'))) {
    const object = doc.toJS() as { kind?: string; metadata?: { name?: string }; rules?: unknown[] } | null;
    if (object?.kind === 'ClusterRole' && object.metadata?.name === OBSERVE_ROLE && Array.isArray(object.rules)) return object.rules;
  }
  throw new Error(`${OBSERVE_RBAC} has no ClusterRole ${OBSERVE_ROLE} with rules`);
}

export async function startKubeletObserver(facts: ClusterFacts, options: { name?: string; allowOrphanCleanup?: boolean } = {}): Promise<ClusterAgent> {
  const name = options.name ?? `${KUBELET_NODE}-observer`;
  const user = `volumescope:observer:${name}`;
  const role = `volumescope-observer-${name}`;
  const identity = issueClientIdentity(facts, { file: `observer-${name}`, user, groups: [] });
  const rbac = {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role }, rules: observeRules() },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    ],
  };
  await kubectl(facts, ['apply', '-f', '-'], { input: JSON.stringify(rbac) });
  return startAgent(facts, {
    nodeName: name,
    kubeconfig: identity.kubeconfig,
    // After ClusterAgent's managed-mode flags: the last value of a flag wins.
    args: [
      '--mode=observe',
      '--register-node=false',
      `--node-name=${KUBELET_NODE}`,
      `--root-dir=${facts.kubelet.rootDir}`,
      '--mountinfo=/proc/self/mountinfo',
      '--observe-refresh-period=1s',
      ...(options.allowOrphanCleanup === true ? ['--allow-orphan-cleanup'] : []),
    ],
  });
}
