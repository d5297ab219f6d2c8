import { describe, expect, it } from 'vitest';
import type { RecentEvent } from '../api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { auditTargetText, createPodNamesSelector, podNamesOf, podRefText, podShortText } from './pod-refs.ts';

const example = exampleSnapshot();
const GONE = '0d4f8e7a-1b2c-4d3e-8f9a-0b1c2d3e4f50';
const event = (overrides: Partial<RecentEvent>): RecentEvent => ({ time: FIXTURE_T0, type: 'Warning', reason: 'FailedMount', podUid: GONE, message: 'm', ...overrides });

describe('podNamesOf', () => {
  it('names desired pods namespace/name', () => {
    const names = podNamesOf(example.desired.pods, []);
    expect(names.get('5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10')).toBe('default/web-0');
  });

  it('names a pod that is gone by its events, the latest event winning', () => {
    const names = podNamesOf(example.desired.pods, [event({ podNamespace: 'shop', podName: 'cart-1' }), event({ podNamespace: 'shop', podName: 'cart-2' })]);
    expect(names.get(GONE)).toBe('shop/cart-2');
  });

  it('prefers the desired pod over its events, and invents nothing for events without a name', () => {
    const dbUid = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
    const names = podNamesOf(example.desired.pods, [event({ podUid: dbUid, podNamespace: 'old', podName: 'renamed' }), event({})]);
    expect(names.get(dbUid)).toBe('default/db-0');
    expect(names.has(GONE)).toBe(false);
  });
});

describe('createPodNamesSelector', () => {
  const snapshot = exampleSnapshot();
  const pod = snapshot.desired.pods[0];
  const about = (podUid: string, podName: string): RecentEvent => ({ time: FIXTURE_T0, type: 'Normal', reason: 'Pulled', podUid, podNamespace: 'default', podName, message: 'm' });

  it('keeps the same map while an event names no new pod', () => {
    const select = createPodNamesSelector();
    const first = select(snapshot.desired.pods, snapshot.recentEvents);
    const again = select(snapshot.desired.pods, [...snapshot.recentEvents, about(pod?.uid ?? '', pod?.name ?? '')]);
    expect(again).toBe(first);
  });

  it('gives a new map when a gone pod gets a name', () => {
    const select = createPodNamesSelector();
    const first = select(snapshot.desired.pods, snapshot.recentEvents);
    const next = select(snapshot.desired.pods, [...snapshot.recentEvents, about('gone-uid', 'old')]);
    expect(next).not.toBe(first);
    expect(next.get('gone-uid')).toBe('default/old');
  });
});

describe('podRefText / podShortText', () => {
  const names = new Map([[GONE, 'shop/cart-2']]);
  it('puts the name first and the UID second, or the UID alone', () => {
    expect(podRefText(GONE, names)).toBe(`shop/cart-2 (uid ${GONE})`);
    expect(podRefText('other', names)).toBe('uid other');
    expect(podShortText(GONE, names)).toBe('shop/cart-2');
    expect(podShortText('other', names)).toBe('other');
  });
});

describe('auditTargetText', () => {
  const names = new Map([[GONE, 'shop/cart-2']]);
  it.each([
    { target: `${GONE}/kubernetes.io/csi/d^vol-1`, text: `shop/cart-2 (uid ${GONE}): kubernetes.io/csi/d^vol-1` },
    { target: GONE, text: `shop/cart-2 (uid ${GONE})` },
    { target: 'kubernetes.io/csi/d^vol-1', text: 'kubernetes.io/csi/d^vol-1' },
    { target: 'other-uid/vol', text: 'other-uid/vol' },
  ])('$target → $text', ({ target, text }) => {
    expect(auditTargetText(target, names)).toBe(text);
  });
});
