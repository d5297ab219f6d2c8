import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { PodRefLink } from './pod-ref.tsx';

const UID = '0d4f8e7a-1b2c-4d3e-8f9a-0b1c2d3e4f50';

describe('PodRefLink', () => {
  it('shows namespace/name as the link and the UID secondary after it', () => {
    const html = renderToStaticMarkup(createElement(PodRefLink, { node: 'node-a', uid: UID, name: 'shop/cart-2' }));
    expect(html).toContain(`href="/nodes/node-a/pods/${UID}"`);
    expect(html).toMatch(/>shop\/cart-2<\/a><span class="pod-ref__uid"> uid 0d4f8e7a-/);
  });

  it('shows the UID alone when no name is known', () => {
    const html = renderToStaticMarkup(createElement(PodRefLink, { node: 'node-a', uid: UID, name: undefined }));
    expect(html).toContain(`>${UID}</a>`);
    expect(html).not.toContain('pod-ref__uid');
  });
});
