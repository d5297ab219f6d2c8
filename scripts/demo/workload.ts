/**
 * The demo workload of `npm start`: manifest files written into the agents' manifest directories
 * over time, so the dashboard has something to show.
 *
 * Timeline (from the moment the workload starts; see {@link DEMO_TIMELINE}):
 * - both nodes get a ConfigMap, a Secret, the CSIDriver object of the test driver and a bound CSI
 *   PV+PVC pair (a disk of their own at the driver);
 * - node A runs `web-0` (emptyDir, configMap, secret) and `db-0` (the CSI claim, a memory
 *   emptyDir), and a new `worker-<n>` pod every 20 s that is deleted 50 s later;
 * - node B runs `api-0`, `log-shipper-0` whose hostPath directory (type Directory) does not exist,
 *   so its mount fails into exponential backoff until the directory appears after 60 s, and
 *   `reports-<n>` pods on its CSI claim, each up for 60 s with 15 s gaps;
 * - at 2 min node B's agent is restarted (SIGTERM, then started again), so its node page shows a
 *   reconstruction report of the volumes it found mounted.
 *
 * Every step runs on a timer; a failing step is reported and the workload goes on.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { configMap, csiClaim, csiDriverObject, pod, podFileName, removeManifest, secret, writeManifest, type VolumeSource } from './manifests.ts';
import { findLeftoverMounts } from './mount-check.ts';
import { SerialSteps } from './serial-steps.ts';
import type { AgentHandle, Stack } from './stack.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

export const DEMO_NAMESPACE = 'demo';

export const DEMO_TIMELINE = {
  workerEveryMs: 20_000,
  workerLifetimeMs: 50_000,
  // Up 60 s, down 15 s from 0:03: reports-2 is mounted when node B restarts at 2:00, so the
  // reconstruction report includes a CSI volume.
  reportsUpMs: 60_000,
  reportsDownMs: 15_000,
  hostPathAppearsAfterMs: 60_000,
  restartAfterMs: 120_000,
} as const;

export interface DemoWorkloadOptions {
  stack: Stack;
  /** The node with web-0, db-0 and the workers. */
  nodeA: string;
  /** The node with api-0, log-shipper-0 and reports; restarted at 2 min. */
  nodeB: string;
  /** Parent of log-shipper-0's hostPath directory (`<hostDataDir>/logs`). */
  hostDataDir: string;
  say: (message: string) => void;
}

const sharedVolumes: Record<string, VolumeSource> = {
  config: { configMap: { name: 'app-config' } },
  tls: { secret: { secretName: 'app-tls' } },
};

export class DemoWorkload {
  private readonly started = performance.now();
  private workers = 0;
  private reports = 0;
  /** The timed steps; stop() waits for the one running (an agent restart takes seconds). */
  private readonly steps: SerialSteps;

  constructor(private readonly o: DemoWorkloadOptions) {
    this.steps = new SerialSteps((err) => {
      this.o.say(`demo workload step failed: ${errorMessage(err)}`);
    });
  }

  get hostPathDir(): string {
    return join(this.o.hostDataDir, 'logs');
  }

  /** Writes the objects and the first pods, then arms the timers. */
  async start(): Promise<void> {
    await this.resetHostPath();
    const ns = DEMO_NAMESPACE;
    for (const agent of [this.agent(this.o.nodeA), this.agent(this.o.nodeB)]) {
      const dir = agent.dirs.manifestDir;
      await writeManifest(dir, 'app-config.yaml', configMap(ns, 'app-config', { 'app.properties': 'mode=demo\nreplicas=2\n', 'feature-flags': 'dashboards=on\n' }));
      await writeManifest(dir, 'app-tls.yaml', secret(ns, 'app-tls', { 'tls.crt': '-----BEGIN CERTIFICATE-----\n(demo)\n-----END CERTIFICATE-----\n', 'tls.key': '(demo key)\n' }));
      await writeManifest(dir, 'csidriver.yaml', csiDriverObject());
    }
    const a = this.agent(this.o.nodeA).dirs.manifestDir;
    const b = this.agent(this.o.nodeB).dirs.manifestDir;
    await writeManifest(a, 'claim-pgdata.yaml', csiClaim({ namespace: ns, claim: 'pgdata', volumeHandle: `${this.o.nodeA}-pgdata`, claimUid: randomUUID(), capacity: '64Mi' }));
    await writeManifest(b, 'claim-reports.yaml', csiClaim({ namespace: ns, claim: 'reports', volumeHandle: `${this.o.nodeB}-reports`, claimUid: randomUUID(), capacity: '32Mi' }));

    await this.createPod(a, 'web-0', { cache: { emptyDir: {} }, ...sharedVolumes });
    await this.createPod(a, 'db-0', { pgdata: { persistentVolumeClaim: { claimName: 'pgdata' } }, shm: { emptyDir: { medium: 'Memory' } }, config: sharedVolumes['config'] ?? {} });
    await this.createPod(b, 'api-0', { scratch: { emptyDir: {} }, ...sharedVolumes });
    await this.createPod(b, 'log-shipper-0', { logs: { hostPath: { path: this.hostPathDir, type: 'Directory' } }, config: sharedVolumes['config'] ?? {} });
    this.o.say(`log-shipper-0 on ${this.o.nodeB} waits for ${this.hostPathDir}: its mount backs off until the directory appears in ${DEMO_TIMELINE.hostPathAppearsAfterMs / 1000} s`);

    this.every(DEMO_TIMELINE.workerEveryMs, 2_000, () => this.newWorker());
    this.reportsCycle(3_000);
    this.after(DEMO_TIMELINE.hostPathAppearsAfterMs, async () => {
      await mkdir(this.hostPathDir, { recursive: true });
      this.o.say(`created ${this.hostPathDir}: log-shipper-0 mounts at its next retry`);
    });
    this.after(DEMO_TIMELINE.restartAfterMs, async () => {
      this.o.say(`restarting agent ${this.o.nodeB} (SIGTERM, then start): its node page will show a reconstruction report`);
      await this.agent(this.o.nodeB).restart();
      this.o.say(`agent ${this.o.nodeB} is back`);
    });
  }

  /** Cancels every timer and waits for the step in flight. The pods stay (teardown removes them). */
  async stop(): Promise<void> {
    await this.steps.stop();
  }

  private agent(name: string): AgentHandle {
    return this.o.stack.agent(name);
  }

  /** The hostPath directory must be missing at the start, or there is no backoff to show. */
  private async resetHostPath(): Promise<void> {
    if ((await findLeftoverMounts(this.o.hostDataDir, [])).length > 0) {
      throw new Error(`${this.o.hostDataDir} has something mounted below it; run npm run demo:reset after checking the mounts`);
    }
    await rm(this.o.hostDataDir, { recursive: true, force: true });
    await mkdir(this.o.hostDataDir, { recursive: true });
  }

  private async createPod(dir: string, name: string, volumes: Record<string, VolumeSource>): Promise<void> {
    await writeManifest(dir, podFileName(DEMO_NAMESPACE, name), pod({ name, namespace: DEMO_NAMESPACE, uid: randomUUID(), volumes }));
  }

  private async deletePod(dir: string, name: string): Promise<void> {
    await removeManifest(dir, podFileName(DEMO_NAMESPACE, name));
  }

  private async newWorker(): Promise<void> {
    const dir = this.agent(this.o.nodeA).dirs.manifestDir;
    const name = `worker-${++this.workers}`;
    await this.createPod(dir, name, { scratch: { emptyDir: {} }, ...sharedVolumes });
    this.after(DEMO_TIMELINE.workerLifetimeMs, () => this.deletePod(dir, name));
  }

  private reportsCycle(delayMs: number): void {
    this.after(delayMs, async () => {
      const dir = this.agent(this.o.nodeB).dirs.manifestDir;
      const name = `reports-${++this.reports}`;
      await this.createPod(dir, name, { reports: { persistentVolumeClaim: { claimName: 'reports' } }, tmp: { emptyDir: {} } });
      this.after(DEMO_TIMELINE.reportsUpMs, async () => {
        await this.deletePod(dir, name);
        this.reportsCycle(DEMO_TIMELINE.reportsDownMs);
      });
    });
  }

  private after(ms: number, step: () => Promise<void>): void {
    this.steps.after(ms, step);
  }

  private every(periodMs: number, firstMs: number, step: () => Promise<void>): void {
    this.steps.every(periodMs, firstMs, step);
  }

  /** Seconds since the workload started, as `m:ss`. */
  elapsed(): string {
    const s = Math.floor((performance.now() - this.started) / 1000);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }
}
