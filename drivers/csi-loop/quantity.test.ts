import { describe, expect, it } from 'vitest';
import { isInvalidQuantityError, parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  it.each([
    ['64Mi', 64 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['512Ki', 512 * 1024],
    ['2Ti', 2 * 2 ** 40],
    ['100M', 100e6],
    ['3k', 3000],
    ['1048576', 1048576],
    [' 8Mi ', 8 * 2 ** 20],
  ])('reads %j as %d bytes', (text, bytes) => {
    expect(parseQuantity(text)).toBe(bytes);
  });

  it.each(['', 'Mi', '1.5Gi', '-1Mi', '10Qi', '0', '64 Mi', '99999999999Ti'])('rejects %j', (text) => {
    let caught: unknown;
    try {
      parseQuantity(text);
    } catch (err) {
      caught = err;
    }
    expect(isInvalidQuantityError(caught)).toBe(true);
  });
});
