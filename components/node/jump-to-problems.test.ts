import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { emptySnapshot, exampleSnapshot } from '../../lib/api/testing/snapshot-fixtures.ts';
import { deriveVolumeRows } from '../../lib/dashboard/pipeline.ts';
import { nodeProblems } from '../../lib/dashboard/problems.ts';
import { JumpToProblems } from './jump-to-problems.tsx';

describe('JumpToProblems', () => {
  it('is a link to the first problem, named by what is wrong', () => {
    const snapshot = exampleSnapshot();
    const html = renderToStaticMarkup(createElement(JumpToProblems, { problems: nodeProblems(snapshot, deriveVolumeRows(snapshot)) }));
    expect(html).toContain('<a href="#pods" class="jump-problems__link">Jump to problems: 1 volume failing or uncertain, 1 operation in backoff</a>');
  });

  it('is plain text (no link to Tab to) on a healthy node', () => {
    const html = renderToStaticMarkup(createElement(JumpToProblems, { problems: nodeProblems(emptySnapshot(), []) }));
    expect(html).not.toContain('<a');
    expect(html).toContain('No problems');
  });
});
