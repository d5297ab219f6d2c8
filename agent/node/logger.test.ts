import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { isTruncatedMessage, MESSAGE_LENGTH_LIMIT } from '../../lib/truncate-message.ts';
import { createAgentLogger, engineLogger } from './logger.ts';

function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      done();
    },
  });
  return { lines, stream };
}

describe('engineLogger', () => {
  it('tells whether debug lines are written, at the agent logger level', () => {
    const { stream } = capture();
    const at = (level: 'info' | 'debug') => engineLogger(createAgentLogger({ level, nodeName: 'node-a', destination: stream }), 'csi');

    expect([at('info').isDebugEnabled?.(), at('debug').isDebugEnabled?.()]).toEqual([false, true]);
  });

  it('cuts a 1 MB message and 1 MB string fields to the message limit, with the marker', async () => {
    const { lines, stream } = capture();
    const log = engineLogger(createAgentLogger({ level: 'info', nodeName: 'node-a', destination: stream }), 'csi');
    const huge = `rpc error: code = Internal desc = ${'x'.repeat(1 << 20)}`;

    log.warn(huge, { driver: 'd', error: huge, count: 3 });
    await new Promise((resolve) => setImmediate(resolve));

    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? '{}') as { msg: string; error: string; driver: string; count: number };
    expect(line.msg.length).toBeLessThanOrEqual(MESSAGE_LENGTH_LIMIT);
    expect(line.error.length).toBeLessThanOrEqual(MESSAGE_LENGTH_LIMIT);
    expect([isTruncatedMessage(line.msg), isTruncatedMessage(line.error)]).toEqual([true, true]);
    expect([line.driver, line.count]).toEqual(['d', 3]);
    expect(lines[0]?.length).toBeLessThan(3 * MESSAGE_LENGTH_LIMIT);
  });
});
