import { describe, expect, it } from 'vitest';
import { focusReturnTarget, type FocusOpener, type FocusTarget } from './focus-return.ts';

interface Element extends FocusTarget {
  readonly name: string;
  readonly key: string | null;
  readonly parent: Element | null;
}

const element = (name: string, isConnected: boolean, key: string | null = null, parent: Element | null = null): Element => ({ name, isConnected, key, parent, focus: () => undefined });

/** A lookup over a fixed list of elements, as `querySelector` inside a container would answer. */
function lookup(elements: readonly Element[]): (key: string, within: Element | null) => Element | null {
  const inside = (e: Element, within: Element): boolean => e.parent !== null && (e.parent === within || inside(e.parent, within));
  return (key, within) => elements.find((e) => e.isConnected && e.key === key && (within === null || inside(e, within))) ?? null;
}

const retryKey = 'Retry now: mount volume logs for pod e2e/stuck-0';

describe('focusReturnTarget', () => {
  const main = element('main', true);
  const section = element('#volumes', true, null, main);
  const card = element('card logs', true, null, section);

  it('returns focus to the trigger while it is in the document', () => {
    const trigger = element('Retry now', true, retryKey, card);
    const opener: FocusOpener<Element> = { trigger, key: retryKey, containers: [card, section, main] };
    expect(focusReturnTarget(opener, lookup([trigger]))).toBe(trigger);
  });

  it('returns focus to the re-rendered trigger (same focus key) when the retry replaced the button', () => {
    const detached = element('Retry now', false, retryKey, card);
    const rerendered = element('Retry now', true, retryKey, card);
    const opener: FocusOpener<Element> = { trigger: detached, key: retryKey, containers: [card, section, main] };
    expect(focusReturnTarget(opener, lookup([detached, rerendered]))).toBe(rerendered);
  });

  it('prefers the re-rendered trigger inside the same card over a namesake elsewhere on the page', () => {
    const otherSection = element('#operations', true, null, main);
    const inTable = element('Retry now (table)', true, retryKey, otherSection);
    const inCard = element('Retry now (card)', true, retryKey, card);
    const opener: FocusOpener<Element> = { trigger: element('Retry now', false, retryKey, card), key: retryKey, containers: [card, section, main] };
    expect(focusReturnTarget(opener, lookup([inTable, inCard]))).toBe(inCard);
  });

  it('finds the namesake elsewhere when no container of the trigger is left', () => {
    const inTable = element('Retry now (table)', true, retryKey, section);
    const goneCard = element('card logs', false);
    const opener: FocusOpener<Element> = { trigger: element('Retry now', false, retryKey, goneCard), key: retryKey, containers: [goneCard] };
    expect(focusReturnTarget(opener, lookup([inTable]))).toBe(inTable);
  });

  it('falls back to the nearest container still in the document when the action removed the trigger', () => {
    const goneCard = element('card logs', false, null, section);
    const opener: FocusOpener<Element> = { trigger: element('Unmount', false, 'Unmount volume logs', goneCard), key: 'Unmount volume logs', containers: [goneCard, section, main] };
    expect(focusReturnTarget(opener, lookup([]))).toBe(section);
  });

  it('leaves focus alone when nothing is in the document, or nothing was focused', () => {
    const gone = element('#operations', false);
    expect(focusReturnTarget({ trigger: element('Retry now', false), key: null, containers: [gone] }, lookup([]))).toBeNull();
    expect(focusReturnTarget({ trigger: null, key: null, containers: [] }, lookup([]))).toBeNull();
  });
});
