// Who may frame the dashboard. Runbook embeds (/embed/...) may be framed by the origins in
// VOLUMESCOPE_FRAME_ANCESTORS (space- or comma-separated, e.g.
// `https://wiki.example.com https://runbooks.example.com`; default 'self'); every other page
// denies framing (`frame-ancestors 'none'` and `X-Frame-Options: DENY`).
//
// Plain JavaScript with JSDoc types: next.config.js imports it, and `next start` loads the
// config with Node's loader, which does not take TypeScript files.

/** The environment variable with the origins allowed to frame embeds. */
const FRAME_ANCESTORS_ENV = 'VOLUMESCOPE_FRAME_ANCESTORS';

/** A malformed VOLUMESCOPE_FRAME_ANCESTORS; the message names the bad entry. */
export class FrameAncestorsError extends Error {
  name = 'FrameAncestorsError';
}

/**
 * True for a {@link FrameAncestorsError}.
 * @param {unknown} err
 * @returns {err is FrameAncestorsError}
 */
export function isFrameAncestorsError(err) {
  return err instanceof FrameAncestorsError;
}

const KEYWORDS = new Set(["'self'", "'none'"]);
// scheme://host[:port] (host may start with `*.`), or a bare scheme such as `https:`.
const SOURCE = /^(?:[a-z][a-z0-9+.-]*:\/\/(?:\*\.)?[a-z0-9.-]+(?::(?:[0-9]{1,5}|\*))?|https?:)$/i;

/**
 * The `frame-ancestors` source list for embeds from the variable's value: `'self'` when unset
 * or empty. Throws a {@link FrameAncestorsError} for an entry that is not an origin, a scheme
 * (`https:`), `'self'` or `'none'` (so nothing can inject other directives or headers), and for
 * `'none'` combined with anything else.
 * @param {string | undefined} value
 * @returns {string}
 */
export function parseFrameAncestors(value) {
  const entries = (value ?? '').split(/[\s,]+/).filter((e) => e !== '');
  if (entries.length === 0) return "'self'";
  /** @type {string[]} */
  const out = [];
  for (const raw of entries) {
    const entry = raw === 'self' || raw === 'none' ? `'${raw}'` : raw;
    if (!KEYWORDS.has(entry) && !SOURCE.test(entry)) {
      throw new FrameAncestorsError(`${FRAME_ANCESTORS_ENV}: ${JSON.stringify(raw)} is not an origin (https://host[:port]), a scheme, 'self' or 'none'`);
    }
    if (!out.includes(entry)) out.push(entry);
  }
  if (out.includes("'none'") && out.length > 1) {
    throw new FrameAncestorsError(`${FRAME_ANCESTORS_ENV}: 'none' cannot be combined with other sources`);
  }
  return out.join(' ');
}

/**
 * @typedef {{ key: string, value: string }} HeaderEntry A response header, as `headers()` takes it.
 * @typedef {{ source: string, headers: HeaderEntry[] }} HeaderRule A `headers()` rule.
 */

/**
 * The security header rules: embeds get `frame-ancestors <allowed>`, every other path
 * `frame-ancestors 'none'` plus `X-Frame-Options: DENY`; all get `nosniff` and a referrer policy.
 * @param {string | undefined} frameAncestorsEnv
 * @returns {HeaderRule[]}
 */
export function securityHeaderRules(frameAncestorsEnv) {
  const embedAncestors = parseFrameAncestors(frameAncestorsEnv);
  /** @type {HeaderEntry[]} */
  const common = [
    { key: 'X-Content-Type-Options', value: 'nosniff' },
    { key: 'Referrer-Policy', value: 'same-origin' },
  ];
  return [
    {
      // Every path except /embed and /embed/...
      source: '/:path((?!embed(?:/|$)).*)',
      headers: [...common, { key: 'Content-Security-Policy', value: "frame-ancestors 'none'" }, { key: 'X-Frame-Options', value: 'DENY' }],
    },
    {
      source: '/embed/:path*',
      headers: [...common, { key: 'Content-Security-Policy', value: `frame-ancestors ${embedAncestors}` }],
    },
  ];
}
