import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SerialSteps } from './serial-steps.ts';

describe('SerialSteps', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a step due while another runs only after it, and goes on after a failing step', async () => {
    const errors: unknown[] = [];
    const log: string[] = [];
    const steps = new SerialSteps((err) => errors.push(err));
    let release: () => void = () => undefined;
    steps.after(10, async () => {
      log.push('slow start');
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      log.push('slow end');
    });
    steps.after(20, () => Promise.reject(new Error('boom')));
    steps.after(30, () => {
      log.push('last');
      return Promise.resolve();
    });
    await vi.advanceTimersByTimeAsync(50);
    expect(log).toEqual(['slow start']);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual(['slow start', 'slow end', 'last']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom']);
  });

  it('every: first after firstMs, then every periodMs', async () => {
    const at: number[] = [];
    const steps = new SerialSteps(() => undefined);
    const t0 = Date.now();
    steps.every(100, 5, () => {
      at.push(Date.now() - t0);
      return Promise.resolve();
    });
    await vi.advanceTimersByTimeAsync(310);
    expect(at).toEqual([5, 105, 205, 305]);
  });

  it('stop cancels the steps not yet due and waits for the one in flight', async () => {
    const log: string[] = [];
    const steps = new SerialSteps(() => undefined);
    let release: () => void = () => undefined;
    steps.after(10, async () => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      log.push('in flight done');
    });
    steps.after(1000, () => {
      log.push('never');
      return Promise.resolve();
    });
    await vi.advanceTimersByTimeAsync(10);
    let stopped = false;
    const stopping = steps.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    release();
    await stopping;
    steps.after(1, () => {
      log.push('after stop');
      return Promise.resolve();
    });
    await vi.advanceTimersByTimeAsync(2000);
    expect(log).toEqual(['in flight done']);
  });
});
