/**
 * Property tests of the Markdown escaping against two real Markdown renderers: markdown-it with
 * raw HTML and linkify on (the most permissive settings), and micromark with GFM (GitHub's
 * dialect: tables, extended autolinks, strikethrough). Escaped text renders as exactly itself:
 * no element at all comes out of it — no link, image, HTML, autolink or emphasis.
 */
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import { micromark } from 'micromark';
import { gfm, gfmHtml } from 'micromark-extension-gfm';
import { describe, expect, it } from 'vitest';
import { escapeMarkdownText, markdownCode } from './markdown-escape.ts';

const markdownIt = new MarkdownIt({ html: true, linkify: true });

/** micromark's HTML for a paragraph, with raw HTML allowed (the dangerous setting). */
function gfmHtmlOf(markdown: string): string {
  return micromark(markdown, { extensions: [gfm()], htmlExtensions: [gfmHtml()], allowDangerousHtml: true });
}

/** The text of rendered HTML that is one paragraph of plain text: its entities decoded; null when anything but text is in it. */
function paragraphText(html: string): string | null {
  const m = /^<p>([^<]*)<\/p>\n?$/.exec(html);
  if (m === null) return null;
  return (m[1] ?? '').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Strings rich in what attackers put in names and error texts: Markdown syntax, URLs, HTML. */
const hostile = fc
  .array(
    fc.oneof(
      fc.constantFrom('[', ']', '(', ')', '!', '<', '>', '`', '*', '_', '~', '|', '#', '-', '+', '=', '.', ':', '@', '&', '\\', '$', '"', "'", '/', ' ', '\n', '\t', '1.', '>'),
      fc.constantFrom('http://evil.example/x', 'https://evil.example', 'www.evil.example', 'a@b.example', 'mailto:a@b.example', '<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '&lt;b&gt;', '&#60;i&#62;', '![i](http://e/i.png)', '[x](javascript:alert(1))', '<http://e.example>', '```', '---', '***', '| a | b |', '[^1]', '$x$'),
      fc.string({ maxLength: 4 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''))
  // The text is one paragraph: content that trims to nothing renders no paragraph at all.
  // eslint-disable-next-line no-control-regex -- the controls escapeMarkdownText turns into spaces
  .filter((s) => s.replace(/[\s\u0000-\u001f\u007f\u2028\u2029]/g, '') !== '');

/** What the escaped text should read as: line breaks and controls as spaces, outer blanks trimmed by the renderers. */
function expectedText(s: string): string {
  // eslint-disable-next-line no-control-regex -- as escapeMarkdownText replaces them
  return s.replace(/\r\n|[\u0000-\u001f\u007f\u2028\u2029]/g, ' ').replace(/^[ ]+|[ ]+$/g, '');
}

describe('escapeMarkdownText', () => {
  it('renders as exactly the text, with no element, in markdown-it (HTML and linkify on)', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const html = markdownIt.render(escapeMarkdownText(s));
        // eslint-disable-next-line no-control-regex -- markdown-it shows NUL as U+FFFD, as CommonMark says
        expect(paragraphText(html)).toBe(expectedText(s).replace(/\u0000/g, '\uFFFD'));
      }),
      { numRuns: 2000 },
    );
  });

  it('renders as exactly the text, with no element, in GFM (micromark: tables, autolinks, raw HTML on)', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const html = gfmHtmlOf(escapeMarkdownText(s));
        expect(paragraphText(html)).toBe(expectedText(s));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a GFM table cell one cell: no pipe, newline or backslash in the text splits it', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const html = gfmHtmlOf(`| a | b |\n|---|---|\n| ${escapeMarkdownText(s)} | end |`);
        expect(html.match(/<td>/g)).toHaveLength(2);
        expect(html).not.toMatch(/<(a|img|script|em|strong|del|code)\b/);
        expect(html).toContain('<td>end</td>');
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves punctuation that starts no syntax readable', () => {
    expect(escapeMarkdownText('MountVolume.SetUp failed for volume "data" : no such file')).toBe('MountVolume\\.SetUp failed for volume "data" \\: no such file');
  });
});

describe('markdownCode', () => {
  it('is one code span holding exactly the text, whatever backticks it contains', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const html = gfmHtmlOf(markdownCode(s));
        const m = /^<p><code>([^<]*)<\/code><\/p>\n?$/.exec(html);
        expect(m).not.toBeNull();
      }),
      { numRuns: 1000 },
    );
  });
});
