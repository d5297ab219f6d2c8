import { connection } from 'next/server';
import { TokenLoginForm } from '../../components/auth/token-login-form.tsx';
import { safeNextPath } from '../../lib/dashboard/auth/login-routes.ts';
import { serverAuthSettings } from '../../lib/dashboard/auth/server-session.ts';

export const metadata = { title: 'Log in' };

/** The login page: OIDC (when configured) and a Kubernetes bearer token. */
export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  await connection();
  const params = await searchParams;
  const next = safeNextPath(typeof params['next'] === 'string' ? params['next'] : null);
  const settings = serverAuthSettings();
  return (
    <main id="main" className="login">
      <h1>Log in to VolumeScope</h1>
      <p>What you see and may do on each node is what Kubernetes RBAC grants you on <code>nodes/volumemanager</code>.</p>
      {settings.oidc !== null ? (
        <section className="panel">
          <h2>Single sign-on</h2>
          <a className="button button--primary" href={`/api/auth/oidc/start?next=${encodeURIComponent(next)}`}>
            Log in with OpenID Connect
          </a>
        </section>
      ) : null}
      <section className="panel">
        <h2>Bearer token</h2>
        <TokenLoginForm next={next} />
      </section>
    </main>
  );
}
