import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { PodGone } from './pod-gone.tsx';

const UID = '0d4f8e7a-1b2c-4d3e-8f9a-0b1c2d3e4f50';

describe('PodGone', () => {
  it('names a gone pod by the name its events recorded, with its UID, and offers its kubectl commands', () => {
    const html = renderToStaticMarkup(createElement(PodGone, { agent: 'node-a', uid: UID, podName: 'shop/cart-2' }));
    expect(html).toContain('<h1>Pod shop/cart-2 is gone</h1>');
    expect(html).toContain(`<code>${UID}</code>`);
    expect(html).toContain('aria-label="Copy kubectl commands for pod shop/cart-2"');
  });

  it('says the pod is not known, by UID only, when nothing names it', () => {
    const html = renderToStaticMarkup(createElement(PodGone, { agent: 'node-a', uid: UID }));
    expect(html).toContain('<h1>Pod not known</h1>');
    expect(html).toContain(`aria-label="Copy kubectl commands for pod uid ${UID}"`);
  });
});
