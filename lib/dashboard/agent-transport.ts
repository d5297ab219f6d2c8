/**
 * How the dashboard server connects to agents: plain `fetch` for `http://` agents, and for
 * agents serving TLS (`--tls-cert-file`) a `fetch` that verifies their certificates against the
 * CA bundle in `VOLUMESCOPE_AGENT_CA_FILE` (PEM; e.g. the `ca.crt` of the Secret cert-manager or
 * openssl made). Without the variable, `https://` agents are verified against the system's CAs.
 * Certificate verification is never turned off. Server-only.
 *
 * The CA-verifying fetch is undici's own (`undici` package): Node's built-in fetch cannot take a
 * dispatcher from another undici version, and a per-connection CA needs a dispatcher.
 */
import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';

/** The environment variable naming the CA bundle agents' certificates are verified with. */
export const AGENT_CA_FILE_ENV = 'VOLUMESCOPE_AGENT_CA_FILE';
/**
 * The name agents' certificates are checked for instead of the address dialled: discovered
 * agents are dialled at their pod IPs, which no certificate made ahead of time can list, so the
 * agents share one certificate for a DNS name (e.g. `volumescope-agent.volumescope.svc`).
 */
export const AGENT_TLS_SERVER_NAME_ENV = 'VOLUMESCOPE_AGENT_TLS_SERVER_NAME';

/** The CA bundle cannot be read or holds no certificate. */
export class AgentCaFileError extends Error {
  override readonly name = 'AgentCaFileError';
}

/** True for an {@link AgentCaFileError}. */
export function isAgentCaFileError(err: unknown): err is AgentCaFileError {
  return err instanceof AgentCaFileError;
}

/** A fetch that trusts exactly the certificates of `ca` (PEM) for TLS, and closes its connections on {@link close}. */
export interface AgentTransport {
  readonly fetch: typeof fetch;
  close(): Promise<void>;
}

/** A transport verifying agents against the CA bundle `ca` (PEM text), for `serverName` when given (else the host dialled). */
export function caVerifyingTransport(ca: string, serverName?: string): AgentTransport {
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new AgentCaFileError('the agent CA bundle holds no PEM certificate');
  const dispatcher = new Agent({ connect: { ca, rejectUnauthorized: true, ...(serverName === undefined ? {} : { servername: serverName }) } });
  const caFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    // The relay passes string URLs and string bodies; undici's Response is the web Response.
    undiciFetch(typeof input === 'string' || input instanceof URL ? input : input.url, { ...(init as Record<string, unknown>), dispatcher }) as unknown as Promise<Response>;
  return { fetch: caFetch, close: () => dispatcher.close() };
}

/** The transport `env` asks for: CA-verifying with `VOLUMESCOPE_AGENT_CA_FILE`, else the global fetch. */
export function agentTransportFromEnv(env: Readonly<Record<string, string | undefined>>): AgentTransport {
  const file = env[AGENT_CA_FILE_ENV];
  if (file === undefined || file === '') return { fetch: (input, init) => fetch(input, init), close: () => Promise.resolve() };
  let ca: string;
  try {
    ca = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentCaFileError(`${AGENT_CA_FILE_ENV}=${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const serverName = env[AGENT_TLS_SERVER_NAME_ENV]?.trim() ?? '';
  return caVerifyingTransport(ca, serverName === '' ? undefined : serverName);
}
