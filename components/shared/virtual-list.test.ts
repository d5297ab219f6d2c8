import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { VirtualList, visibleRange } from './virtual-list.tsx';

describe('the windowed list', () => {
  it.each([
    { name: 'the top of 10,000 rows renders the first screen plus overscan', count: 10_000, scrollTop: 0, expected: { start: 0, end: 21 } },
    { name: 'scrolled halfway it renders only the rows around the view', count: 10_000, scrollTop: 220_000, expected: { start: 4_992, end: 5_021 } },
    { name: 'at the bottom it stops at the last row', count: 10_000, scrollTop: 439_560, expected: { start: 9_982, end: 10_000 } },
    { name: 'a short list renders every row', count: 5, scrollTop: 0, expected: { start: 0, end: 5 } },
  ])('$name', ({ count, scrollTop, expected }) => {
    // 44 px rows, a 560 px window, 8 rows of overscan (the pods table's settings)
    expect(visibleRange(count, 44, scrollTop, 560, 8)).toEqual(expected);
  });
});

describe('the windowed list, rendered', () => {
  const items = Array.from({ length: 1_000 }, (_, i) => `item-${i}`);
  const html = renderToStaticMarkup(
    createElement(VirtualList<string>, {
      items,
      rowHeight: 44,
      maxHeight: 440,
      getKey: (item) => item,
      renderRow: (item) => createElement('span', { role: 'cell' }, item),
      label: 'Things',
      // A row style may add grid columns, but must not move or resize rows.
      rowStyle: { gridTemplateColumns: '1fr 2fr', height: 99, transform: 'none' },
    }),
  );
  const rows = [...html.matchAll(/<div[^>]*role="row"[^>]*>/g)].map((m) => m[0]);

  it('puts only the first screen plus overscan in the DOM', () => {
    // 440 px / 44 px = 10 rows in view, plus 8 below
    expect(rows).toHaveLength(18);
    expect(html).toContain('item-17');
    expect(html).not.toContain('item-18<');
  });

  it('adds the row style under the list’s own position and height', () => {
    expect(rows[1]).toContain('grid-template-columns:1fr 2fr');
    expect(rows[1]).toContain('transform:translateY(44px)');
    expect(rows[1]).toContain('height:44px');
    expect(rows[1]).not.toContain('height:99px');
    expect(rows[1]).toContain('aria-rowindex="3"');
  });
});
