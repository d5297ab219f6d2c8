/**
 * Uids for manifest pods that do not declare `metadata.uid`.
 *
 * The kubelet's file source hashes the whole pod plus `host:<node>` and `file:<path>`, so every
 * edit of a static pod makes a new pod. VolumeScope instead derives the uid from the identity
 * only (node, namespace, name): editing a manifest updates the same pod, and its volumes stay
 * mounted. The node name is mixed in as the kubelet does, so the same manifest on two nodes
 * gives two different pods.
 */
import { createHash } from 'node:crypto';

/** Versioned so a future change of the derivation cannot silently collide with old uids. */
const derivationTag = 'volumescope/manifest-pod-uid/v1';

/**
 * Returns a deterministic uid in RFC 4122 layout (8-4-4-4-12 lowercase hex) taken from
 * sha256 of (node, namespace, name), with the version nibble set to 8 ("custom", RFC 9562) and
 * the RFC 4122 variant bits, so it is recognisably derived and never mistaken for a random v4.
 * The parts are JSON-encoded before hashing, so no two different triples share an input.
 */
export function deriveManifestPodUID(nodeName: string, namespace: string, name: string): string {
  const hex = createHash('sha256').update(JSON.stringify([derivationTag, nodeName, namespace, name])).digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
