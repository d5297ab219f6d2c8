/**
 * What the reconstruction table (components/node/reconstruction-table.tsx) says about one volume directory
 * found after an agent restart, beyond its outcome: why a volume is kept mounted although no
 * desired pod names it (its pod is still listed but its volumes could not be resolved, e.g. a
 * claim GET failed after the restart, kubernetes#120150).
 */
import type { ReconstructedVolume } from '../api/snapshot.ts';

/** The note under an outcome; the text alone must suffice (no colour-only meaning). */
export interface ReconstructionNote {
  /** Shown like an uncertain state (the mount is uncertain until confirmed). */
  readonly tone: 'uncertain';
  /** Short, e.g. "kept mounted (uncertain)". */
  readonly label: string;
  /** The full sentence with the agent's reason verbatim. */
  readonly detail: string;
}

/**
 * The note of a reconstructed (or failed) volume that is kept because its pod's volumes could not
 * be resolved; null when there is nothing to add (also for agents that do not send the reason).
 */
export function reconstructionNote(volume: Pick<ReconstructedVolume, 'outcome' | 'keptBecause'>): ReconstructionNote | null {
  const reason = volume.keptBecause;
  if (reason === undefined || reason === '') return null;
  if (volume.outcome !== 'reconstructed' && volume.outcome !== 'failed') return null;
  return {
    tone: 'uncertain',
    label: 'kept mounted (uncertain)',
    detail: `Not unmounted: the pod is still listed but its volumes could not be resolved. It is confirmed when they resolve, and released only when the pod is gone or terminated. ${reason}`,
  };
}
