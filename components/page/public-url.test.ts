import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { publicUrlFromEnv } from '../../lib/dashboard/public-url.ts';
import { PublicUrlProvider, usePublicBaseUrl } from './public-url.tsx';

/** Renders the base URL a view would build its copied links on. */
function BaseProbe() {
  return createElement('output', null, usePublicBaseUrl()());
}

describe('the public base URL on the pages', () => {
  it('gives the views the configured base, and shows nothing else', () => {
    const setting = publicUrlFromEnv({ VOLUMESCOPE_PUBLIC_URL: 'https://ops.example.com/vs/' });
    const html = renderToStaticMarkup(createElement(PublicUrlProvider, { setting, children: createElement(BaseProbe) }));
    expect(html).toBe('<output>https://ops.example.com/vs</output>');
  });

  it('a malformed value is shown at the top, naming the variable, and the page still renders', () => {
    const setting = publicUrlFromEnv({ VOLUMESCOPE_PUBLIC_URL: 'ops.example.com' });
    const html = renderToStaticMarkup(createElement(PublicUrlProvider, { setting, children: createElement('main', null, 'the page') }));
    expect(html).toMatch(/^<p class="result result--bad" role="alert" data-testid="public-url-error">VOLUMESCOPE_PUBLIC_URL=&quot;ops.example.com&quot; is not an absolute URL/);
    expect(html).toContain('Links in copied Markdown use this page’s origin until it is fixed.');
    expect(html.endsWith('<main>the page</main>')).toBe(true);
  });
});
