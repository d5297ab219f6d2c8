/**
 * The agent API over TLS with real certificates: a CA and a server certificate for 127.0.0.1
 * made by openssl(1) in the test, the agent serving them (`tls` option, as `--tls-cert-file` and
 * `--tls-private-key-file` do), and the dashboard's transport (VOLUMESCOPE_AGENT_CA_FILE)
 * verifying them: the right CA connects, no CA or another CA is refused, and the relay works
 * through it end to end.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { safeParseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { AgentContactRegistry, proxyAgentSnapshot, type AgentProxyDeps } from '../../lib/dashboard/agent-proxy.ts';
import { AGENT_CA_FILE_ENV, AGENT_TLS_SERVER_NAME_ENV, agentTransportFromEnv, isAgentCaFileError, type AgentTransport } from '../../lib/dashboard/agent-transport.ts';
import { parseAgentFlags } from '../node/flags.ts';
import { startServer, TEST_TOKEN, type ServerFixture } from './testing/server-fixture.ts';

let dir = '';

/** Runs openssl quietly in the test dir. */
function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA (`<name>.crt`, `<name>.key`). */
function makeCa(name: string): void {
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'vs-agent-tls-'));
  makeCa('ca');
  makeCa('other-ca');
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'agent.key', '-out', 'agent.csr', '-subj', '/CN=volumescope-agent');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:volumescope-agent.volumescope.svc\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', 'agent.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'agent.crt', '-days', '1', '-extfile', 'san.ext');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('agent API over TLS', () => {
  let fx: ServerFixture | undefined;
  let transport: AgentTransport | undefined;
  afterEach(async () => {
    await transport?.close();
    transport = undefined;
    await fx?.close();
    fx = undefined;
  });

  const start = async (): Promise<string> => {
    fx = await startServer({ server: { tls: { cert: readFileSync(join(dir, 'agent.crt')), key: readFileSync(join(dir, 'agent.key')) } } });
    return fx.baseUrl.replace(/^http:/, 'https:');
  };

  it('serves HTTPS that the dashboard transport verifies with the CA bundle', async () => {
    const url = await start();
    transport = agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'ca.crt') });

    const res = await transport.fetch(`${url}/api/v1/snapshot`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });

    expect(res.status).toBe(200);
    expect(safeParseSnapshot(await res.json()).success).toBe(true);
  });

  it('is refused without the CA (system CAs) and with another CA', async () => {
    const url = await start();
    transport = agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'other-ca.crt') });

    const plain = await fetch(`${url}/healthz`).then(
      () => 'connected',
      (err: unknown) => (err instanceof Error && err.cause instanceof Error && 'code' in err.cause ? String(err.cause.code) : 'failed'),
    );
    const other = await transport.fetch(`${url}/healthz`).then(
      () => 'connected',
      (err: unknown) => (err instanceof Error && err.cause instanceof Error && 'code' in err.cause ? String(err.cause.code) : 'failed'),
    );

    expect(plain).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(other).toMatch(/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/);
  });

  it('checks the certificate for VOLUMESCOPE_AGENT_TLS_SERVER_NAME instead of the address dialled (agents at pod IPs share one name)', async () => {
    const url = await start();
    transport = agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'ca.crt'), [AGENT_TLS_SERVER_NAME_ENV]: 'volumescope-agent.volumescope.svc' });
    const wrong = agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'ca.crt'), [AGENT_TLS_SERVER_NAME_ENV]: 'someone-else.example' });

    const right = await transport.fetch(`${url}/healthz`);
    const refused = await wrong.fetch(`${url}/healthz`).then(
      () => 'connected',
      (err: unknown) => (err instanceof Error && err.cause instanceof Error && 'code' in err.cause ? String(err.cause.code) : 'failed'),
    );
    await wrong.close();

    expect(right.status).toBe(200);
    expect(refused).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('does not answer plain HTTP on the TLS port', async () => {
    const url = await start();

    const res = await fetch(`${url.replace(/^https:/, 'http:')}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );

    expect(res).not.toBe(200);
  });

  it('relays a snapshot through the dashboard proxy over verified TLS', async () => {
    const url = await start();
    transport = agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'ca.crt') });
    const deps: AgentProxyDeps = {
      config: () => ({ source: 'env', agents: [{ name: 'node-a', url, tokenFile: '/unused' }] }),
      fetch: transport.fetch,
      readToken: () => Promise.resolve(TEST_TOKEN),
      now: () => Date.now(),
      registry: new AgentContactRegistry(),
      onShutdown: () => () => undefined,
      connectTimeoutMs: 5_000,
      actionTimeoutMs: 10_000,
    };

    const res = await proxyAgentSnapshot(new Request('http://dash/api/agents/node-a/snapshot'), 'node-a', deps);

    expect(res.status).toBe(200);
  });

  it('names the variable when the CA file is missing or holds no certificate', () => {
    writeFileSync(join(dir, 'empty.pem'), 'not a certificate\n');
    const missing = (): AgentTransport => agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'nope.pem') });
    const empty = (): AgentTransport => agentTransportFromEnv({ [AGENT_CA_FILE_ENV]: join(dir, 'empty.pem') });

    expect(missing).toThrow(/VOLUMESCOPE_AGENT_CA_FILE=.*nope\.pem/);
    expect(empty).toThrow(/holds no PEM certificate/);
    let caught: unknown;
    try {
      empty();
    } catch (err) {
      caught = err;
    }
    expect(isAgentCaFileError(caught)).toBe(true);
  });
});

describe('TLS and audience flags', () => {
  const defaults = { cwd: '/srv', hostname: 'node-a', inCluster: false };

  it('takes --tls-cert-file and --tls-private-key-file together, and refuses one without the other', () => {
    const both = parseAgentFlags(['--tls-cert-file', 'tls/agent.crt', '--tls-private-key-file', 'tls/agent.key'], defaults);
    expect(both.help ? null : both.config.tls).toEqual({ certFile: '/srv/tls/agent.crt', keyFile: '/srv/tls/agent.key' });
    expect(() => parseAgentFlags(['--tls-cert-file', 'a.crt'], defaults)).toThrow(/--tls-cert-file: needs --tls-private-key-file too/);
    expect(() => parseAgentFlags(['--tls-private-key-file', 'a.key'], defaults)).toThrow(/--tls-private-key-file: needs --tls-cert-file too/);
  });

  it('takes --authentication-token-audience only with the token webhook', () => {
    const ok = parseAgentFlags(['--kubeconfig', '/k', '--authentication-token-webhook', '--authentication-token-audience', 'volumescope-agent'], defaults);
    expect(ok.help ? null : ok.config.auth.tokenAudiences).toEqual(['volumescope-agent']);
    expect(() => parseAgentFlags(['--authentication-token-audience', 'volumescope-agent'], defaults)).toThrow(/needs --authentication-token-webhook/);
  });
});
