/**
 * The dashboard's gate (Next's Proxy, formerly Middleware; Node.js runtime): every request
 * except build assets passes here before any page or route handler runs.
 *
 * 1. `Host` must be on the allow-list (DNS rebinding; lib/dashboard/auth/request-guard.ts).
 * 2. State-changing requests must pass the CSRF check (same-origin `Origin`, `Sec-Fetch-Site`,
 *    the `X-VolumeScope-Request` header) and, except the login routes, carry a valid session
 *    cookie.
 * 3. Pages and API routes need a session: the sealed cookie, or the local session where allowed
 *    (its cookie is set here, so later state-changing requests carry one); otherwise pages are
 *    sent to /login and API routes answered 401.
 *
 * Why here and not in each route: one place that cannot be forgotten by a new route, and it runs
 * before Next renders or reads a body. The route handlers still resolve the session themselves
 * (lib/dashboard/auth/server-session.ts) because they need its token, so a route reached some
 * other way still has no token to send without a session.
 */
import type { NextRequest, NextResponse } from 'next/server';
import { gateRequest } from './lib/dashboard/auth/request-gate.ts';

export function proxy(request: NextRequest): Promise<NextResponse> {
  return gateRequest(request);
}

export const config = {
  // Build assets and the icon need nothing (they are the same for everyone).
  matcher: ['/((?!_next/static|_next/image|icon.svg|favicon.ico).*)'],
};
