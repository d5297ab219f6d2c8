import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../../lib/api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../../lib/api/testing/snapshot-fixtures.ts';
import type { RetryFollowUp } from '../../lib/dashboard/retry-follow-up.ts';
import { RetryProgressView } from './retry-progress.tsx';

const op = exampleSnapshot().operations[0] as Operation;
const again: Operation = { ...op, lastErrorAt: FIXTURE_T0 + 63_000, retryAt: FIXTURE_T0 + 63_500 };
const render = (steps: RetryFollowUp[]): string => renderToStaticMarkup(createElement(RetryProgressView, { steps }));
const text = (html: string): string => html.replace(/<[^>]+>/g, '');

describe('RetryProgressView', () => {
  it('shows the steps after a retry in order, in one polite live region', () => {
    const html = render([{ kind: 'retrying' }, { kind: 'failed-again', sameError: true, op: again }, { kind: 'retrying' }, { kind: 'succeeded', text: 'mounted', at: FIXTURE_T0 + 64_000 }]);
    expect(html).toContain('role="status"');
    expect(html).toContain('aria-live="polite"');
    expect(text(html)).toMatch(/^After the retry: ↻ retrying → ✕ failed again with the same error, next retry (in \d+:\d\d|due) → ↻ retrying → mounted ✓$/);
  });

  it('shows a different error by its cause', () => {
    const html = render([{ kind: 'failed-again', sameError: false, op: { ...again, lastError: 'MountVolume.MountDevice failed for volume "pgdata" : permission denied' } }]);
    expect(text(html)).toContain('failed again: permission denied');
  });

  it('says it waits for the reconciler before any attempt was seen', () => {
    expect(text(render([{ kind: 'waiting' }]))).toBe('After the retry: … waiting for the reconciler’s next pass');
  });
});
