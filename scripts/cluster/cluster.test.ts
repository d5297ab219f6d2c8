import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stateDirFor } from './cluster.ts';

// The longest socket below a state dir is `<state>/nodes/kubelet-0/plugins_registry/csi-loop.volumescope.dev-reg.sock`:
// 67 bytes after the state dir, and a unix socket path takes at most 107.
const SUFFIX_BYTES = '/nodes/kubelet-0/plugins_registry/csi-loop.volumescope.dev-reg.sock'.length;

describe('stateDirFor', () => {
  it('keeps a dir whose longest socket fits in 107 bytes, the last one that does included', () => {
    const fits = `/${'a'.repeat(107 - SUFFIX_BYTES - 1)}`;
    expect(fits.length + SUFFIX_BYTES).toBe(107);
    expect(stateDirFor(fits, 'cluster')).toEqual({ dir: fits, moved: false, note: undefined });
  });

  it('moves a dir one byte too deep to a short, stable dir in the temp directory named after it', () => {
    const deep = `/${'a'.repeat(107 - SUFFIX_BYTES)}`;
    const moved = stateDirFor(deep, 'cluster-test');
    expect(moved.moved).toBe(true);
    expect(moved.dir).toMatch(new RegExp(`^${join(tmpdir(), 'vs-cluster-test-')}[0-9a-f]{8}$`));
    expect(stateDirFor(deep, 'cluster-test')).toEqual(moved);
    expect(stateDirFor(`${deep}b`, 'cluster-test').dir).not.toBe(moved.dir);
    expect(Buffer.byteLength(moved.dir) + SUFFIX_BYTES).toBeLessThanOrEqual(107);
    expect(moved.note).toBe(`state in ${moved.dir} (the checkout is too deep for the cluster's unix sockets below ${deep})`);
  });

  it('counts bytes, not characters: a multi-byte name that looks short enough is moved', () => {
    const chars = 107 - SUFFIX_BYTES - 1;
    const wide = `/${'é'.repeat(chars)}`;
    expect(wide.length + SUFFIX_BYTES).toBe(107);
    expect(stateDirFor(wide, 'cluster').moved).toBe(true);
  });
});
