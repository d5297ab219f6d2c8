/**
 * `kubectl volumescope` against a REAL agent serving TLS (`--tls-cert-file`,
 * `--tls-private-key-file`) with a certificate made by openssl(1) in the test for the DNS name
 * deploy/'s agents share (`volumescope-agent.volumescope.svc`, not the 127.0.0.1 dialled), over
 * the direct transport (`--agent-url`): the right CA and server name give the pipeline, a wrong CA
 * or name exits 3 naming both, and `--token` / VOLUMESCOPE_AGENT_TOKEN is the token the agent
 * checks (its static token).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { AgentProcess, standInMounter } from '../../agent/node/testing/agent-process.ts';
import { podManifest } from '../../agent/node/testing/pod-manifest.ts';
import { runCli } from './cli.ts';
import { EXIT } from './cli-args.ts';

const NODE = 'node-tls';
const SERVER_NAME = 'volumescope-agent.volumescope.svc';
const DEADLINE_MS = 20_000;

let base = '';
let rootDir = '';
let agent: AgentProcess | null = null;
/** The agent's API over TLS: `https://127.0.0.1:<port>`. */
let agentUrl = '';

/** Runs openssl quietly in the test dir. */
function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: base, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA (`<name>.crt`, `<name>.key`). */
function makeCa(name: string): void {
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`);
}

/** Runs the CLI in-process against the TLS agent; stdout is no TTY. */
async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, `--agent-url=${agentUrl}`], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env,
    now: () => Date.now(),
  });
  return { code, stdout, stderr };
}

beforeAll(async () => {
  base = await makeTempDir('volumescope-kubectl-tls-');
  rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  makeCa('ca');
  makeCa('other-ca');
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'agent.key', '-out', 'agent.csr', '-subj', '/CN=volumescope-agent');
  await writeFile(join(base, 'san.ext'), `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', 'agent.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'agent.crt', '-days', '1', '-extfile', 'san.ext');
  agent = await AgentProcess.start({
    rootDir,
    manifestDir,
    nodeName: NODE,
    extraArgs: ['--tls-cert-file', join(base, 'agent.crt'), '--tls-private-key-file', join(base, 'agent.key')],
  });
  agentUrl = agent.baseUrl.replace(/^http:/, 'https:');
  const tmp = join(manifestDir, '.pod-web.json.tmp');
  await writeFile(tmp, podManifest('web', 'web-uid', { cache: { emptyDir: {} } }));
  await rename(tmp, join(manifestDir, 'pod-web.json'));
}, 60_000);

afterAll(async () => {
  await agent?.stop('SIGKILL');
  if (base !== '') await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
});

describe('kubectl volumescope against an agent serving TLS', { timeout: 60_000 }, () => {
  it('verifies the agent with --agent-ca-file for --agent-tls-server-name (or their variables): the pipeline, exit code 0', async () => {
    const token = agent?.token ?? '';
    const flags = [`--agent-ca-file=${join(base, 'ca.crt')}`, `--agent-tls-server-name=${SERVER_NAME}`, `--token=${token}`];
    let out = await cli(['pod', 'web', ...flags]);
    await waitFor(
      async () => {
        out = await cli(['pod', 'web', ...flags]);
        return out.code === EXIT.healthy;
      },
      { what: 'the plugin shows web mounted over TLS', timeoutMs: DEADLINE_MS, describe: () => `${out.code}: ${out.stdout}${out.stderr}` },
    );
    expect(out.stderr).toBe('');
    expect(out.stdout).toContain('Pod default/web (uid web-uid)');
    expect(out.stdout).toContain('unmounted volumes=[], unattached volumes=[]');

    const fromEnv = await cli(['node', NODE], { VOLUMESCOPE_AGENT_CA_FILE: join(base, 'ca.crt'), VOLUMESCOPE_AGENT_TLS_SERVER_NAME: SERVER_NAME, VOLUMESCOPE_AGENT_TOKEN: token });
    expect(fromEnv.stderr).toBe('');
    expect(fromEnv.code).toBe(EXIT.healthy);
    expect(fromEnv.stdout).toContain(`Node ${NODE}: healthy`);
  });

  it('a wrong CA, a wrong server name or no CA exits 3 with a message naming the CA file and the server name', async () => {
    const token = `--token=${agent?.token ?? ''}`;
    const otherCa = join(base, 'other-ca.crt');
    const wrongCa = await cli(['node', NODE, `--agent-ca-file=${otherCa}`, `--agent-tls-server-name=${SERVER_NAME}`, token]);
    expect(wrongCa.code).toBe(EXIT.unavailable);
    expect(wrongCa.stdout).toBe('');
    expect(wrongCa.stderr).toContain(`TLS to the agent of node ${NODE} at ${agentUrl} failed`);
    expect(wrongCa.stderr).toContain(`checked against the CA file ${otherCa} for the server name ${SERVER_NAME}`);

    const wrongName = await cli(['node', NODE, `--agent-ca-file=${join(base, 'ca.crt')}`, token]);
    expect(wrongName.code).toBe(EXIT.unavailable);
    expect(wrongName.stderr).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(wrongName.stderr).toContain('for the address dialled, 127.0.0.1 (no --agent-tls-server-name)');

    const systemCas = await cli(['node', NODE, token]);
    expect(systemCas.code).toBe(EXIT.unavailable);
    expect(systemCas.stderr).toContain("the system's CAs (no --agent-ca-file)");
  });

  it('--token is the bearer token the agent checks: a wrong one is refused (401, exit 3); with --token-file a usage error', async () => {
    const flags = [`--agent-ca-file=${join(base, 'ca.crt')}`, `--agent-tls-server-name=${SERVER_NAME}`];
    const wrong = await cli(['node', NODE, ...flags, '--token=not-the-agent-token']);
    expect(wrong.code).toBe(EXIT.unavailable);
    expect(wrong.stderr).toContain('the agent did not accept your credentials');
    expect(wrong.stderr).toContain('--audience volumescope-agent');
    // The flag wins over the variable.
    const right = await cli(['node', NODE, ...flags, `--token=${agent?.token ?? ''}`], { VOLUMESCOPE_AGENT_TOKEN: 'not-the-agent-token' });
    expect(right.stderr).toBe('');
    expect(right.code).toBe(EXIT.healthy);
    const both = await cli(['node', NODE, ...flags, '--token=a', `--token-file=${join(base, 'token')}`]);
    expect(both.code).toBe(EXIT.usage);
    expect(both.stderr).toContain('--token and --token-file exclude each other');
  });
});
