/**
 * `npm run agent -- [flags]`: the VolumeScope node agent process. Parses the flags, starts the
 * volume manager over the manifest directory (agent/node/) and serves it over HTTP
 * (agent/server/) until SIGTERM or SIGINT.
 *
 * Exit codes: 0 after a signal-initiated shutdown (mounts stay; the next start reconstructs
 * them) and for `--help`; 1 when the agent cannot start; 2 for a bad flag value (the message
 * names the flag). The first SIGTERM/SIGINT starts the graceful shutdown (bounded by
 * `--shutdown-grace-period`); a second one is not handled, so it ends the process at once.
 */
import { readFile } from 'node:fs/promises';
import { realClock } from '../lib/clock/clock.ts';
import { errorMessage } from '../lib/volume/errors.ts';
import { helpText, isFlagError, parseAgentFlags, type AgentConfig } from './node/flags.ts';
import { createAgentLogger, type AgentLogger } from './node/logger.ts';
import { NodeAgent } from './node/node-agent.ts';
import { isTokenFileError, ensureTokenFile } from './node/token-file.ts';
import { createAgentServer } from './server/agent-server.ts';
import { staticTokenAuthenticator, type Authenticator } from './server/authenticator.ts';
import { createAgentMetrics } from './server/metrics.ts';

const EXIT_OK = 0;
const EXIT_START_FAILED = 1;
const EXIT_BAD_FLAG = 2;

type ShutdownSignal = 'SIGTERM' | 'SIGINT';

/** Resolves with the first SIGTERM/SIGINT. Installed first thing, so a signal during start is a clean shutdown too. */
function shutdownSignal(): Promise<ShutdownSignal> {
  return new Promise((resolve) => {
    const on = (signal: ShutdownSignal) => () => {
      resolve(signal);
    };
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });
}

function badFlag(message: string): number {
  process.stderr.write(`volumescope-agent: ${message}\nRun with --help to list the flags.\n`);
  return EXIT_BAD_FLAG;
}

async function packageVersion(): Promise<string> {
  try {
    const pkg: unknown = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const signal = shutdownSignal();
  let config: AgentConfig;
  try {
    const parsed = parseAgentFlags(argv);
    if (parsed.help) {
      process.stdout.write(helpText());
      return EXIT_OK;
    }
    config = parsed.config;
  } catch (err) {
    if (isFlagError(err)) return badFlag(err.message);
    throw err;
  }

  const log = createAgentLogger({ level: config.logLevel, nodeName: config.nodeName });
  let token: string;
  try {
    const t = await ensureTokenFile(config.tokenFile);
    token = t.token;
    if (t.created) log.info({ tokenFile: config.tokenFile }, 'Created the API token file');
  } catch (err) {
    if (isTokenFileError(err)) return badFlag(`--token-file: ${err.message}`);
    throw err;
  }

  const metrics = createAgentMetrics();
  let agent: NodeAgent;
  try {
    agent = await NodeAgent.start({ config, log, clock: realClock, version: await packageVersion(), metrics });
  } catch (err) {
    if (isFlagError(err)) return badFlag(err.message);
    log.fatal({ error: errorMessage(err) }, `The agent cannot start: ${errorMessage(err)}`);
    return EXIT_START_FAILED;
  }

  let authenticator: Authenticator & { close(): void };
  if (config.auth.tokenWebhook && agent.kubeConfig !== null) {
    // The webhook authenticator (and the Kubernetes client) is loaded only when asked for.
    const { createAgentAuthenticator, isAuthConfigError } = await import('./server/webhook-auth.ts');
    try {
      authenticator = createAgentAuthenticator({
        staticToken: token,
        webhook: {
          kubeConfig: agent.kubeConfig,
          nodeName: config.nodeName,
          clock: realClock,
          authorizationMode: config.auth.authorizationMode,
          authenticationCacheTtlMs: config.auth.tokenWebhookCacheTtlMs,
          authorizedTtlMs: config.auth.authorizedTtlMs,
          unauthorizedTtlMs: config.auth.unauthorizedTtlMs,
          ...(config.auth.tokenAudiences === undefined ? {} : { audiences: config.auth.tokenAudiences }),
        },
      });
    } catch (err) {
      await agent.stop(0);
      if (isAuthConfigError(err)) return badFlag(`--authentication-token-webhook: ${err.message}`);
      throw err;
    }
    log.info({ authorizationMode: config.auth.authorizationMode, audiences: config.auth.tokenAudiences ?? [] }, 'Bearer tokens are checked with TokenReview (webhook authentication)');
  } else {
    authenticator = { ...staticTokenAuthenticator(token), close: () => undefined };
  }
  let tls: { cert: Buffer; key: Buffer } | undefined;
  if (config.tls !== undefined) {
    try {
      tls = { cert: await readFile(config.tls.certFile), key: await readFile(config.tls.keyFile) };
    } catch (err) {
      await agent.stop(0);
      return badFlag(`--tls-cert-file/--tls-private-key-file: ${errorMessage(err)}`);
    }
  }
  let server: ReturnType<typeof createAgentServer>;
  try {
    server = createAgentServer({ runtime: agent, authenticator, metrics, stateDir: agent.stateDir, ...(tls === undefined ? {} : { tls }) });
  } catch (err) {
    // A certificate and key that do not parse or do not match.
    await agent.stop(0);
    return badFlag(`--tls-cert-file ${config.tls?.certFile ?? ''}: ${errorMessage(err)}`);
  }
  let address: { host: string; port: number };
  try {
    address = await server.listen(config.listen.host, config.listen.port);
  } catch (err) {
    await agent.stop(0);
    // The address is the operator's choice: a port in use or a host that is not local means another value.
    return badFlag(`--listen ${config.listen.host}:${config.listen.port}: ${errorMessage(err)}`);
  }
  const hostPart = address.host.includes(':') ? `[${address.host}]` : address.host;
  log.info(
    { listen: `${hostPart}:${address.port}`, host: address.host, port: address.port, nodeName: config.nodeName, version: agent.version },
    `Serving the agent API on ${tls === undefined ? 'http' : 'https'}://${hostPart}:${address.port}`,
  );

  const received = await signal;
  // A review still waiting for the API server must not hold the shutdown.
  authenticator.close();
  await shutdown(received, log, agent, server, config.shutdownGracePeriodMs);
  return EXIT_OK;
}

/** Stop accepting requests and work, let running operations finish (bounded), keep mounts. */
async function shutdown(
  signal: ShutdownSignal,
  log: AgentLogger,
  agent: NodeAgent,
  server: { close(): Promise<void> },
  graceMs: number,
): Promise<void> {
  log.info({ signal, graceMs }, `Received ${signal}; shutting down (mounts are kept)`);
  const closing = server.close().catch((err: unknown) => {
    log.warn({ error: errorMessage(err) }, 'Closing the API server failed');
  });
  const { operationsFinished } = await agent.stop(graceMs);
  // Open streams may hold the server; never wait for it longer than the grace period.
  const serverClosed = await Promise.race([closing.then(() => true), delay(graceMs).then(() => false)]);
  log.info({ operationsFinished, serverClosed }, 'Agent stopped');
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    realClock.setTimeout(resolve, ms);
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`volumescope-agent: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(EXIT_START_FAILED);
  },
);
