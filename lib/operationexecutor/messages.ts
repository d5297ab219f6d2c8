/**
 * The kubelet's message shapes for operation errors and logs (operationexecutor
 * `GenerateMsg`/`GenerateError`): a simple form for events (`<prefix> for volume "<name>" : <err>`)
 * and a detailed form for logs and backoff (`<prefix> for volume "<name>" (UniqueName: "...") pod
 * "..." (UID: "...") : <err>`).
 */
import { specName } from '../volume/spec.ts';
import { errorMessage } from '../volume/errors.ts';
import { goQuote } from '../volume/util/go-format.ts';
import type { AttachedVolume, MountedVolume, VolumeToAttach, VolumeToMount } from './types.ts';

export interface Messages {
  simple: string;
  detailed: string;
}

/** `errSuffix`: ": <err>" or "" for no error. */
function errSuffix(err: unknown): string {
  return err === undefined || err === null ? '' : `: ${errorMessage(err)}`;
}

function build(prefix: string, suffix: string, volumeName: string, details: string): Messages {
  return {
    simple: `${prefix} for volume ${goQuote(volumeName)} ${suffix}`,
    detailed: `${prefix} for volume ${goQuote(volumeName)} ${details} ${suffix}`,
  };
}

export function volumeToMountMsg(v: VolumeToMount, prefix: string, suffix = ''): Messages {
  const details = `(UniqueName: ${goQuote(v.volumeName)}) pod ${goQuote(v.pod.metadata.name)} (UID: ${goQuote(v.pod.metadata.uid ?? '')})`;
  return build(prefix, suffix, specName(v.volumeSpec), details);
}

export function mountedVolumeMsg(v: MountedVolume, prefix: string, suffix = ''): Messages {
  const details = `(UniqueName: ${goQuote(v.volumeName)}) pod ${goQuote(v.podName)} (UID: ${goQuote(v.podUID)})`;
  return build(prefix, suffix, v.outerVolumeSpecName, details);
}

export function attachedVolumeMsg(v: AttachedVolume, prefix: string, suffix = ''): Messages {
  const details = `(UniqueName: ${goQuote(v.volumeName)}) on node ${goQuote(v.nodeName)}`;
  return build(prefix, suffix, specName(v.volumeSpec), details);
}

export function volumeToAttachMsg(v: VolumeToAttach, prefix: string, suffix = ''): Messages {
  const details = `(UniqueName: ${goQuote(v.volumeName)}) from node ${goQuote(v.nodeName)}`;
  return build(prefix, suffix, specName(v.volumeSpec), details);
}

/** The simple and detailed errors of a failed operation step. */
export function errorPair(msgs: (prefix: string, suffix: string) => Messages, prefix: string, err?: unknown): {
  eventErr: Error;
  detailedErr: Error;
} {
  const m = msgs(prefix, errSuffix(err));
  return { eventErr: new Error(m.simple), detailedErr: new Error(m.detailed) };
}
