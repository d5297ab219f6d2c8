import { oidcStart } from '../../../../../lib/dashboard/auth/login-routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export function GET(req: Request): Promise<Response> {
  return oidcStart(req);
}
