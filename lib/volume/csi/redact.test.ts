import { describe, expect, it } from 'vitest';
import { collectSecretValues, redactSecrets, scrubSecretValues, STRIPPED } from './redact.ts';

describe('redactSecrets', () => {
  it.each([
    {
      name: 'replaces the values of a top-level secrets map and keeps its keys',
      input: { volume_id: 'v', secrets: { user: 'admin', password: 'pw' } },
      want: { volume_id: 'v', secrets: { user: STRIPPED, password: STRIPPED } },
    },
    {
      name: 'redacts secrets maps nested in messages and arrays',
      input: { outer: [{ secrets: { token: 't' } }], inner: { secrets: { k: 'v' }, other: 'kept' } },
      want: { outer: [{ secrets: { token: STRIPPED } }], inner: { secrets: { k: STRIPPED }, other: 'kept' } },
    },
    {
      name: 'leaves requests without secrets as they are',
      input: { volume_id: 'v', volume_context: { secret: 'not-a-secrets-field' } },
      want: { volume_id: 'v', volume_context: { secret: 'not-a-secrets-field' } },
    },
  ])('$name', ({ input, want }) => {
    const before = structuredClone(input);
    expect(redactSecrets(input)).toEqual(want);
    expect(input).toEqual(before);
  });
});

describe('scrubSecretValues', () => {
  it.each([
    { name: 'removes every occurrence of a secret', text: 'pw and pw again', secrets: ['pw'], want: `${STRIPPED} and ${STRIPPED} again` },
    { name: 'removes a longer secret whole before a shorter one inside it', text: 'key=abc123', secrets: ['abc', 'abc123'], want: `key=${STRIPPED}` },
    { name: 'ignores empty secret values', text: 'nothing to hide', secrets: [''], want: 'nothing to hide' },
  ])('$name', ({ text, secrets, want }) => {
    expect(scrubSecretValues(text, secrets)).toBe(want);
  });

  it('collects the values of every secrets map of a request', () => {
    expect(collectSecretValues({ secrets: { a: 'x', b: '' }, nested: { secrets: { c: 'y' } } }).sort()).toEqual(['x', 'y']);
  });
});
