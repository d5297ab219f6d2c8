import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { VolumeStateBadge } from './status-badges.tsx';

describe('VolumeStateBadge', () => {
  it('says "found on disk, not confirmed" for a volume uncertain only because it was rebuilt from disk', () => {
    const html = renderToStaticMarkup(createElement(VolumeStateBadge, { state: 'uncertain', cause: 'found-on-disk' }));
    expect(html).toContain('found on disk, not confirmed</span>');
    expect(html).toContain('data-cause="found-on-disk"');
  });

  it('keeps "uncertain" for an operation whose outcome is unknown, and the state name otherwise', () => {
    expect(renderToStaticMarkup(createElement(VolumeStateBadge, { state: 'uncertain', cause: 'outcome-unknown' }))).toContain('uncertain</span>');
    expect(renderToStaticMarkup(createElement(VolumeStateBadge, { state: 'backoff' }))).toContain('backoff</span>');
  });
});
