import { logout } from '../../../../lib/dashboard/auth/login-routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export function POST(): Promise<Response> {
  return logout();
}
