import { describe, expect, it } from 'vitest';
import { focusReturnTarget, type FocusTarget } from './focus-return.ts';

const element = (name: string, isConnected: boolean): FocusTarget & { name: string } => ({ name, isConnected, focus: () => undefined });

describe('focusReturnTarget', () => {
  it('returns focus to the trigger while it is in the document', () => {
    const trigger = element('Retry now', true);
    expect(focusReturnTarget(trigger, element('#operations', true))).toBe(trigger);
  });

  it('falls back to the section the trigger was in when the action removed the trigger', () => {
    const section = element('#operations', true);
    expect(focusReturnTarget(element('Retry now', false), section)).toBe(section);
  });

  it('leaves focus alone when neither is in the document, or nothing was focused', () => {
    expect(focusReturnTarget(element('Retry now', false), element('#operations', false))).toBeNull();
    expect(focusReturnTarget(null, null)).toBeNull();
  });
});
