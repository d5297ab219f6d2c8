import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { AgentApiError } from '../../lib/api/index.ts';
import { AgentUnavailableError } from '../../lib/dashboard/dashboard-error.ts';
import { ActionError } from './action-error.tsx';

const checks = [
  { name: 'not-desired', ok: true, detail: 'the pod is not in the desired world' },
  { name: 'no-open-files', ok: false, detail: '2 processes hold files below the mount' },
];

function render(error: Error, groupChecks = false): string {
  return renderToStaticMarkup(createElement(ActionError, { error, failedHeading: 'The action failed', refusedHeading: 'The agent refused (409)', groupChecks }));
}

describe('ActionError', () => {
  it.each([
    { name: 'a refusal gets the refused heading and the agent’s message', error: new AgentApiError(409, 'conflict', 'a check failed', null, checks), heading: 'The agent refused (409):' },
    { name: 'another agent answer names its status and code', error: new AgentApiError(503, 'not-ready', 'states not synced'), heading: 'The agent answered 503 not-ready:' },
    { name: 'an answer that is not the API’s error shape names its status only', error: new AgentApiError(502, null, 'HTTP 502'), heading: 'The agent answered 502:' },
    { name: 'an agent the dashboard cannot reach says so', error: new AgentUnavailableError('agent-unreachable', 'node-a', 'connect ECONNREFUSED'), heading: 'The dashboard could not reach the agent:' },
    { name: 'any other failure gets the failed heading', error: new Error('network down'), heading: 'The action failed:' },
  ])('$name', ({ error, heading }) => {
    const html = render(error);
    expect(html).toContain('role="alert"');
    expect(html).toContain(`<strong>${heading}</strong> ${error.message}`);
  });

  it('lists a refusal’s checks in the agent’s order', () => {
    const html = render(new AgentApiError(409, 'conflict', 'a check failed', null, checks));
    expect(html.indexOf('not-desired')).toBeLessThan(html.indexOf('no-open-files'));
    expect(html).not.toContain('<details>');
  });

  it('grouped, lists the failed checks first and the passed ones behind a disclosure', () => {
    const html = render(new AgentApiError(409, 'conflict', 'a check failed', null, checks), true);
    expect(html).toContain('Failed checks (1):');
    expect(html.indexOf('no-open-files')).toBeLessThan(html.indexOf('<details>'));
    expect(html.indexOf('<details>')).toBeLessThan(html.indexOf('not-desired'));
    expect(html).toContain('<summary>Passed checks (1)</summary>');
  });
});
