import { describe, expect, it } from 'vitest';
import { reconstructionNote } from './reconstruction-view.ts';

describe('reconstructionNote', () => {
  const reason = 'data: error processing PVC default/claim: failed to fetch PVC from API server: etcdserver: request timed out';

  it('says that a reconstructed volume is kept mounted, with the agent’s reason verbatim', () => {
    const note = reconstructionNote({ outcome: 'reconstructed', keptBecause: reason });

    expect(note).toMatchObject({ tone: 'uncertain', label: 'kept mounted (uncertain)' });
    expect(note?.detail).toContain('the pod is still listed but its volumes could not be resolved');
    expect(note?.detail.endsWith(reason)).toBe(true);
  });

  it('also explains a failed reconstruction that is kept (not cleaned up)', () => {
    expect(reconstructionNote({ outcome: 'failed', keptBecause: reason })?.label).toBe('kept mounted (uncertain)');
  });

  it.each([
    { name: 'no reason (an older agent, or nothing kept)', volume: { outcome: 'reconstructed' as const } },
    { name: 'an empty reason', volume: { outcome: 'reconstructed' as const, keptBecause: '' } },
    { name: 'a confirmed mount', volume: { outcome: 'confirmed-mounted' as const, keptBecause: reason } },
    { name: 'a cleaned-up volume', volume: { outcome: 'cleaned-up' as const, keptBecause: reason } },
  ])('adds nothing for $name', ({ volume }) => {
    expect(reconstructionNote(volume)).toBeNull();
  });
});
