/**
 * Next's start hook: `register()` runs once when `next start` prepares the server, before it
 * answers anything (lib/dashboard/start-checks.ts). The import is dynamic and behind the runtime
 * check so the Edge bundle of this file has no Node-only code.
 */
export async function register(): Promise<void> {
  if (process.env['NEXT_RUNTIME'] !== 'nodejs') return;
  const { checkSettingsAtStart } = await import('./lib/dashboard/start-checks.ts');
  checkSettingsAtStart();
}
