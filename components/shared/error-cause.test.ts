import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ErrorCauseText } from './error-cause.tsx';

const MESSAGE = 'MountVolume.SetUp failed for volume "data" (UniqueName: "kubernetes.io/csi/loop.csi^vol-1") pod "web-0" (UID: "a") : rpc error: code = Internal desc = mount failed';
const render = (props: Parameters<typeof ErrorCauseText>[0]): string => renderToStaticMarkup(createElement(ErrorCauseText, props));

describe('ErrorCauseText', () => {
  it.each(['block', 'inline'] as const)('%s: shows the cause first and the verbatim message behind a collapsed disclosure', (variant) => {
    const html = render({ message: MESSAGE, variant });
    const cause = html.indexOf('rpc error: code = Internal desc = mount failed<');

    expect(cause).toBeGreaterThan(-1);
    expect(html).toMatch(/<button type="button"[^>]*aria-expanded="false"[^>]*aria-controls="([^"]+)"[^>]*>Full message<\/button>/);
    const controls = /aria-controls="([^"]+)"/.exec(html)?.[1] as string;
    // The verbatim message is in the controlled element, hidden until expanded.
    expect(html).toContain(`id="${controls}" class="${variant === 'block' ? 'error-verbatim' : 'error-text'} error-cause__verbatim" hidden="">${MESSAGE.replaceAll('"', '&quot;')}<`);
    expect(cause).toBeLessThan(html.indexOf('<button'));
    // One error block: the cause (the verbatim message has its own class).
    expect(html.match(/class="error-block"/g)?.length ?? 0).toBe(variant === 'block' ? 1 : 0);
  });

  it('cell: the verbatim message is a popover (opened over the clipped row), controlled by the button', () => {
    const html = render({ message: MESSAGE, variant: 'cell' });
    const controls = /aria-controls="([^"]+)"/.exec(html)?.[1] as string;

    expect(html).toContain('aria-expanded="false"');
    expect(html.toLowerCase()).toContain(`popovertarget="${controls.toLowerCase()}"`);
    expect(html.indexOf('rpc error: code = Internal desc = mount failed<')).toBeLessThan(html.indexOf('<button'));
    expect(html).toContain(`id="${controls}" popover="auto" class="error-verbatim error-cause__popover">${MESSAGE.replaceAll('"', '&quot;')}<`);
  });

  it('expanded: the button says so and the verbatim message is not hidden', () => {
    const html = render({ message: MESSAGE, defaultExpanded: true });

    expect(html).toContain('aria-expanded="true"');
    expect(html).toContain('Hide full message');
    expect(html).not.toContain('hidden=""');
  });

  it('a message without " : " is shown as it is, with no disclosure', () => {
    const html = render({ message: 'plugin not found: kubernetes.io/csi', variant: 'block' });

    expect(html).toBe('<pre class="error-block">plugin not found: kubernetes.io/csi</pre>');
  });
});
