import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../lib/api/index.ts';
import { FIXTURE_T0, exampleSnapshot, generatedOperation, generatedPod, generatedVolume } from '../../lib/api/testing/snapshot-fixtures.ts';
import { historyByOperationKey } from '../../lib/dashboard/incident-history.ts';
import { deriveVolumeRows, type VolumeRow, type VolumeState } from '../../lib/dashboard/pipeline.ts';
import { VolumePipeline } from './volume-pipeline.tsx';

// One fixture per state an operator sees on a volume, built from the API's snapshot fixtures: the
// example node (ready, uncertain) plus generated pods for the states it does not show.
const example = exampleSnapshot();
const withPods = (extra: Partial<Snapshot>): Snapshot => ({ ...example, ...extra });
const FIXTURES: { name: string; state: VolumeState; snapshot: Snapshot; volume: string; retry: boolean; unmount: boolean; blocking: string | null }[] = [
  { name: 'a mounted volume is ready, with no blocking stage and no action', state: 'ready', snapshot: example, volume: 'config', retry: false, unmount: false, blocking: null },
  { name: 'an uncertain device mount is uncertain, blocking at the device mount', state: 'uncertain', snapshot: example, volume: 'pgdata', retry: true, unmount: false, blocking: 'device mounted' },
  {
    name: 'a failed mount waiting for its retry is in backoff, with Retry now',
    state: 'backoff',
    snapshot: withPods({ desired: { pods: [generatedPod(1)] }, actual: { volumes: [] }, operations: [generatedOperation(1, 3)] }),
    volume: 'data',
    retry: true,
    unmount: false,
    blocking: 'attached',
  },
  {
    name: 'a mount that runs now is running',
    state: 'running',
    snapshot: withPods({ desired: { pods: [generatedPod(1)] }, actual: { volumes: [] }, operations: [{ ...generatedOperation(1, 0), state: 'running', lastError: null, lastErrorAt: null, retryAt: null, startedAt: FIXTURE_T0 }] }),
    volume: 'data',
    retry: true,
    unmount: false,
    blocking: 'attached',
  },
  { name: 'a desired volume with nothing pending is waiting', state: 'waiting', snapshot: withPods({ desired: { pods: [generatedPod(1)] }, actual: { volumes: [] }, operations: [] }), volume: 'data', retry: false, unmount: false, blocking: 'attached' },
  {
    name: 'a mount of a pod that left the desired world is unmounting, with Unmount',
    state: 'unmounting',
    snapshot: withPods({ desired: { pods: [] }, actual: { volumes: [generatedVolume(1)] }, operations: [] }),
    volume: 'data',
    retry: false,
    unmount: true,
    blocking: 'in desired world',
  },
];

describe('VolumePipeline, one fixture per operator-visible state', () => {
  it.each(FIXTURES)('$name', ({ state, snapshot, volume, retry, unmount, blocking }) => {
    const row = deriveVolumeRows(snapshot).find((r) => r.volumeName === volume);
    expect(row?.state).toBe(state);
    if (row === undefined) return;
    const html = renderToStaticMarkup(createElement(VolumePipeline, { node: 'node-a', row, phase: 'live', synced: snapshot.statesSynced, onAction: () => undefined }));
    expect(html).toContain(`data-state="${state}"`);
    expect(html.includes('>Retry now</button>')).toBe(retry);
    expect(html.includes('>Unmount</button>')).toBe(unmount);
    const flagged = /<li class="stage [^"]*stage--blocking"[^>]*><span class="stage__label">([^<]*)</.exec(html);
    expect(flagged?.[1] ?? null).toBe(blocking);
  });
});

describe('VolumePipeline with the operation history', () => {
  it("shows the blocking operation's first failure, stuck for and attempts in all, with the countdown as the card's only timer", () => {
    const row = deriveVolumeRows(example).find((r) => r.volumeName === 'pgdata');
    const op = row?.operation;
    if (row === undefined || op === null || op === undefined) throw new Error('the example has a failing pgdata mount');
    const [history] = example.operationHistory;
    if (history === undefined) throw new Error('the example has a history');

    const html = renderToStaticMarkup(
      createElement(VolumePipeline, { node: 'node-a', row, phase: 'live', synced: true, onAction: () => undefined, history: historyByOperationKey([{ ...history, attemptsTotal: 7 }]) }),
    );

    expect(html).toMatch(/data-testid="operation-history-line">First failure <time dateTime="2026-11-30T08:00:59.000Z"/);
    expect(html).toContain('stuck for ');
    expect(html).toContain('7 attempts in all');
    expect(html.match(/role="timer"/g)).toHaveLength(1);
  });
});

describe('VolumePipeline: the row’s commands', () => {
  it('has a Copy commands button named after its volume and pod when the page hands it the snapshot', () => {
    const snapshot = exampleSnapshot();
    const row = deriveVolumeRows(snapshot).find((r) => r.volumeName === 'pgdata') as VolumeRow;
    const html = renderToStaticMarkup(createElement(VolumePipeline, { node: 'node-a', row, phase: 'live', synced: true, onAction: () => undefined, commandsSnapshot: () => snapshot }));
    expect(html).toContain('aria-label="Copy commands: volume pgdata of pod default/db-0"');
    expect(html).toContain('>Copy commands</button>');
    expect(renderToStaticMarkup(createElement(VolumePipeline, { node: 'node-a', row, phase: 'live', synced: true, onAction: () => undefined }))).not.toContain('Copy commands');
  });
});
