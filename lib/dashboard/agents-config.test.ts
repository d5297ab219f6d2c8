import { describe, expect, it } from 'vitest';
import {
  discoveredAgentsConfig,
  findAgent,
  isAgentsConfigError,
  loadAgentsConfig,
  parseAgentsConfigFile,
  parseAgentsEnv,
  readAgentToken,
  usesDiscovery,
} from './agents-config.ts';
import { isAgentUnavailableError } from './dashboard-error.ts';

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('agents from the environment', () => {
  it('a name=url list with per-agent token files gives one agent each, in order', () => {
    // Act
    const agents = parseAgentsEnv(' node-b=http://10.0.0.6:7070/ , node-a=https://a.example:8443', 'node-a=/etc/vs/a.token,node-b=b.token', '/srv');

    // Assert
    expect(agents).toEqual([
      { name: 'node-b', url: 'http://10.0.0.6:7070', tokenFile: '/srv/b.token' },
      { name: 'node-a', url: 'https://a.example:8443', tokenFile: '/etc/vs/a.token' },
    ]);
  });

  it('*=path is the token file of every agent not named', () => {
    const agents = parseAgentsEnv('a=http://h:1,b=http://h:2', '*=/t/all,b=/t/b', '/');
    expect(agents.map((a) => a.tokenFile)).toEqual(['/t/all', '/t/b']);
  });

  it.each([
    { name: 'an entry without =', agents: 'node-a', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: entry 1 "node-a" is not name=url' },
    { name: 'a URL that is not one', agents: 'a=not a url', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: agent a: "not a url" is not a URL' },
    { name: 'a non-http URL', agents: 'a=ftp://h', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: agent a: URL "ftp://h" must be http or https' },
    { name: 'credentials in the URL', agents: 'a=http://u:p@h', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: agent a: URL "http://u:p@h" must not have credentials, a query or a fragment' },
    { name: 'a name that cannot be a URL segment', agents: 'Node_A=http://h', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: entry: agent name "Node_A" must be lowercase letters, digits, \'-\' or \'.\', starting and ending with a letter or digit' },
    { name: 'the same agent twice', agents: 'a=http://h,a=http://i', tokens: '*=/t', message: 'VOLUMESCOPE_AGENTS: agent a is listed twice' },
    { name: 'an agent without a token file', agents: 'a=http://h', tokens: 'b=/t', message: 'VOLUMESCOPE_AGENT_TOKENS: no token file for agent a (add a=/path/to/token or *=/path/to/token)' },
    { name: 'a token entry without =', agents: 'a=http://h', tokens: '/t/a', message: 'VOLUMESCOPE_AGENT_TOKENS: entry 1 "/t/a" is not name=path' },
    { name: 'a token for an agent that is not listed', agents: 'a=http://h', tokens: 'a=/t,z=/z', message: 'VOLUMESCOPE_AGENT_TOKENS: token file for z, which is not in VOLUMESCOPE_AGENTS' },
  ])('$name is an error naming the variable and the entry', ({ agents, tokens, message }) => {
    // Act
    const err = caught(() => parseAgentsEnv(agents, tokens, '/'));

    // Assert
    expect(isAgentsConfigError(err)).toBe(true);
    expect((err as Error).message).toBe(message);
  });
});

describe('agents from a config file', () => {
  it('lists agents with token files relative to the file', () => {
    const agents = parseAgentsConfigFile(JSON.stringify({ agents: [{ name: 'a', url: 'http://h:1', tokenFile: 'a.token' }] }), '/etc/vs/dashboard.json');
    expect(agents).toEqual([{ name: 'a', url: 'http://h:1', tokenFile: '/etc/vs/a.token' }]);
  });

  it.each([
    { name: 'malformed JSON', text: '{', message: /^\/c\.json: not valid JSON/ },
    { name: 'an unknown field', text: '{"agents":[{"name":"a","url":"http://h","tokenFile":"t","token":"x"}]}', message: /^\/c\.json: agents\.0: / },
    { name: 'a missing token file', text: '{"agents":[{"name":"a","url":"http://h"}]}', message: /^\/c\.json: agents\.0\.tokenFile: / },
  ])('$name is an error naming the file and the field', ({ text, message }) => {
    const err = caught(() => parseAgentsConfigFile(text, '/c.json'));
    expect(isAgentsConfigError(err)).toBe(true);
    expect((err as Error).message).toMatch(message);
  });
});

describe('choosing the configuration', () => {
  it('nothing set means no agents', () => {
    expect(loadAgentsConfig({}, '/')).toEqual({ agents: [], source: 'none' });
  });

  it('the config file is read when named', () => {
    const config = loadAgentsConfig({ VOLUMESCOPE_DASHBOARD_CONFIG: 'd.json' }, '/srv', (p) => {
      expect(p).toBe('/srv/d.json');
      return '{"agents":[{"name":"a","url":"http://h","tokenFile":"/t"}]}';
    });
    expect(config.source).toBe('file');
    expect(findAgent(config, 'a')?.url).toBe('http://h');
    expect(findAgent(config, 'b')).toBeNull();
  });

  it.each([
    { name: 'both ways at once', env: { VOLUMESCOPE_DASHBOARD_CONFIG: '/d.json', VOLUMESCOPE_AGENTS: 'a=http://h' }, message: 'VOLUMESCOPE_DASHBOARD_CONFIG: set either it or VOLUMESCOPE_AGENTS/VOLUMESCOPE_AGENT_TOKENS, not both' },
    { name: 'tokens without agents', env: { VOLUMESCOPE_AGENT_TOKENS: '*=/t' }, message: 'VOLUMESCOPE_AGENT_TOKENS: is set but VOLUMESCOPE_AGENTS is empty' },
    { name: 'an unreadable config file', env: { VOLUMESCOPE_DASHBOARD_CONFIG: '/missing.json' }, message: 'VOLUMESCOPE_DASHBOARD_CONFIG: cannot read /missing.json (ENOENT)' },
  ])('$name is an error', ({ env, message }) => {
    const err = caught(() =>
      loadAgentsConfig(env, '/', () => {
        throw new Error('ENOENT');
      }),
    );
    expect((err as Error).message).toBe(message);
  });
});

describe('discovery as the configuration', () => {
  it('is used with VOLUMESCOPE_DISCOVERY=kubernetes, and not without', () => {
    expect(usesDiscovery({ VOLUMESCOPE_DISCOVERY: 'kubernetes' })).toBe(true);
    expect(usesDiscovery({ VOLUMESCOPE_DISCOVERY: ' ' })).toBe(false);
    expect(usesDiscovery({ VOLUMESCOPE_AGENTS: 'a=http://h' })).toBe(false);
  });

  it.each([
    { name: 'an unknown mode', env: { VOLUMESCOPE_DISCOVERY: 'dns' }, message: /^VOLUMESCOPE_DISCOVERY: "dns" is not a discovery mode/ },
    {
      name: 'a static configuration as well',
      env: { VOLUMESCOPE_DISCOVERY: 'kubernetes', VOLUMESCOPE_AGENTS: 'a=http://h', VOLUMESCOPE_AGENT_TOKENS: '*=/t' },
      message: /^VOLUMESCOPE_DISCOVERY: set either it or VOLUMESCOPE_AGENTS\/VOLUMESCOPE_AGENT_TOKENS, not both$/,
    },
  ])('$name is a configuration error naming the variable', ({ env, message }) => {
    const err = caught(() => usesDiscovery(env));
    expect(isAgentsConfigError(err)).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it("is the running discovery's agents and status", () => {
    const agents = [{ name: 'node-a', url: 'http://10.0.0.5:7070', tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }];
    const status = { namespace: 'volumescope', selector: 'app=agent', listed: true, error: null };

    const config = discoveredAgentsConfig({ agents: () => agents, status: () => status });

    expect(config).toEqual({ agents, source: 'kubernetes', discovery: status });
    expect(findAgent(config, 'node-a')?.url).toBe('http://10.0.0.5:7070');
  });
});

describe('reading a token', () => {
  const agent = { name: 'a', url: 'http://h', tokenFile: '/t/a.token' };

  it('is the file content without surrounding whitespace', async () => {
    await expect(readAgentToken(agent, () => Promise.resolve('  s3cret\n'))).resolves.toBe('s3cret');
  });

  it.each([
    { name: 'an empty file', read: () => Promise.resolve('\n'), message: 'token file /t/a.token is empty' },
    { name: 'a file with two lines', read: () => Promise.resolve('a\nb'), message: 'token file /t/a.token has more than one line' },
    { name: 'a missing file', read: () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOENT' })), message: 'cannot read token file /t/a.token (ENOENT)' },
  ])('$name is a misconfigured agent, never showing the content', async ({ read, message }) => {
    const err: unknown = await readAgentToken(agent, read).catch((e: unknown) => e);
    expect(isAgentUnavailableError(err)).toBe(true);
    expect((err as Error).message).toBe(message);
  });
});
