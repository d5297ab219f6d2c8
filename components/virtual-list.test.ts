import { describe, expect, it } from 'vitest';
import { visibleRange } from './virtual-list.tsx';

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
