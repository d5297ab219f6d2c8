import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../../lib/api/index.ts';
import { exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import { describeUnmount } from '../../lib/dashboard/action-guards.ts';
import { deriveVolumeRows, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { RetryButton, retryAction } from './retry-button.tsx';
import { UnmountButton } from './unmount-button.tsx';

const example = exampleSnapshot();
const op = example.operations[0] as Operation;
const row = deriveVolumeRows(example).find((r) => r.volumeName === 'config') as VolumeRow;
const noop = (_: PendingAction): void => undefined;

describe('action buttons name their target', () => {
  it('Retry now: its accessible name starts with the visible label and says what it retries', () => {
    const html = renderToStaticMarkup(createElement(RetryButton, { node: 'node-a', op, podName: 'default/db-0', volumeName: 'pgdata', phase: 'live', onAction: noop }));
    expect(html).toContain('aria-label="Retry now: mount volume pgdata for pod default/db-0"');
    expect(html).toContain('>Retry now</button>');
    // The focus key a dialog returns focus by when a re-render replaced the button (focus-return.ts).
    expect(html).toContain('data-focus-key="Retry now: mount volume pgdata for pod default/db-0"');
  });

  it('Retry now without names falls back to the short volume name and the pod UID', () => {
    const html = renderToStaticMarkup(createElement(RetryButton, { node: 'node-a', op, phase: 'live', onAction: noop }));
    expect(html).toContain(`aria-label="Retry now: mount volume vol-pg for pod uid ${op.podUid ?? ''}"`);
  });

  it('Unmount: names the volume and the pod', () => {
    const html = renderToStaticMarkup(createElement(UnmountButton, { node: 'node-a', row: { ...row, desired: false }, phase: 'live', synced: true, observing: false, onAction: noop }));
    expect(html).toContain('aria-label="Unmount volume config of pod default/web-0"');
  });

  it('Unmount of a mount whose pod is gone: the name its events recorded, with the UID in the dialog', () => {
    const gone: VolumeRow = { ...row, desired: false, podName: row.podUid };
    const html = renderToStaticMarkup(createElement(UnmountButton, { node: 'node-a', row: gone, podName: 'shop/cart-2', phase: 'live', synced: true, observing: false, onAction: noop }));
    expect(html).toContain('aria-label="Unmount volume config of pod shop/cart-2"');
    expect(describeUnmount('node-a', gone, 'shop/cart-2')).toContain(`of pod shop/cart-2 (uid ${row.podUid}) on node-a`);
  });

  it('the Retry now dialog names the target in words, the pod namespace/name with its UID, and carries the operation to follow', () => {
    const action = retryAction('node-a', op, { podName: 'default/db-0', volumeName: 'pgdata' });
    expect(action.title).toBe('Retry now: mount volume pgdata for pod default/db-0');
    expect(action.description).toContain(`(pod default/db-0, uid ${op.podUid ?? ''}, 3 failures so far)`);
    expect(action.operation).toBe(op);
  });
});
