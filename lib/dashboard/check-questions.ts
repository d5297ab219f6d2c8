/**
 * The agent's safety checks as questions with answers ("Pod still known to the API? no"), for
 * the check lists of every dialog: a check's name says what was checked, its `ok` whether that
 * allows the action; the question turns both into words an operator reads at a glance. Pure.
 */
import type { Check } from '../api/snapshot.ts';

/**
 * A question per check name, and which answer passes: `yes` when a passing check answers "yes",
 * `no` when it answers "no" (the question asks for the danger: "Pod still known to the API?").
 */
const QUESTIONS: Readonly<Record<string, readonly [question: string, passes: 'yes' | 'no']>> = {
  // The orphan cleanup (lib/observe/orphan-cleanup.ts).
  'cleanup-enabled': ['Orphan cleanup enabled on the agent (--allow-orphan-cleanup)?', 'yes'],
  'pod-known-to-api': ['Pod still known to the API?', 'no'],
  'pod-in-desired-state': ['Pod still in the desired state?', 'no'],
  'pod-has-running-containers': ['Pod still has running containers?', 'no'],
  'desired-state-incomplete': ['Pod list incomplete?', 'no'],
  'kubelet-must-unmount': ['Left to the kubelet to unmount first?', 'no'],
  'mount-table-read': ['Mount table readable?', 'yes'],
  'mount-table-shows-root-dir': ['Mount table describes the kubelet root dir?', 'yes'],
  'pod-dir-inside-mount': ['Pod directory inside another mount?', 'no'],
  'mount-shared-with-live-pod': ['A mount shared with a live pod?', 'no'],
  'entry-limit': ['Small enough to walk (entry limit)?', 'yes'],
  'unlisted-filesystem-boundary': ['A file system boundary the mount table does not list?', 'no'],
  'pod-dir-unchanged': ['Pod directory the one planned for?', 'yes'],
  'mounts-as-planned': ['Mounts as planned?', 'yes'],
  'no-mounts-left': ['Anything left mounted?', 'no'],
  // Unmount and Retry now (lib/volumemanager/operator-actions.ts, agent/server/).
  'managed-mode': ['Agent in managed mode?', 'yes'],
  'states-synced': ['Agent’s states synced?', 'yes'],
  'reconstruction-done': ['Reconstruction done?', 'yes'],
  'pod-not-desired': ['Pod no longer wants the volume?', 'yes'],
  'pod-absent-from-source': ['Pod gone from its source?', 'yes'],
  'source-no-error': ['Pod source read without errors?', 'yes'],
  'volume-mounted': ['Volume mounted for the pod?', 'yes'],
  'no-operation-running': ['An operation running on the volume?', 'no'],
  'operation-exists': ['Operation still pending?', 'yes'],
  'operation-not-running': ['Operation running right now?', 'no'],
  'operation-lock': ['Operation free to start?', 'yes'],
  'rate-limit': ['Within the rate limit?', 'yes'],
};

/** Details that only repeat the answer. */
const BARE_ANSWERS: ReadonlySet<string> = new Set(['yes', 'no', 'none', 'complete']);

/** A check as a question and its answer. */
export interface CheckQuestion {
  /** E.g. `Pod still known to the API?`; for a check this list does not know, its name with a `?`. */
  readonly question: string;
  /** `yes`, `no`, or `unknown` when the check itself failed (the agent refuses rather than guess). */
  readonly answer: 'yes' | 'no' | 'unknown';
  /** The agent's detail when it says more than the answer; `null` otherwise. */
  readonly detail: string | null;
  readonly ok: boolean;
}

/** `check` as a question with its answer (see the module comment). */
export function checkQuestion(check: Check): CheckQuestion {
  const detail = BARE_ANSWERS.has(check.detail.trim()) || check.detail.trim() === '' ? null : check.detail;
  const unmount = /^unmount (.+)$/.exec(check.name);
  if (unmount !== null) return { question: `Unmounted ${unmount[1] ?? ''}?`, answer: check.ok ? 'yes' : 'no', detail, ok: check.ok };
  const known = QUESTIONS[check.name];
  if (known === undefined) return { question: `${check.name}?`, answer: check.ok ? 'yes' : 'no', detail, ok: check.ok };
  if (!check.ok && check.detail.startsWith('the check failed')) return { question: known[0], answer: 'unknown', detail, ok: false };
  const [question, passes] = known;
  const other = passes === 'yes' ? 'no' : 'yes';
  return { question, answer: check.ok ? passes : other, detail, ok: check.ok };
}

/** One line of a check list as plain text: `Pod still known to the API? no`, with the detail after a dash. */
export function checkLine(check: Check): string {
  const q = checkQuestion(check);
  return `${q.question} ${q.answer}${q.detail === null ? '' : ` — ${q.detail}`}`;
}
