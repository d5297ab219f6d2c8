import { describe, expect, it } from 'vitest';
import { isUsageError, parseArgs } from './args.ts';

const REQUIRED = ['--endpoint', 'unix:///run/csi/csi.sock', '--state-dir', '/var/lib/csi-loop'];

function usageFlag(argv: string[], env: NodeJS.ProcessEnv = {}): string | undefined {
  try {
    parseArgs(argv, env);
  } catch (err) {
    if (isUsageError(err)) return err.flag;
    throw err;
  }
  return undefined;
}

describe('parseArgs', () => {
  it('fills in defaults for the optional flags', () => {
    const parsed = parseArgs(REQUIRED, {});
    expect(parsed).toMatchObject({
      kind: 'run',
      options: {
        socketPath: '/run/csi/csi.sock',
        stateDir: '/var/lib/csi-loop',
        controlPort: undefined,
        driverName: 'csi-loop.volumescope.dev',
        mode: 'auto',
        registrationDir: undefined,
        strict: false,
        logCalls: 'all',
      },
    });
  });

  it('reads every flag, in both --flag value and --flag=value form', () => {
    const parsed = parseArgs(
      [
        '--endpoint=unix:/tmp/x.sock',
        '--state-dir',
        '/s',
        '--control=127.0.0.1:9808',
        '--driver-name',
        'other.example.com',
        '--node-id=node-7',
        '--mode',
        'privileged',
        '--registration-dir',
        '/reg',
        '--strict',
        '--log-calls=failed',
      ],
      {},
    );
    expect(parsed).toEqual({
      kind: 'run',
      options: {
        socketPath: '/tmp/x.sock',
        stateDir: '/s',
        controlPort: 9808,
        driverName: 'other.example.com',
        nodeId: 'node-7',
        mode: 'privileged',
        registrationDir: '/reg',
        strict: true,
        logCalls: 'failed',
      },
    });
  });

  it('takes the endpoint from CSI_ENDPOINT when the flag is absent', () => {
    expect(parseArgs(['--state-dir', '/s'], { CSI_ENDPOINT: 'unix:///e.sock' })).toMatchObject({
      options: { socketPath: '/e.sock' },
    });
  });

  it('recognises --help anywhere', () => {
    expect(parseArgs([...REQUIRED, '--help'], {})).toEqual({ kind: 'help' });
  });

  it.each([
    [['--bogus', 'x', ...REQUIRED], '--bogus'],
    [['--state-dir', '/s'], '--endpoint'],
    [['--endpoint', 'unix:///x.sock'], '--state-dir'],
    [[...REQUIRED, '--mode', 'sometimes'], '--mode'],
    [[...REQUIRED, '--control', '0.0.0.0:9808'], '--control'],
    [[...REQUIRED, '--control', '127.0.0.1:99999'], '--control'],
    [[...REQUIRED, '--node-id'], '--node-id'],
    [[...REQUIRED, '--node-id', '--mode', 'auto'], '--node-id'],
    [[...REQUIRED, '--strict=true'], '--strict'],
    [[...REQUIRED, '--log-calls', 'none'], '--log-calls'],
    [['--endpoint', 'tcp://1.2.3.4:5', '--state-dir', '/s'], '--endpoint'],
  ])('names the offending flag for %j', (argv, flag) => {
    expect(usageFlag(argv)).toBe(flag);
  });
});
