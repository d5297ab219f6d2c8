import { describe, expect, it } from 'vitest';
import { agentApiErrorFromResponse, API_ERROR_STATUS, apiErrorBody, ApiErrorBodySchema, isAgentApiError } from './api-error.ts';

describe('apiErrorBody', () => {
  it('leaves out field and checks unless given', () => {
    expect(apiErrorBody('not-found', 'no route')).toStrictEqual({ error: { code: 'not-found', message: 'no route' } });
    const refused = apiErrorBody('conflict', 'pod still runs', { checks: [{ name: 'pod-gone', ok: false, detail: 'running' }] });
    expect(ApiErrorBodySchema.parse(refused)).toStrictEqual(refused);
  });

  it.each([
    { code: 'bad-request', status: 400 },
    { code: 'unauthorized', status: 401 },
    { code: 'not-found', status: 404 },
    { code: 'method-not-allowed', status: 405 },
    { code: 'conflict', status: 409 },
    { code: 'payload-too-large', status: 413 },
    { code: 'not-ready', status: 503 },
  ] as const)('sends $code with status $status', ({ code, status }) => {
    expect(API_ERROR_STATUS[code]).toBe(status);
  });
});

describe('agentApiErrorFromResponse', () => {
  it('keeps code, message, field and checks of an API error body', () => {
    const err = agentApiErrorFromResponse(400, apiErrorBody('bad-request', 'volume: Required', { field: 'volume' }));
    expect(isAgentApiError(err)).toBe(true);
    expect({ status: err.status, code: err.code, message: err.message, field: err.field, checks: err.checks }).toEqual({
      status: 400,
      code: 'bad-request',
      message: 'volume: Required',
      field: 'volume',
      checks: [],
    });
  });

  it('falls back to the status for a body that is not the API error shape', () => {
    const err = agentApiErrorFromResponse(502, '<html>Bad Gateway</html>');
    expect([err.status, err.code, err.message, err.field]).toEqual([502, null, 'HTTP 502', null]);
  });
});
