import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { PodSearchResults } from './pod-search.tsx';

const UID = '0d4f8e7a-1b2c-4d3e-8f9a-0b1c2d3e4f50';

describe('PodSearchResults', () => {
  it('links each match to its pod page on its node, UID secondary, gone pods marked', () => {
    const html = renderToStaticMarkup(
      createElement(PodSearchResults, {
        answer: { query: 'db', matches: [{ node: 'node-b', uid: UID, name: 'default/db-old', desired: false }], truncated: false, failed: [{ node: 'node-c', message: 'cannot reach http://c:7070' }] },
      }),
    );
    expect(html).toContain(`<a href="/nodes/node-b/pods/${UID}">default/db-old</a> on node-b`);
    expect(html).toContain(`<span class="pod-ref__uid"> uid ${UID}</span>`);
    expect(html).toContain('gone (named by its events)');
    expect(html).toContain('node-c could not be searched: cannot reach http://c:7070');
  });

  it('says when nothing matches', () => {
    const html = renderToStaticMarkup(createElement(PodSearchResults, { answer: { query: 'zzz', matches: [], truncated: false, failed: [] } }));
    expect(html).toContain('No pod matches “zzz”.');
  });
});
