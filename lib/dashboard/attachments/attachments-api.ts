/**
 * The JSON of the dashboard's attachment routes (`GET /api/attachments`,
 * `GET /api/attachments/<pv>`), shared by the route handlers and the pages that fetch them.
 * Nothing here runs on import; the response builders are pure.
 */
import type { AttachmentView, InformerProblem } from './attachment-informers.ts';
import { explainVolume, problemVolumes, type VolumeExplanation } from './explain.ts';
import type { NodeFacts, VolumeAttachmentState } from './model.ts';

/** `GET /api/attachments`: every blocked or suspect volume. */
export interface AttachmentsListResponse {
  /** Every resource has been listed once; before that the lists are empty. */
  readonly listed: boolean;
  readonly problems: readonly InformerProblem[];
  /** The server's time when it answered (countdowns are computed against it). */
  readonly nowMs: number;
  readonly builtAtMs: number | null;
  readonly counts: { readonly volumes: number; readonly blocked: number; readonly suspect: number };
  readonly volumes: readonly VolumeExplanation[];
  /** Nodes with the out-of-service taint (a reminder until it is removed). */
  readonly outOfServiceNodes: readonly string[];
}

/** `GET /api/attachments/<pv>`: one volume, its nodes and every verdict. */
export interface AttachmentDetailResponse {
  readonly listed: boolean;
  readonly problems: readonly InformerProblem[];
  readonly nowMs: number;
  readonly builtAtMs: number | null;
  /** `null` when no tracked volume has this name (not a CSI PV that needs attaching, or none). */
  readonly volume: VolumeAttachmentState | null;
  readonly nodes: readonly NodeFacts[];
  readonly explanation: VolumeExplanation | null;
}

/** The answer when the view cannot run at all (no Kubernetes API configured). */
export interface AttachmentsErrorResponse {
  readonly error: string;
  readonly variable: string;
}

export function attachmentsListResponse(view: AttachmentView, nowMs: number): AttachmentsListResponse {
  const model = view.model;
  const volumes = model === null ? [] : problemVolumes(model, nowMs);
  return {
    listed: view.listed,
    problems: view.problems,
    nowMs,
    builtAtMs: model?.builtAtMs ?? null,
    counts: {
      volumes: model?.volumes.length ?? 0,
      blocked: volumes.filter((v) => v.severity === 'blocked').length,
      suspect: volumes.filter((v) => v.severity === 'suspect').length,
    },
    volumes,
    outOfServiceNodes: model === null ? [] : Object.values(model.nodes).filter((n) => n.outOfService !== null).map((n) => n.name),
  };
}

export function attachmentDetailResponse(view: AttachmentView, pv: string, nowMs: number): AttachmentDetailResponse {
  const model = view.model;
  const volume = model?.volumes.find((v) => v.pv === pv) ?? null;
  return {
    listed: view.listed,
    problems: view.problems,
    nowMs,
    builtAtMs: model?.builtAtMs ?? null,
    volume,
    nodes: volume === null || model === null ? [] : volume.nodes.flatMap((s) => (model.nodes[s.node] === undefined ? [] : [model.nodes[s.node] as NodeFacts])),
    explanation: volume === null || model === null ? null : explainVolume(volume, model, nowMs),
  };
}
