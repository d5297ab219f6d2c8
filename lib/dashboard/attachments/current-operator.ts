/**
 * Who is asking: the one place the dashboard's actions learn the operator's identity. Today the
 * dashboard has no login of its own, so the identity is what the request carries: the user an
 * authenticating reverse proxy in front of the dashboard puts in `X-Forwarded-User` (or
 * `X-Remote-User`), else the name the operator typed into the attestation (recorded as
 * self-declared). Swap this function when the dashboard authenticates users itself.
 */
export interface Operator {
  readonly name: string;
  /** `proxy`: from the authenticating proxy's header; `declared`: typed by the operator. */
  readonly source: 'proxy' | 'declared';
}

const PROXY_HEADERS = ['x-forwarded-user', 'x-remote-user'] as const;
/** 1 to 128 characters, none of them a control character (the name goes into an annotation and logs). */
function isName(value: string): boolean {
  if (value.length === 0 || value.length > 128) return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

export function currentOperator(request: Request, declaredName?: string): Operator | null {
  for (const header of PROXY_HEADERS) {
    const value = request.headers.get(header)?.trim() ?? '';
    if (isName(value)) return { name: value, source: 'proxy' };
  }
  const typed = declaredName?.trim() ?? '';
  return isName(typed) ? { name: typed, source: 'declared' } : null;
}
