/**
 * Which agents the dashboard server knows, and where each one's bearer token is. Server-only:
 * token files are read here and nowhere else, and the token never leaves the server.
 *
 * Three ways to configure, one at a time:
 *
 * 1. Environment variables
 *    - `VOLUMESCOPE_AGENTS=name=url[,name=url…]`, e.g.
 *      `node-a=http://10.0.0.5:7070,node-b=http://10.0.0.6:7070`;
 *    - `VOLUMESCOPE_AGENT_TOKENS=name=path[,name=path…]`: the file holding each agent's token;
 *      `*=path` is the file for every agent not named. Relative paths are relative to the
 *      dashboard's working directory.
 * 2. A JSON file named by `VOLUMESCOPE_DASHBOARD_CONFIG`:
 *    `{"agents": [{"name": "node-a", "url": "http://10.0.0.5:7070", "tokenFile": "node-a.token"}]}`
 *    (relative `tokenFile`s are relative to the file's directory).
 * 3. `VOLUMESCOPE_DISCOVERY=kubernetes`: the agents are the agent pods the dashboard finds
 *    through the Kubernetes API, and change as they do (discovery.ts; the list then comes from
 *    the process's running discovery, with its status in {@link AgentsConfig.discovery}).
 *
 * Names are what the dashboard's URLs use (`/nodes/<name>`): lowercase letters, digits, `-` and
 * `.`, as Kubernetes node names. Token files are read on every request (so a rotated token is
 * picked up without a restart) and trimmed; an empty file is an error.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { AgentUnavailableError } from './dashboard-error.ts';
import { serverDiscovery, type AgentDiscovery } from './discovery.ts';
import { DISCOVERY_ENV, discoveryEnabled, isDiscoveryConfigError } from './discovery-settings.ts';
import type { DiscoveryStatus } from './discovery-status.ts';

/** The environment variables (and the file variable) this module reads. */
const AGENTS_ENV = 'VOLUMESCOPE_AGENTS';
const AGENT_TOKENS_ENV = 'VOLUMESCOPE_AGENT_TOKENS';
const DASHBOARD_CONFIG_ENV = 'VOLUMESCOPE_DASHBOARD_CONFIG';

/** One agent the dashboard proxies to. */
export interface AgentConfig {
  /** The name in the dashboard's URLs and API paths. */
  readonly name: string;
  /** The agent's base URL (`http(s)://host:port`, no trailing slash). */
  readonly url: string;
  /** The absolute path of the file holding the agent's bearer token. */
  readonly tokenFile: string;
}

/** Where the agent list comes from. */
export type AgentsSource = 'env' | 'file' | 'none' | 'kubernetes';

/**
 * The agents, in configuration order (discovered ones by name); `source` says where they came
 * from.
 */
export interface AgentsConfig {
  readonly agents: readonly AgentConfig[];
  /** `none` when nothing is configured (the overview then says how to configure). */
  readonly source: AgentsSource;
  /** With `source: 'kubernetes'`: where discovery looks, whether it listed, its current failure. */
  readonly discovery?: DiscoveryStatus;
}

/** The configuration is malformed; the message names the variable (or file) and the bad entry. */
export class AgentsConfigError extends Error {
  override readonly name = 'AgentsConfigError';

  constructor(
    /** The environment variable or file path that holds the problem. */
    readonly source: string,
    message: string,
  ) {
    super(`${source}: ${message}`);
  }
}

/** True for an {@link AgentsConfigError}. */
export function isAgentsConfigError(err: unknown): err is AgentsConfigError {
  return err instanceof AgentsConfigError;
}

const NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

function checkName(source: string, name: string, where: string): string {
  if (!NAME.test(name)) {
    throw new AgentsConfigError(source, `${where}: agent name ${JSON.stringify(name)} must be lowercase letters, digits, '-' or '.', starting and ending with a letter or digit`);
  }
  return name;
}

function checkUrl(source: string, name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AgentsConfigError(source, `agent ${name}: ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AgentsConfigError(source, `agent ${name}: URL ${JSON.stringify(raw)} must be http or https`);
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new AgentsConfigError(source, `agent ${name}: URL ${JSON.stringify(raw)} must not have credentials, a query or a fragment`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** Splits `a=b,c=d` into pairs; names the variable and the entry that is not `key=value`. */
function parsePairs(source: string, text: string, what: string): [string, string][] {
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  return entries.map((entry, i) => {
    const eq = entry.indexOf('=');
    if (eq <= 0 || eq === entry.length - 1) {
      throw new AgentsConfigError(source, `entry ${i + 1} ${JSON.stringify(entry)} is not ${what}`);
    }
    return [entry.slice(0, eq).trim(), entry.slice(eq + 1).trim()];
  });
}

/**
 * The agents of `VOLUMESCOPE_AGENTS` with their token files from `VOLUMESCOPE_AGENT_TOKENS`.
 * Throws an {@link AgentsConfigError} for a malformed entry, a bad name or URL, a duplicate name,
 * a token entry for an unknown agent, or an agent without a token file.
 */
export function parseAgentsEnv(agentsText: string, tokensText: string, cwd: string): AgentConfig[] {
  const tokens = new Map<string, string>();
  for (const [name, path] of parsePairs(AGENT_TOKENS_ENV, tokensText, 'name=path')) {
    if (name !== '*') checkName(AGENT_TOKENS_ENV, name, 'token entry');
    if (tokens.has(name)) throw new AgentsConfigError(AGENT_TOKENS_ENV, `agent ${name} has two token files`);
    tokens.set(name, resolve(cwd, path));
  }
  const agents: AgentConfig[] = [];
  const seen = new Set<string>();
  for (const [name, url] of parsePairs(AGENTS_ENV, agentsText, 'name=url')) {
    checkName(AGENTS_ENV, name, 'entry');
    if (seen.has(name)) throw new AgentsConfigError(AGENTS_ENV, `agent ${name} is listed twice`);
    seen.add(name);
    const tokenFile = tokens.get(name) ?? tokens.get('*');
    if (tokenFile === undefined) {
      throw new AgentsConfigError(AGENT_TOKENS_ENV, `no token file for agent ${name} (add ${name}=/path/to/token or *=/path/to/token)`);
    }
    agents.push({ name, url: checkUrl(AGENTS_ENV, name, url), tokenFile });
  }
  for (const name of tokens.keys()) {
    if (name !== '*' && !seen.has(name)) {
      throw new AgentsConfigError(AGENT_TOKENS_ENV, `token file for ${name}, which is not in ${AGENTS_ENV}`);
    }
  }
  return agents;
}

const ConfigFileSchema = z.strictObject({
  agents: z.array(z.strictObject({ name: z.string(), url: z.string(), tokenFile: z.string().min(1) })),
});

/** The agents of a `VOLUMESCOPE_DASHBOARD_CONFIG` file's text; `path` is the file's path. */
export function parseAgentsConfigFile(text: string, path: string): AgentConfig[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentsConfigError(path, `not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const parsed = ConfigFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : issue.path.map(String).join('.');
    throw new AgentsConfigError(path, `${where === '' ? 'file' : where}: ${issue?.message ?? 'invalid'}`);
  }
  const seen = new Set<string>();
  return parsed.data.agents.map((a, i) => {
    checkName(path, a.name, `agents.${i}.name`);
    if (seen.has(a.name)) throw new AgentsConfigError(path, `agent ${a.name} is listed twice`);
    seen.add(a.name);
    return { name: a.name, url: checkUrl(path, a.name, a.url), tokenFile: resolve(dirname(path), a.tokenFile) };
  });
}

/** The environment as this module reads it. */
export type AgentsEnv = Readonly<Record<string, string | undefined>>;

/**
 * The configuration from `env` (see the module comment). `readText` reads the config file.
 * Throws an {@link AgentsConfigError} when it is malformed or both ways are used at once.
 */
export function loadAgentsConfig(
  env: AgentsEnv,
  cwd: string,
  readText: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): AgentsConfig {
  const file = env[DASHBOARD_CONFIG_ENV]?.trim() ?? '';
  const agents = env[AGENTS_ENV]?.trim() ?? '';
  const tokens = env[AGENT_TOKENS_ENV]?.trim() ?? '';
  if (file !== '') {
    if (agents !== '' || tokens !== '') {
      throw new AgentsConfigError(DASHBOARD_CONFIG_ENV, `set either it or ${AGENTS_ENV}/${AGENT_TOKENS_ENV}, not both`);
    }
    const path = resolve(cwd, file);
    let text: string;
    try {
      text = readText(path);
    } catch (err) {
      throw new AgentsConfigError(DASHBOARD_CONFIG_ENV, `cannot read ${path} (${err instanceof Error ? err.message : String(err)})`);
    }
    return { agents: parseAgentsConfigFile(text, path), source: 'file' };
  }
  if (agents === '') {
    if (tokens !== '') throw new AgentsConfigError(AGENT_TOKENS_ENV, `is set but ${AGENTS_ENV} is empty`);
    return { agents: [], source: 'none' };
  }
  return { agents: parseAgentsEnv(agents, tokens, cwd), source: 'env' };
}

/** The configuration of a running discovery: its agents now, and its status. */
export function discoveredAgentsConfig(discovery: Pick<AgentDiscovery, 'agents' | 'status'>): AgentsConfig {
  return { agents: discovery.agents(), source: 'kubernetes', discovery: discovery.status() };
}

/**
 * Whether `env` asks for discovery. Throws an {@link AgentsConfigError} for an unknown mode, or
 * when a static configuration is set as well.
 */
export function usesDiscovery(env: AgentsEnv): boolean {
  let enabled: boolean;
  try {
    enabled = discoveryEnabled(env);
  } catch (err) {
    if (isDiscoveryConfigError(err)) throw new AgentsConfigError(err.variable, err.detail);
    throw err;
  }
  if (!enabled) return false;
  const set = [DASHBOARD_CONFIG_ENV, AGENTS_ENV, AGENT_TOKENS_ENV].filter((name) => (env[name]?.trim() ?? '') !== '');
  if (set.length > 0) throw new AgentsConfigError(DISCOVERY_ENV, `set either it or ${set.join('/')}, not both`);
  return true;
}

let cached: { key: string; config: AgentsConfig } | null = null;

/**
 * The configuration of this process (from `process.env`): static configurations parsed once per
 * distinct value of the variables; with discovery, the process discovery's current agents
 * (started on first use; the list changes as agent pods come and go). Throws an
 * {@link AgentsConfigError} when malformed.
 */
export function getAgentsConfig(): AgentsConfig {
  const env = process.env;
  if (usesDiscovery(env)) {
    try {
      return discoveredAgentsConfig(serverDiscovery(env));
    } catch (err) {
      if (isDiscoveryConfigError(err)) throw new AgentsConfigError(err.variable, err.detail);
      throw err;
    }
  }
  const key = [env[DASHBOARD_CONFIG_ENV], env[AGENTS_ENV], env[AGENT_TOKENS_ENV]].join('\u0000');
  if (cached?.key !== key) cached = { key, config: loadAgentsConfig(env, process.cwd()) };
  return cached.config;
}

/** The agent named `name`; `null` when none is configured under that name. */
export function findAgent(config: AgentsConfig, name: string): AgentConfig | null {
  return config.agents.find((a) => a.name === name) ?? null;
}

/**
 * The agent's bearer token, read from its token file now and trimmed. Throws an
 * `AgentUnavailableError` with code `agent-misconfigured` when the file cannot be read or is
 * empty (the message names the file, never its content).
 */
export async function readAgentToken(
  agent: AgentConfig,
  read: (path: string) => Promise<string> = (p) => readFile(p, 'utf8'),
): Promise<string> {
  let text: string;
  try {
    text = await read(agent.tokenFile);
  } catch (err) {
    const reason = err instanceof Error && 'code' in err ? String(err.code) : 'unreadable';
    throw new AgentUnavailableError('agent-misconfigured', agent.name, `cannot read token file ${agent.tokenFile} (${reason})`);
  }
  const token = text.trim();
  if (token === '') throw new AgentUnavailableError('agent-misconfigured', agent.name, `token file ${agent.tokenFile} is empty`);
  if (/[\r\n]/.test(token)) {
    throw new AgentUnavailableError('agent-misconfigured', agent.name, `token file ${agent.tokenFile} has more than one line`);
  }
  return token;
}
