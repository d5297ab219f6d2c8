import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { VirtualList } from './virtual-list.tsx';

/** The list as the server renders it (before any layout): the window is at the top. */
function render(count: number, maxHeight: number): string {
  return renderToStaticMarkup(
    createElement(VirtualList<string>, {
      items: Array.from({ length: count }, (_, i) => `item-${i}`),
      rowHeight: 44,
      maxHeight,
      getKey: (item) => item,
      renderRow: (item) => createElement('span', { role: 'cell' }, item),
      label: 'Things',
    }),
  );
}

describe('the windowed list', () => {
  it.each([
    { name: 'the top of 10,000 rows renders the first screen plus overscan', count: 10_000, maxHeight: 560, rows: 21, height: 560, spacer: '440000px' },
    { name: 'a list shorter than its window renders every row and is only as tall as they are', count: 5, maxHeight: 560, rows: 5, height: 220, spacer: '220px' },
    { name: 'an empty list keeps the height of one row', count: 0, maxHeight: 560, rows: 0, height: 44, spacer: '0' },
  ])('$name', ({ count, maxHeight, rows, height, spacer }) => {
    // 44 px rows, 8 rows of overscan (the pods table's settings)
    const html = render(count, maxHeight);
    expect([...html.matchAll(/role="row"/g)]).toHaveLength(rows);
    expect(html).toContain(`max-height:${maxHeight}px;height:${height}px`);
    expect(html).toContain(`class="vlist__spacer" style="height:${spacer}"`);
  });
});

describe('the windowed list with only its first items (a server-rendered first screen)', () => {
  it('is as tall as every row and renders the items it has', () => {
    const html = renderToStaticMarkup(
      createElement(VirtualList<string>, {
        items: ['a', 'b', 'c'],
        count: 10_000,
        rowHeight: 44,
        maxHeight: 560,
        getKey: (item) => item,
        renderRow: (item) => createElement('span', { role: 'cell' }, item),
        label: 'Things',
      }),
    );
    expect([...html.matchAll(/role="row"/g)]).toHaveLength(3);
    expect(html).toContain('max-height:560px;height:560px');
    expect(html).toContain('class="vlist__spacer" style="height:440000px"');
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
