import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KUBELET_CAUSE_SEPARATOR, errorCause } from './error-cause.ts';

describe('errorCause', () => {
  it('takes the text after the last " : " of a kubelet detailed error', () => {
    const message =
      'MountVolume.MountDevice failed for volume "pv-1" (UniqueName: "kubernetes.io/csi/loop.csi^vol-1") pod "web-0" (UID: "a") : rpc error: code = Internal desc = mkfs : exit status 1';

    expect(errorCause(message)).toEqual({ cause: 'exit status 1', message, truncated: true });
  });

  it('keeps ": " without the leading space inside the cause', () => {
    expect(errorCause('SetUp failed for volume "x" : mount failed: exit status 32').cause).toBe('mount failed: exit status 32');
  });

  it('is the message itself when it ends with the separator', () => {
    expect(errorCause('SetUp failed for volume "x" : ')).toEqual({ cause: 'SetUp failed for volume "x" : ', message: 'SetUp failed for volume "x" : ', truncated: false });
  });

  it('property: the cause is a non-empty suffix of a non-empty message without the separator in it', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.constant(KUBELET_CAUSE_SEPARATOR), fc.constant(' :'), fc.constant(': '))).map((parts) => parts.join('')), (message) => {
        const { cause, truncated } = errorCause(message);
        expect(message.endsWith(cause)).toBe(true);
        expect(truncated).toBe(cause.length < message.length);
        if (message !== '') expect(cause).not.toBe('');
        if (truncated) expect(message.slice(0, message.length - cause.length).endsWith(KUBELET_CAUSE_SEPARATOR)).toBe(true);
        if (truncated) expect(cause.includes(KUBELET_CAUSE_SEPARATOR)).toBe(false);
      }),
    );
  });

  it('property: a message without " : " is its own cause', () => {
    fc.assert(
      fc.property(fc.string().filter((s) => !s.includes(KUBELET_CAUSE_SEPARATOR)), (message) => {
        expect(errorCause(message)).toEqual({ cause: message, message, truncated: false });
      }),
    );
  });
});
