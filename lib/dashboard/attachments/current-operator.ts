/**
 * Who is asking: the one place the dashboard's out-of-service actions learn the operator's
 * identity. It is the user of the request's login session (the name the API server gave the
 * token or OIDC login, or the local session's name), never a request header or a name in the
 * body: a header such as `X-Forwarded-User` is set by whoever sends the request, so trusting it
 * would let anyone who can reach the dashboard attest under someone else's name.
 */
import type { Session } from '../auth/session.ts';

export interface Operator {
  readonly name: string;
  /** Always `session`: the logged-in user (kept as a field so audit lines and answers say so). */
  readonly source: 'session';
}

/** 1 to 128 characters, none of them a control character (the name goes into an annotation and logs). */
function isName(value: string): boolean {
  if (value.length === 0 || value.length > 128) return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

/** The operator of a login session; `null` without a session or with a name unfit for an annotation. */
export function currentOperator(session: Pick<Session, 'username'> | null): Operator | null {
  const name = session?.username.trim() ?? '';
  return isName(name) ? { name, source: 'session' } : null;
}
