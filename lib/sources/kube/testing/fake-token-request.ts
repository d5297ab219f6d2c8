/**
 * Test support: the fake API server's TokenRequest subresource
 * (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`), as the real server answers it
 * (kubernetes/kubernetes pkg/registry/core/serviceaccount/storage/token.go@v1.34): the spec
 * defaulted (expirationSeconds 3600, audiences the server's own when none are asked for), at
 * least 10 minutes, a bound pod that must exist with the given UID, and a JWT-shaped token with
 * the claims the real one carries (unsigned: the signature part is a fixed text). The caller
 * registers the token's user so that TokenReview accepts it.
 *
 * With a node identity, NodeRestriction's rules for tokens: bound to a pod, that pod bound to
 * this node, and the pod's service account (plugin/pkg/admission/noderestriction/admission.go).
 * Service accounts themselves are not stored; any name is accepted.
 */
import type { Clock } from '../../../clock/clock.ts';
import type { JsonObject, JsonValue } from '../plain-json.ts';
import { isJsonObject } from '../plain-json.ts';
import type { ObjectStore } from './object-store.ts';

/** The audiences of tokens requested without any (the real server's `--api-audiences` default). */
export const FAKE_API_AUDIENCES = ['https://kubernetes.default.svc.cluster.local'];
export const FAKE_TOKEN_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** The path of a TokenRequest: namespace and service account, or undefined for any other path. */
export function tokenRequestPath(pathname: string): { namespace: string; name: string } | undefined {
  const match = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/.exec(pathname);
  if (match === null) return undefined;
  return { namespace: decodeURIComponent(match[1] ?? ''), name: decodeURIComponent(match[2] ?? '') };
}

export interface TokenRequestAnswer {
  /** The TokenRequest to answer with 201. */
  body: JsonObject;
  token: string;
  /** What a TokenReview of the token reports. */
  user: { username: string; groups: string[]; extra: Record<string, string[]> };
}

export interface TokenRequestRefusal {
  status: number;
  reason: string;
  message: string;
}

const b64 = (value: JsonValue | string): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8').toString('base64url');

const stringOf = (object: JsonObject | undefined, key: string): string => {
  const value = object?.[key];
  return typeof value === 'string' ? value : '';
};

/** Serves one TokenRequest: the answer, or the refusal the real server would send. */
export function serveTokenRequest(
  store: ObjectStore,
  clock: Clock,
  nodeName: string | undefined,
  target: { namespace: string; name: string },
  body: JsonValue | undefined,
): TokenRequestAnswer | TokenRequestRefusal {
  const spec = isJsonObject(body) && isJsonObject(body.spec) ? body.spec : undefined;
  if (spec === undefined) return { status: 400, reason: 'BadRequest', message: 'TokenRequest: spec is required' };
  const expirationSeconds = typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : 3600;
  if (expirationSeconds < 600) {
    return { status: 422, reason: 'Invalid', message: `TokenRequest.authentication.k8s.io "${target.name}" is invalid: spec.expirationSeconds: Invalid value: ${String(expirationSeconds)}: may not specify a duration less than 10 minutes` };
  }
  const asked = Array.isArray(spec.audiences) ? spec.audiences.filter((a): a is string => typeof a === 'string') : [];
  const audiences = asked.length === 0 ? FAKE_API_AUDIENCES : asked;
  const ref = isJsonObject(spec.boundObjectRef) ? spec.boundObjectRef : undefined;
  let pod: { name: string; uid: string } | undefined;
  if (ref !== undefined) {
    if (stringOf(ref, 'kind') !== 'Pod') return { status: 400, reason: 'BadRequest', message: `cannot bind token to object of type ${stringOf(ref, 'kind')}` };
    const stored = store.get('pods', target.namespace, stringOf(ref, 'name'));
    if (stored === undefined) return { status: 404, reason: 'NotFound', message: `pods "${stringOf(ref, 'name')}" not found` };
    const meta = isJsonObject(stored.metadata) ? stored.metadata : undefined;
    const podSpec = isJsonObject(stored.spec) ? stored.spec : undefined;
    const uid = stringOf(meta, 'uid');
    if (stringOf(ref, 'uid') !== '' && stringOf(ref, 'uid') !== uid) {
      return { status: 409, reason: 'Conflict', message: `the UID in the bound object reference (${stringOf(ref, 'uid')}) does not match the UID in record. The object might have been deleted and then recreated` };
    }
    if (nodeName !== undefined) {
      if (stringOf(podSpec, 'nodeName') !== nodeName) return { status: 403, reason: 'Forbidden', message: `node requested token bound to a pod scheduled on a different node` };
      const account = stringOf(podSpec, 'serviceAccountName') || 'default';
      if (account !== target.name) return { status: 403, reason: 'Forbidden', message: `node requested token with a pod binding with a service account name mismatch` };
    }
    pod = { name: stringOf(ref, 'name'), uid };
  } else if (nodeName !== undefined) {
    return { status: 403, reason: 'Forbidden', message: 'node requested token not bound to a pod' };
  }
  const iat = Math.floor(clock.now() / 1000);
  const exp = iat + expirationSeconds;
  const username = `system:serviceaccount:${target.namespace}:${target.name}`;
  const claims: JsonObject = {
    aud: audiences,
    exp,
    iat,
    nbf: iat,
    iss: FAKE_TOKEN_ISSUER,
    sub: username,
    'kubernetes.io': {
      namespace: target.namespace,
      serviceaccount: { name: target.name },
      ...(pod === undefined ? {} : { pod: { name: pod.name, uid: pod.uid } }),
    },
  };
  const token = `${b64({ alg: 'RS256', kid: 'fake-apiserver' })}.${b64(claims)}.${b64('fake-apiserver-signature')}`;
  const body201: JsonObject = {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { name: target.name, namespace: target.namespace, creationTimestamp: new Date(iat * 1000).toISOString().replace('.000Z', 'Z') },
    spec: { audiences, expirationSeconds, ...(ref === undefined ? {} : { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod?.name ?? '', uid: pod?.uid ?? '' } }) },
    status: { token, expirationTimestamp: new Date(exp * 1000).toISOString().replace('.000Z', 'Z') },
  };
  const extra: Record<string, string[]> = pod === undefined ? {} : { 'authentication.kubernetes.io/pod-name': [pod.name], 'authentication.kubernetes.io/pod-uid': [pod.uid] };
  return { body: body201, token, user: { username, groups: ['system:serviceaccounts', `system:serviceaccounts:${target.namespace}`, 'system:authenticated'], extra } };
}
