import { describe, expect, it } from 'vitest';
import { flagSpecs, helpText, isFlagError, parseAgentFlags, type AgentConfig } from './flags.ts';

const defaults = { hostname: 'Worker-7.Example', cwd: '/srv/agent' };

function config(args: string[]): AgentConfig {
  const parsed = parseAgentFlags(args, defaults);
  if (parsed.help) throw new Error('unexpected help');
  return parsed.config;
}

function flagOfError(args: string[]): string {
  try {
    parseAgentFlags(args, defaults);
  } catch (err) {
    if (isFlagError(err)) return err.flag;
    throw err;
  }
  throw new Error('no error');
}

describe('parseAgentFlags', () => {
  it('fills every default: the lower-cased host name, the root dir below the working directory and the paths below it', () => {
    expect(config([])).toEqual({
      nodeName: 'worker-7.example',
      rootDir: '/srv/agent/.volumescope/worker-7.example',
      manifestDir: '/srv/agent/.volumescope/worker-7.example/manifests',
      manifestDirGiven: false,
      listen: { host: '127.0.0.1', port: 7070 },
      tokenFile: '/srv/agent/.volumescope/worker-7.example/agent-token',
      reconcilePeriodMs: 100,
      controllerAttachDetach: false,
      csiDrivers: [],
      attachVerifyPeriodMs: 60_000,
      mountHealthPeriodMs: 10_000,
      mountHealthTimeoutMs: 5_000,
      volumeStatsAggPeriodMs: 60_000,
      allowMount: true,
      shutdownGracePeriodMs: 10_000,
      logLevel: 'info',
      mode: 'managed',
      source: 'manifest',
      mountinfoPath: '/proc/self/mountinfo',
      observeRefreshPeriodMs: 10_000,
      allowOrphanCleanup: false,
      nodeStatusUpdateFrequencyMs: 10_000,
      syncFrequencyMs: 60_000,
      registerNode: false,
      nodeIp: '127.0.0.1',
      auth: { tokenWebhook: false, tokenWebhookCacheTtlMs: 120_000, authorizationMode: 'AlwaysAllow', authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000 },
    });
  });

  it('picks the kubernetes source for --kubeconfig, --mode=observe and inside a pod; controller attach/detach then defaults to true', () => {
    expect(config(['--kubeconfig', 'kube/config'])).toMatchObject({ source: 'kubernetes', kubeconfig: '/srv/agent/kube/config', controllerAttachDetach: true });
    expect(config(['--mode=observe'])).toMatchObject({ mode: 'observe', source: 'kubernetes', rootDir: '/var/lib/kubelet' });
    // Observe mode writes nothing below the kubelet's root dir, not even its token.
    expect(config(['--mode=observe', '--root-dir=/var/lib/kubelet']).tokenFile).toBe('/srv/agent/.volumescope/worker-7.example/agent-token');
    const inPod = parseAgentFlags([], { ...defaults, inCluster: true });
    expect(inPod.help ? null : inPod.config.source).toBe('kubernetes');
    expect(config(['--source=kubernetes', '--controller-attach-detach=false']).controllerAttachDetach).toBe(false);
    // A KUBECONFIG in the developer's shell alone never turns a standalone agent into a cluster agent.
    expect(config([]).source).toBe('manifest');
  });

  it('reads the observe-mode and webhook flags', () => {
    const c = config([
      '--mode=observe',
      '--mountinfo=/proc/1/mountinfo',
      '--observe-refresh-period=30s',
      '--allow-orphan-cleanup',
      '--authentication-token-webhook',
      '--authentication-token-webhook-cache-ttl=1m',
      '--authorization-mode=Webhook',
      '--authorization-webhook-cache-authorized-ttl=10s',
      '--authorization-webhook-cache-unauthorized-ttl=1s',
      '--node-status-update-frequency=5s',
      '--sync-frequency=30s',
    ]);
    expect(c).toMatchObject({
      mountinfoPath: '/proc/1/mountinfo',
      observeRefreshPeriodMs: 30_000,
      allowOrphanCleanup: true,
      nodeStatusUpdateFrequencyMs: 5000,
      syncFrequencyMs: 30_000,
      auth: { tokenWebhook: true, tokenWebhookCacheTtlMs: 60_000, authorizationMode: 'Webhook', authorizedTtlMs: 10_000, unauthorizedTtlMs: 1000 },
    });
  });

  it('reads every flag, booleans in both forms and repeated --csi-driver values', () => {
    const c = config([
      '--node-name=node-a',
      '--root-dir',
      'var/kubelet',
      '--manifest-dir',
      '/etc/manifests',
      '--listen',
      '[::1]:0',
      '--token-file',
      'token',
      '--reconcile-period',
      '250ms',
      '--controller-attach-detach',
      '--csi-driver',
      'a.example.com=/run/a.sock',
      '--csi-driver',
      'b.example.com=unix:///run/b.sock',
      '--attach-verify-period',
      '0',
      '--allow-mount=false',
      '--shutdown-grace-period',
      '2s',
      '--log-level',
      'debug',
    ]);
    expect(c).toMatchObject({
      nodeName: 'node-a',
      rootDir: '/srv/agent/var/kubelet',
      manifestDir: '/etc/manifests',
      manifestDirGiven: true,
      listen: { host: '::1', port: 0 },
      tokenFile: '/srv/agent/token',
      reconcilePeriodMs: 250,
      controllerAttachDetach: true,
      csiDrivers: [
        { name: 'a.example.com', endpoint: 'unix:///run/a.sock' },
        { name: 'b.example.com', endpoint: 'unix:///run/b.sock' },
      ],
      attachVerifyPeriodMs: 0,
      allowMount: false,
      shutdownGracePeriodMs: 2000,
      logLevel: 'debug',
    });
    expect(config(['--controller-attach-detach=true', '--controller-attach-detach=false']).controllerAttachDetach).toBe(false);
  });

  it('reads --kube-request-timeout as a duration, absent by default (the source then uses its own)', () => {
    expect(config(['--kubeconfig', 'k', '--kube-request-timeout', '1s']).kubeRequestTimeoutMs).toBe(1_000);
    expect(config(['--kubeconfig', 'k']).kubeRequestTimeoutMs).toBeUndefined();
  });

  it('answers --help without reading other flags', () => {
    expect(parseAgentFlags(['--listen', 'nonsense', '--help'], defaults)).toEqual({ help: true });
  });

  it.each([
    [['--reconcile-period', '100'], '--reconcile-period'],
    [['--reconcile-period', '0ms'], '--reconcile-period'],
    [['--attach-verify-period', 'hourly'], '--attach-verify-period'],
    [['--shutdown-grace-period', '1x'], '--shutdown-grace-period'],
    [['--listen', '127.0.0.1'], '--listen'],
    [['--listen', '127.0.0.1:70000'], '--listen'],
    [['--csi-driver', 'a.example.com=relative.sock'], '--csi-driver'],
    [['--csi-driver', 'a.example.com=/run/a.sock', '--csi-driver', 'a.example.com=/run/b.sock'], '--csi-driver'],
    [['--node-name', 'UPPER'], '--node-name'],
    [['--root-dir', ' '], '--root-dir'],
    [['--log-level', 'loud'], '--log-level'],
    [['--allow-mount=perhaps'], '--allow-mount'],
    [['--bogus'], '--bogus'],
    [['--mode=watch'], '--mode'],
    [['--source=etcd'], '--source'],
    [['--source=manifest', '--kubeconfig=k'], '--kubeconfig'],
    [['--source=manifest', '--mode=observe'], '--mode'],
    [['--allow-orphan-cleanup'], '--allow-orphan-cleanup'],
    [['--authorization-mode=Webhook'], '--authorization-mode'],
    [['--authentication-token-webhook'], '--authentication-token-webhook'],
    [['--kubeconfig', 'k', '--authorization-mode=RBAC'], '--authorization-mode'],
    [['--kubeconfig', 'k', '--authorization-mode=Webhook'], '--authorization-mode'],
    [['--node-status-update-frequency=0'], '--node-status-update-frequency'],
    [['--sync-frequency=0'], '--sync-frequency'],
    [['--kube-request-timeout=0s'], '--kube-request-timeout'],
    [['--kube-request-timeout=soon'], '--kube-request-timeout'],
    [['--listen'], '--listen'],
    [['stray'], 'stray'],
  ])('refuses %j with a FlagError for %s', (args, flag) => {
    expect(flagOfError(args)).toBe(flag);
  });

  it.each([['--allow-mount=false'], ['--no-allow-mount'], ['--allow-mount=0']])('refuses --allow-orphan-cleanup with %s, naming both flags', (flag) => {
    let err: unknown;
    try {
      parseAgentFlags(['--mode=observe', '--allow-orphan-cleanup', flag], { hostname: 'node-a', cwd: '/' });
    } catch (e) {
      err = e;
    }
    expect(isFlagError(err) && err.flag).toBe('--allow-orphan-cleanup');
    expect((err as Error).message).toBe(
      '--allow-orphan-cleanup: cannot be used with --allow-mount=false (the cleanup must read the real mount table given by --mountinfo and unmount for real; with --allow-mount=false the agent reads a stand-in table)',
    );
    // Either flag alone is fine.
    expect(config(['--mode=observe', flag]).allowMount).toBe(false);
    expect(config(['--mode=observe', '--allow-orphan-cleanup']).allowOrphanCleanup).toBe(true);
  });

  it('names the host name and --node-name when the host name is no valid node name', () => {
    let message = '';
    try {
      parseAgentFlags([], { hostname: 'bad_host', cwd: '/' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('--node-name');
    expect(message).toContain('bad_host');
  });
});

describe('helpText', () => {
  it('lists every flag with its default', () => {
    const text = helpText();
    for (const f of flagSpecs) {
      expect(text).toContain(`--${f.name}`);
      if (f.default !== '') expect(text).toContain(`(default: ${f.default})`);
    }
  });
});

describe('parseAgentFlags --register-node and --node-ip', () => {
  const defaults = { hostname: 'Node-A', cwd: '/work', inCluster: false };
  it('registers only in managed mode with the kubernetes source', () => {
    const parsed = parseAgentFlags(['--kubeconfig=/k', '--register-node=true', '--node-ip=10.0.0.5'], defaults);
    expect(parsed.help ? null : { registerNode: parsed.config.registerNode, nodeIp: parsed.config.nodeIp }).toEqual({ registerNode: true, nodeIp: '10.0.0.5' });
    expect(() => parseAgentFlags(['--register-node'], defaults)).toThrow(/--register-node: needs --mode=managed and the kubernetes source/);
    expect(() => parseAgentFlags(['--mode=observe', '--register-node'], defaults)).toThrow(/--register-node: needs --mode=managed/);
  });

  it('refuses a --node-ip that is not an IP address', () => {
    expect(() => parseAgentFlags(['--kubeconfig=/k', '--node-ip=agent-0'], defaults)).toThrow(/--node-ip: "agent-0" is not an IP address/);
  });
});
