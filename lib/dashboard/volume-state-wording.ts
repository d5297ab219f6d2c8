/**
 * The words for a volume row's state, one source for the state badge (node table, pod page, volume
 * page, embeds), the blocking stage's headline and the Markdown summary; the plan's reasons (from
 * the agent) use the same {@link FOUND_ON_DISK}.
 *
 * "uncertain" has two causes that an operator must tell apart:
 * - `found-on-disk`: the agent rebuilt the volume from disk (reconstruction after its restart; in
 *   observe mode, every volume it reads from the kubelet's root dir) and nothing has confirmed it
 *   since. Nothing failed: it says {@link FOUND_ON_DISK}, as the plan does.
 * - `outcome-unknown`: an operation's outcome is genuinely unknown (a SetUp or MountDevice that
 *   timed out): it says "uncertain".
 */
import { FOUND_ON_DISK } from '../api/observe.ts';
import type { VolumeState } from './pipeline.ts';

export { FOUND_ON_DISK };

/** Why a row is uncertain; see the module comment. */
export type UncertainCause = 'found-on-disk' | 'outcome-unknown';

/**
 * The cause of a row's uncertainty: null unless `state` is `uncertain`; `found-on-disk` in observe
 * mode (`observed`) or when reconstruction rebuilt this pod's volume and has not confirmed it
 * (`reconstructed`), else `outcome-unknown`.
 */
export function uncertainCauseOf(state: VolumeState, observed: boolean, reconstructed: boolean): UncertainCause | null {
  if (state !== 'uncertain') return null;
  return observed || reconstructed ? 'found-on-disk' : 'outcome-unknown';
}

const STATE_TEXT: Record<VolumeState, string> = {
  ready: 'ready',
  uncertain: 'uncertain',
  backoff: 'backoff',
  running: 'running',
  waiting: 'waiting',
  unmounting: 'unmounting',
};

/** The state in words: {@link FOUND_ON_DISK} for a volume uncertain only because it was rebuilt from disk, else the state's name. */
export function volumeStateText(state: VolumeState, cause: UncertainCause | null = null): string {
  return state === 'uncertain' && cause === 'found-on-disk' ? FOUND_ON_DISK : STATE_TEXT[state];
}

/** The blocking stage's headline for an uncertain stage, in the words of the cause and the mode. */
export function uncertainHeadline(cause: UncertainCause | null, observed: boolean): string {
  if (cause === 'found-on-disk') {
    const capital = `${FOUND_ON_DISK.charAt(0).toUpperCase()}${FOUND_ON_DISK.slice(1)}`;
    return observed
      ? `${capital}: the agent rebuilt it from the kubelet’s root dir; the kubelet settles it.`
      : `${capital}: the agent rebuilt it from the pod’s directory after its restart; the reconciler confirms it once the pod’s volumes resolve.`;
  }
  return 'Uncertain here: neither mounted nor failed; the reconciler will settle it.';
}
