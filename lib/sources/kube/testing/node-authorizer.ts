/**
 * Test support: what the real API server answers a kubelet (`system:node:<name>`, group
 * `system:nodes`) with `--authorization-mode=Node,RBAC` and the NodeRestriction admission plugin,
 * for the requests the fake API server serves. Only refusals are modelled; everything not listed
 * here is allowed (the `system:node` ClusterRole grants it).
 *
 * Modelled after kubernetes/kubernetes@v1.34:
 * - plugin/pkg/auth/authorizer/node/node_authorizer.go: secrets, configmaps, PVCs, PVs and
 *   VolumeAttachments only by `get` of an object related to the node through the graph
 *   pod (spec.nodeName) → volume → claim → PV → CSI secrets (VolumeAttachments: spec.nodeName);
 *   LIST/WATCH of them is "can only get individual resources of this type" (secrets and
 *   configmaps also allow a watch/list with `fieldSelector=metadata.name=<related>`); a claim's
 *   status may be updated/patched when related, the claim itself never.
 * - plugin/pkg/admission/noderestriction/admission.go: a node writes only its own Node (and no
 *   labels outside the kubelet's set: `node-restriction.kubernetes.io/` and other
 *   kubernetes.io/k8s.io labels), its own Lease in kube-node-lease, its own CSINode, deletes only
 *   pods bound to it and creates only mirror pods.
 */
import type { JsonObject, JsonValue } from '../plain-json.ts';
import { isJsonObject } from '../plain-json.ts';
import type { FakeResource, ObjectStore } from './object-store.ts';

export interface NodeRequest {
  resource: FakeResource;
  verb: 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: Record<string, string>;
  /** The request body (create/update), or for a patch the object after the patch. */
  object: JsonObject | undefined;
  /** The stored object before a write, if any. */
  existing: JsonObject | undefined;
}

/** A refusal: HTTP 403 Forbidden with this message. */
export interface NodeRefusal {
  message: string;
}

const graphResources = new Set<FakeResource>(['secrets', 'configmaps', 'persistentvolumeclaims', 'persistentvolumes', 'volumeattachments']);

/** Labels a node may set on itself (noderestriction `kubeletLabels` and prefixes). */
const kubeletLabels = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/instance-type',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'node.kubernetes.io/windows-build',
]);
const kubeletLabelPrefixes = ['kubelet.kubernetes.io/', 'node.kubernetes.io/'];

/** Whether a node may set this label on itself (`IsForbiddenLabel` negated). */
export function nodeMaySetLabel(key: string): boolean {
  const prefix = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
  if (prefix === 'node-restriction.kubernetes.io' || prefix.endsWith('.node-restriction.kubernetes.io')) return false;
  const namespaced = prefix === 'kubernetes.io' || prefix.endsWith('.kubernetes.io') || prefix === 'k8s.io' || prefix.endsWith('.k8s.io');
  if (!namespaced) return true;
  return kubeletLabels.has(key) || kubeletLabelPrefixes.some((p) => key.startsWith(p));
}

/** The refusal of `request` by the node `nodeName`, or null when the real server would allow it. */
export function authorizeNodeRequest(nodeName: string, store: ObjectStore, request: NodeRequest): NodeRefusal | null {
  const user = `system:node:${nodeName}`;
  const { resource, verb } = request;
  const scope = request.namespace === undefined ? 'at the cluster scope' : `in the namespace "${request.namespace}"`;
  const sub = request.subresource === undefined ? '' : `/${request.subresource}`;
  const forbidden = (why: string): NodeRefusal => ({
    message: `${resource}${sub}${request.name === undefined ? '' : ` "${request.name}"`} is forbidden: User "${user}" cannot ${verb} resource "${resource}${sub}" in API group "${groupOf(resource)}" ${scope}: ${why}`,
  });
  const target = request.name ?? objectName(request.object);
  const admission = (why: string): NodeRefusal => ({ message: `${resource}${target === undefined ? '' : ` "${target}"`} is forbidden: ${why}` });

  if (graphResources.has(resource)) {
    if (resource === 'persistentvolumeclaims' && request.subresource === 'status' && (verb === 'update' || verb === 'patch')) {
      return related(nodeName, store, request) ? null : forbidden(`no relationship found between node '${nodeName}' and this object`);
    }
    if (verb === 'list' || verb === 'watch') {
      const byName = /^metadata\.name=(.+)$/.exec(request.query.fieldSelector ?? '')?.[1];
      if ((resource === 'secrets' || resource === 'configmaps') && byName !== undefined && related(nodeName, store, { ...request, name: byName })) return null;
      return forbidden('can only get individual resources of this type');
    }
    if (verb !== 'get') return forbidden(`can only get individual resources of this type`);
    return related(nodeName, store, request) ? null : forbidden(`no relationship found between node '${nodeName}' and this object`);
  }

  switch (resource) {
    case 'nodes': {
      if (verb === 'get' || verb === 'list' || verb === 'watch') return null;
      if (request.name !== undefined && request.name !== nodeName) return admission(`node "${nodeName}" is not allowed to modify node "${request.name}"`);
      const name = request.object === undefined ? undefined : metadata(request.object).name;
      if (verb === 'create' && name !== nodeName) return admission(`node "${nodeName}" is not allowed to modify node "${typeof name === 'string' ? name : ''}"`);
      const changed = changedLabels(request.existing, request.object).filter((key) => !nodeMaySetLabel(key));
      if (changed.length > 0) return admission(`node "${nodeName}" is not allowed to ${verb === 'create' ? 'set' : 'modify'} the following labels: ${changed.sort().join(', ')}`);
      return null;
    }
    case 'leases': {
      if (verb === 'get' || verb === 'list' || verb === 'watch') return null;
      if (request.namespace !== 'kube-node-lease') return admission('can only access leases in the "kube-node-lease" namespace');
      const name = request.name ?? objectName(request.object);
      return name === nodeName ? null : admission('can only access node lease with the same name as the requesting node');
    }
    case 'csinodes': {
      if (verb === 'get' || verb === 'list' || verb === 'watch') return null;
      const name = request.name ?? objectName(request.object);
      return name === nodeName ? null : admission('can only access CSINode with the same name as the requesting node');
    }
    case 'pods': {
      if (verb === 'create') {
        const annotations = request.object === undefined ? undefined : metadata(request.object).annotations;
        const mirror = isJsonObject(annotations) && typeof annotations['kubernetes.io/config.mirror'] === 'string';
        return mirror ? null : admission(`pod does not have "kubernetes.io/config.mirror" annotation, node "${nodeName}" can only create mirror pods`);
      }
      if (verb === 'delete') {
        const bound = request.existing === undefined ? undefined : spec(request.existing).nodeName;
        if (request.existing !== undefined && bound !== nodeName) return admission(`node "${nodeName}" can only delete pods with spec.nodeName set to itself`);
      }
      if ((verb === 'update' || verb === 'patch') && request.subresource === undefined) return forbidden('can only update the status of pods');
      return null;
    }
    default:
      return null;
  }
}

function groupOf(resource: FakeResource): string {
  switch (resource) {
    case 'csidrivers':
    case 'csinodes':
    case 'volumeattachments':
      return 'storage.k8s.io';
    case 'leases':
      return 'coordination.k8s.io';
    default:
      return '';
  }
}

function metadata(object: JsonObject): JsonObject {
  return isJsonObject(object.metadata) ? object.metadata : {};
}

function spec(object: JsonObject): JsonObject {
  return isJsonObject(object.spec) ? object.spec : {};
}

function objectName(object: JsonObject | undefined): string | undefined {
  const name = object === undefined ? undefined : metadata(object).name;
  return typeof name === 'string' ? name : undefined;
}

function labelsOf(object: JsonObject | undefined): Record<string, JsonValue> {
  const labels = object === undefined ? undefined : metadata(object).labels;
  return isJsonObject(labels) ? labels : {};
}

function changedLabels(before: JsonObject | undefined, after: JsonObject | undefined): string[] {
  const a = labelsOf(before);
  const b = labelsOf(after);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((key) => a[key] !== b[key]);
}

function str(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The node authorizer's graph, computed from the store on every request. */
function related(nodeName: string, store: ObjectStore, request: NodeRequest): boolean {
  const want = `${request.resource} ${request.namespace ?? ''}/${request.name ?? ''}`;
  if (request.resource === 'volumeattachments') {
    const va = store.get('volumeattachments', undefined, request.name ?? '');
    return va !== undefined && spec(va).nodeName === nodeName;
  }
  const reachable = new Set<string>();
  const claims: { namespace: string; name: string }[] = [];
  for (const pod of store.list('pods')) {
    if (spec(pod).nodeName !== nodeName) continue;
    const namespace = str(metadata(pod).namespace) ?? 'default';
    const podName = str(metadata(pod).name) ?? '';
    const volumes = spec(pod).volumes;
    for (const volume of Array.isArray(volumes) ? volumes : []) {
      if (!isJsonObject(volume)) continue;
      const add = (resource: string, name: string | undefined): void => {
        if (name !== undefined) reachable.add(`${resource} ${namespace}/${name}`);
      };
      const field = (key: string): JsonObject => (isJsonObject(volume[key]) ? volume[key] : {});
      const claimName = str(field('persistentVolumeClaim').claimName) ?? (volume.ephemeral === undefined ? undefined : `${podName}-${str(volume.name) ?? ''}`);
      if (claimName !== undefined) claims.push({ namespace, name: claimName });
      add('persistentvolumeclaims', claimName);
      add('configmaps', str(field('configMap').name));
      add('secrets', str(field('secret').secretName));
      const csiSecret = isJsonObject(field('csi').nodePublishSecretRef) ? field('csi').nodePublishSecretRef : {};
      add('secrets', isJsonObject(csiSecret) ? str(csiSecret.name) : undefined);
      const sources = field('projected').sources;
      for (const source of Array.isArray(sources) ? sources : []) {
        if (!isJsonObject(source)) continue;
        add('configmaps', isJsonObject(source.configMap) ? str(source.configMap.name) : undefined);
        add('secrets', isJsonObject(source.secret) ? str(source.secret.name) : undefined);
      }
    }
  }
  for (const claim of claims) {
    const pvc = store.get('persistentvolumeclaims', claim.namespace, claim.name);
    const volumeName = pvc === undefined ? undefined : str(spec(pvc).volumeName);
    if (volumeName === undefined) continue;
    reachable.add(`persistentvolumes /${volumeName}`);
    const pv = store.get('persistentvolumes', undefined, volumeName);
    const csi = pv === undefined ? undefined : spec(pv).csi;
    if (!isJsonObject(csi)) continue;
    for (const key of ['nodeStageSecretRef', 'nodePublishSecretRef', 'nodeExpandSecretRef', 'controllerExpandSecretRef']) {
      const ref = csi[key];
      if (isJsonObject(ref) && str(ref.name) !== undefined) reachable.add(`secrets ${str(ref.namespace) ?? 'default'}/${str(ref.name) ?? ''}`);
    }
  }
  return reachable.has(want);
}
