import { describe, expect, it } from 'vitest';
import { RetryOperationRequestSchema, UnmountRequestSchema } from './actions.ts';
import { isInvalidRequestBodyError, parseJsonRequestBody, parseRequestBody, type InvalidRequestBodyError } from './request-body.ts';

function rejection(fn: () => unknown): InvalidRequestBodyError {
  try {
    fn();
  } catch (err) {
    if (isInvalidRequestBodyError(err)) return err;
    throw err;
  }
  throw new Error('expected an InvalidRequestBodyError');
}

describe('parseRequestBody', () => {
  it('returns the parsed body when it fits the schema', () => {
    expect(parseRequestBody(RetryOperationRequestSchema, { volume: 'v', podUid: 'p' })).toEqual({ volume: 'v', podUid: 'p' });
    expect(parseRequestBody(RetryOperationRequestSchema, { volume: 'v' })).toEqual({ volume: 'v' });
  });

  it.each([
    { name: 'a missing field is Required', body: {}, field: 'volume', message: 'volume: Required' },
    {
      name: 'a field of the wrong type says what was expected',
      body: { volume: 'v', podUid: 7 },
      field: 'podUid',
      message: 'podUid: expected string, received number',
    },
    {
      name: 'null is named as null',
      body: { volume: null },
      field: 'volume',
      message: 'volume: expected string, received null',
    },
    {
      name: 'an empty string is too short',
      body: { volume: '' },
      field: 'volume',
      message: 'volume: Too small: expected string to have >=1 characters',
    },
    {
      name: 'an unknown field is named',
      body: { volume: 'v', volumeName: 'x' },
      field: 'volumeName',
      message: 'volumeName: Unrecognized key: "volumeName"',
    },
    {
      name: 'a body that is not an object is the body field',
      body: ['v'],
      field: 'body',
      message: 'body: expected object, received array',
    },
  ])('$name', ({ body, field, message }) => {
    const err = rejection(() => parseRequestBody(RetryOperationRequestSchema, body));
    expect(err.field).toBe(field);
    expect(err.message).toBe(message);
    expect(err.toErrorBody()).toEqual({ error: { code: 'bad-request', message, field } });
  });

  it('lists every problem and names the first field', () => {
    const err = rejection(() => parseRequestBody(UnmountRequestSchema, { volume: 3 }));
    expect(err.field).toBe('podUid');
    expect(err.message).toBe('podUid: Required; volume: expected string, received number');
  });
});

describe('parseJsonRequestBody', () => {
  it.each([
    { name: 'malformed JSON', text: '{"volume":' },
    { name: 'an empty body', text: '' },
  ])('rejects $name as the body field', ({ text }) => {
    const err = rejection(() => parseJsonRequestBody(RetryOperationRequestSchema, text));
    expect(err.field).toBe('body');
    expect(err.message).toMatch(/^body: malformed JSON/);
  });

  it('parses and validates JSON text', () => {
    expect(parseJsonRequestBody(UnmountRequestSchema, '{"podUid":"p","volume":"v"}')).toEqual({ podUid: 'p', volume: 'v' });
    expect(rejection(() => parseJsonRequestBody(UnmountRequestSchema, '{"podUid":"p"}')).message).toBe('volume: Required');
  });
});
