/**
 * Escaping text that pod authors control (pod, volume and claim names, paths, driver error
 * texts, event messages) before it goes into Markdown the dashboard builds ("Copy as
 * Markdown"). Pasted into a ticket or an incident document, such text must read as itself:
 * no link, image, raw HTML, autolink, emphasis, heading or table cell may come out of it.
 *
 * The rule is CommonMark's: an ASCII punctuation character may be backslash-escaped and then
 * stands for itself (spec §2.4). Every character that starts or shapes Markdown or GFM syntax is
 * escaped (emphasis, code, links, images, HTML and entities, block quotes, tables,
 * strikethrough, math `$`; list, heading and break markers where they would start the line), so
 * no construct can start — GFM's extended autolinks
 * (`www.`, `https://`, `a@b.c`) included, which need an unescaped `.`, `:` or `@`. Punctuation
 * that never starts syntax (`"` `'` `,` `;` `/` `?` `%` `^`, and `-` `+` `#` `=` after the line's start) stays as it is, so error texts stay
 * readable where a ticket system shows the raw text. Line breaks become spaces (a summary line or table cell stays one line). Code spans get
 * a backtick fence longer than any run of backticks inside, so the text cannot close them.
 * Pure; depends on nothing.
 */

/** The ASCII punctuation that starts or shapes Markdown (CommonMark and GFM) syntax anywhere in a line. */
const MARKDOWN_METACHARACTERS = /[\\`*_{}[\]()!|<>~&.:@$]/g;

/**
 * `-`, `+`, `#` and `=` are syntax only at the start of a line (list items, ATX headings,
 * setext underlines, thematic breaks): escaped there, left as they are elsewhere, so names such
 * as `kube-system/db-0` stay readable.
 */
const LINE_START_METACHARACTER = /^([ ]*)([-+#=])/;

/** Line breaks of any kind, and the other ASCII control characters (shown as one space each). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
const LINE_BREAKS_AND_CONTROLS = /\r\n|[\u0000-\u001f\u007f\u2028\u2029]/g;

/** `text` as literal Markdown inline text on one line: every metacharacter escaped. */
export function escapeMarkdownText(text: string): string {
  return text.replace(LINE_BREAKS_AND_CONTROLS, ' ').replace(MARKDOWN_METACHARACTERS, '\\$&').replace(LINE_START_METACHARACTER, '$1\\$2');
}

/** `text` as an inline code span on one line, fenced so that no backtick inside can close it. */
export function markdownCode(text: string): string {
  const flat = text.replace(LINE_BREAKS_AND_CONTROLS, ' ');
  const longestRun = Math.max(0, ...(flat.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longestRun + 1);
  // A space on each side when the text starts or ends with a backtick (or a space), as CommonMark strips one.
  const pad = /^[` ]|[` ]$/.test(flat) ? ' ' : '';
  return `${fence}${pad}${flat}${pad}${fence}`;
}
