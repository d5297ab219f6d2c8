import { tokenLogin } from '../../../../lib/dashboard/auth/login-routes.ts';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export function POST(req: Request): Promise<Response> {
  return tokenLogin(req);
}
