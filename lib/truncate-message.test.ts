import { describe, expect, it } from 'vitest';
import { EVENT_NOTE_LENGTH_LIMIT, isTruncatedMessage, MESSAGE_LENGTH_LIMIT, truncateMessage } from './truncate-message.ts';

const MB = 1 << 20;

describe('truncateMessage', () => {
  it('keeps a message within the limit unchanged', () => {
    const text = 'rpc error: code = Internal desc = disk array offline';
    expect(truncateMessage(text)).toBe(text);
    expect(truncateMessage('x'.repeat(MESSAGE_LENGTH_LIMIT))).toHaveLength(MESSAGE_LENGTH_LIMIT);
    expect(isTruncatedMessage(text)).toBe(false);
  });

  it.each([
    { limit: MESSAGE_LENGTH_LIMIT, name: 'the message limit' },
    { limit: EVENT_NOTE_LENGTH_LIMIT, name: 'the event note limit' },
  ])('cuts a 1 MB message to $name with a marker that tells how much was dropped', ({ limit }) => {
    const text = `rpc error: code = Internal desc = ${'x'.repeat(MB)}`;

    const cut = truncateMessage(text, limit);

    expect(cut.length).toBeLessThanOrEqual(limit);
    expect(cut.length).toBeGreaterThan(limit - 64);
    expect(cut.startsWith('rpc error: code = Internal desc = xxx')).toBe(true);
    const dropped = Number(/\[truncated ([0-9]+) characters\]$/.exec(cut)?.[1]);
    expect(cut.length - ` ... [truncated ${dropped} characters]`.length + dropped).toBe(text.length);
    expect(isTruncatedMessage(cut)).toBe(true);
    expect(truncateMessage(cut, limit)).toBe(cut);
  });

  it('never splits a surrogate pair at the cut', () => {
    const text = '😀'.repeat(5000);

    const cut = truncateMessage(text, 1000);

    const head = cut.slice(0, cut.indexOf(' ... [truncated'));
    expect(head.length % 2).toBe(0);
    expect(head).toBe('😀'.repeat(head.length / 2));
  });
});
