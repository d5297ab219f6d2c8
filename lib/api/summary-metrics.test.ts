import { describe, expect, it } from 'vitest';
import { SUMMARY_FIELDS, summaryFromSeries, summarySeries } from './summary-metrics.ts';
import { exampleSnapshot } from './testing/snapshot-fixtures.ts';
import { summarizeSnapshot, type AgentSummary } from './summary.ts';

const managed = summarizeSnapshot(exampleSnapshot());
const observe: AgentSummary = {
  ...managed,
  mode: 'observe',
  reconstruction: { ...managed.reconstruction, state: 'pending', startedAt: null, finishedAt: null },
  observe: { orphans: 3, attachErrors: 1, outstanding: 7, failing: 2 },
};

describe('summarySeries / summaryFromSeries', () => {
  it('round-trips a managed summary and an observe one (null times and the observe section included)', () => {
    expect(summaryFromSeries(summarySeries(managed))).toEqual(managed);
    expect(summaryFromSeries(summarySeries(observe))).toEqual(observe);
    const idle: AgentSummary = { ...observe, observe: { orphans: 0, attachErrors: 0, outstanding: 0, failing: 0 } };
    expect([...summarySeries(idle).values.keys()].filter((f) => f.startsWith('observe.'))).toEqual([]);
    expect(summaryFromSeries(summarySeries(idle))).toEqual(idle);
  });

  it('exports one value per known field, booleans as 0/1 and the non-numeric fields as info labels', () => {
    const s = summarySeries(managed);
    for (const field of s.values.keys()) expect(SUMMARY_FIELDS).toContain(field);
    expect(s.values.get('statesSynced')).toBe(1);
    expect(s.values.get('counts.pending')).toBe(managed.counts.pending);
    expect(managed.counts.running).toBe(0);
    expect(s.values.has('counts.running')).toBe(false); // a count of 0 has no series
    expect(s.values.has('observe.orphans')).toBe(false);
    expect(s.info).toEqual({ mode: 'managed', agent_version: managed.agent.version, mounter_kind: 'linux', reconstruction_state: 'done' });
  });

  it('gives null when an always-present field is missing, a count is not one, or a label is not a known value', () => {
    const s = summarySeries(managed);
    const values = new Map(s.values);
    values.delete('seq');
    expect(summaryFromSeries({ ...s, values })).toBeNull();
    expect(summaryFromSeries({ ...s, values: new Map([...s.values, ['counts.mounted', -1]]) })).toBeNull();
    expect(summaryFromSeries({ ...s, info: { ...s.info, mode: 'other' } })).toBeNull();
    expect(summaryFromSeries({ ...s, values: new Map([...s.values, ['counts.pods', 1.5]]) })).toBeNull();
  });
});
