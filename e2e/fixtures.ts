/**
 * The e2e tests' `test` and helpers.
 *
 * - `baseURL` is the dashboard the global setup started (its port is chosen at run time).
 * - `tokenGuard` (automatic, every test): the browser never receives an agent token, nor a
 *   user's token a test registered with {@link guardToken} (login tests). Every
 *   response of every page and frame in the test's context is checked, headers and body, for each
 *   agent's token. Bodies come from Playwright; the never-ending `text/event-stream` bodies (the
 *   live agent streams relayed by the dashboard) are captured through the DevTools protocol
 *   (`Network.streamResourceContent`) on the page and on every out-of-process frame, and the guard
 *   fails when a stream was seen that it could not read, so a check can never silently cover less.
 * - Helpers to drive the real agents through their manifest directories, read their state through
 *   their API (with the token, from the test process; never through the browser), inject faults
 *   into the CSI test driver and restart an agent.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base, expect, type BrowserContext, type CDPSession, type Frame, type Page, type Response } from '@playwright/test';
import { readFile, rm } from 'node:fs/promises';
import { type Operation, type Snapshot } from '../lib/api/snapshot.ts';
import { parseSnapshot } from '../lib/api/compact-snapshot.ts';
import { csiClaim, pod, podFileName, removeManifest, writeManifest, type VolumeSource } from '../scripts/demo/manifests.ts';
import { E2E_NAMESPACE, nodeInfo, stackInfo, type E2eNodeName } from './stack-info.ts';

export { expect };

const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));

// TOKEN GUARD

interface CapturedStream {
  url: string;
  text: string;
}

/**
 * Records every response of a browser context for the token check: Playwright responses (headers
 * and, except for event streams, bodies) and, through CDP, the event streams' data.
 */
class ResponseRecorder {
  readonly pending: Promise<void>[] = [];
  readonly bodies: { url: string; text: string }[] = [];
  readonly eventStreamUrls: string[] = [];
  readonly streams: CapturedStream[] = [];
  private readonly sessions: CDPSession[] = [];
  private readonly attachedFrames = new WeakSet<Frame>();

  constructor(private readonly context: BrowserContext) {
    context.on('response', (response) => {
      this.pending.push(this.record(response));
    });
  }

  private async record(response: Response): Promise<void> {
    const headers = await response.allHeaders().catch(() => ({}));
    const url = response.url();
    this.bodies.push({ url: `${url} (headers)`, text: JSON.stringify(headers) });
    const type = (headers as Record<string, string>)['content-type'] ?? '';
    if (type.includes('text/event-stream')) {
      this.eventStreamUrls.push(url);
      return;
    }
    // Redirects and aborted requests have no body; everything else is read whole.
    const body = await response.body().catch(() => null);
    if (body !== null) this.bodies.push({ url, text: body.toString('latin1') });
  }

  /** Captures the event streams of `target` (a page, or an out-of-process frame). */
  async attach(target: Page | Frame): Promise<void> {
    let session: CDPSession;
    try {
      session = await this.context.newCDPSession(target);
    } catch {
      return; // an in-process frame: its requests show up in its page's session
    }
    this.sessions.push(session);
    const streams = new Map<string, CapturedStream>();
    session.on('Network.responseReceived', (e) => {
      if (!e.response.mimeType.includes('event-stream')) return;
      const captured: CapturedStream = { url: e.response.url, text: '' };
      streams.set(e.requestId, captured);
      this.streams.push(captured);
      this.pending.push(
        session.send('Network.streamResourceContent', { requestId: e.requestId }).then(
          (r) => {
            captured.text = Buffer.from(r.bufferedData, 'base64').toString('latin1') + captured.text;
          },
          () => undefined, // finished before the call: Playwright read its body as a normal response
        ),
      );
    });
    session.on('Network.dataReceived', (e) => {
      const captured = streams.get(e.requestId);
      if (captured !== undefined && e.data !== undefined) captured.text += Buffer.from(e.data, 'base64').toString('latin1');
    });
    await session.send('Network.enable');
  }

  /** Attaches to out-of-process frames as they navigate (cross-origin iframes). */
  watchFrames(page: Page): void {
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame() || this.attachedFrames.has(frame)) return;
      this.attachedFrames.add(frame);
      this.pending.push(this.attach(frame));
    });
  }

  async detach(): Promise<void> {
    for (const s of this.sessions) await s.detach().catch(() => undefined);
  }
}

async function agentTokens(): Promise<{ node: string; token: string }[]> {
  const info = stackInfo();
  return Promise.all([...info.nodes, info.observer].map(async (n) => ({ node: n.name, token: (await readFile(n.tokenFile, 'utf8')).trim() })));
}

/** Users' tokens the test handed to the dashboard (login tests): guarded like the agents' tokens. */
const guardedSecrets: { node: string; token: string }[] = [];

/**
 * Adds a token the browser must never receive (a user's bearer token, an OIDC ID or access
 * token) to the current test's token guard; `what` names it in a failure.
 */
export function guardToken(what: string, token: string): void {
  if (token.length < 16) throw new Error(`guardToken(${what}): too short to be a token`);
  guardedSecrets.push({ node: what, token });
}

export const test = base.extend<{ tokenGuard: undefined }>({
  // Playwright reads the fixtures a function needs from its parameter's destructuring pattern;
  // this one needs none, and `{}` is how Playwright spells that.
  // eslint-disable-next-line no-empty-pattern
  baseURL: async ({}, use) => {
    await use(stackInfo().dashboardUrl);
  },
  tokenGuard: [
    async ({ context, page }, use) => {
      const recorder = new ResponseRecorder(context);
      await recorder.attach(page);
      recorder.watchFrames(page);
      context.on('page', (p) => {
        recorder.pending.push(recorder.attach(p));
        recorder.watchFrames(p);
      });

      await use(undefined);

      // Everything recorded so far (open streams are read up to now), then close and check.
      for (let settled = 0; settled < recorder.pending.length; ) {
        const batch = recorder.pending.slice(settled);
        settled = recorder.pending.length;
        await Promise.all(batch);
      }
      await recorder.detach();
      const tokens = [...(await agentTokens()), ...guardedSecrets.splice(0)];
      const leaks: string[] = [];
      for (const { url, text } of [...recorder.bodies, ...recorder.streams]) {
        for (const { node, token } of tokens) if (text.includes(token)) leaks.push(`${node}'s token in ${url}`);
      }
      expect(leaks, 'agent tokens must never reach the browser').toEqual([]);
      // Every event stream Playwright saw was read through CDP (a stream may also have ended early
      // and then been read as a plain body; it is then in `bodies` and counted here too).
      const unread = recorder.eventStreamUrls.filter((u) => !recorder.streams.some((s) => s.url === u));
      expect(unread, 'event streams the token check could not read').toEqual([]);
      expect(recorder.bodies.length, 'the token check saw the responses').toBeGreaterThan(0);
    },
    { auto: true },
  ],
});

// AGENTS

/** GET /api/v1/snapshot of a node's agent, with its token (from the test process). */
export async function snapshot(node: E2eNodeName): Promise<Snapshot> {
  const info = nodeInfo(node);
  const token = (await readFile(info.tokenFile, 'utf8')).trim();
  const res = await fetch(`${info.url}/api/v1/snapshot`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`GET ${info.url}/api/v1/snapshot: ${res.status}`);
  return parseSnapshot(await res.json());
}

/**
 * Polls the node's snapshot until `probe` returns a value (not undefined/false) and returns it;
 * fails the test after `timeout` ms with `what`.
 */
export async function waitForAgent<T>(node: E2eNodeName, what: string, probe: (s: Snapshot) => T | undefined | false, timeout = 30_000): Promise<T> {
  let found: T | undefined;
  await expect
    .poll(
      async () => {
        const value = probe(await snapshot(node));
        if (value === undefined || value === false) return false;
        found = value;
        return true;
      },
      { message: `${node}: ${what}`, timeout, intervals: [100, 200, 250] },
    )
    .toBe(true);
  return found as T;
}

/** The pod's mount states by outer volume name. */
export function podMounts(s: Snapshot, uid: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of s.actual.volumes) for (const m of v.pods) if (m.podUid === uid) out.set(m.outerVolumeName, m.mountState);
  return out;
}

// MANIFESTS

export interface TestPod {
  node: E2eNodeName;
  name: string;
  uid: string;
  volumes: Record<string, VolumeSource>;
}

/** A pod for this test run: a fresh uid, the e2e namespace. */
export function newPod(node: E2eNodeName, name: string, volumes: Record<string, VolumeSource>): TestPod {
  return { node, name, uid: randomUUID(), volumes };
}

export async function writePod(p: TestPod): Promise<void> {
  await writeManifest(nodeInfo(p.node).manifestDir, podFileName(E2E_NAMESPACE, p.name), pod({ name: p.name, namespace: E2E_NAMESPACE, uid: p.uid, volumes: p.volumes }));
}

export async function deletePod(p: TestPod): Promise<void> {
  await removeManifest(nodeInfo(p.node).manifestDir, podFileName(E2E_NAMESPACE, p.name));
}

/** A pod stuck on a hostPath volume whose directory does not exist, and how to find its mount. */
export interface StuckHostPathPod {
  readonly pod: TestPod;
  /** The missing directory (create it to let the mount succeed). */
  readonly hostDir: string;
  /** The pod's `volume_mount` operation of the volume. */
  readonly isMount: (op: Operation) => boolean;
}

/**
 * Writes a pod whose volume `logs` is a hostPath of type Directory under the stack's
 * `host-data/<dirName>`, removed first: its mount fails ("is not a directory") and goes into
 * exponential backoff until the directory appears.
 */
export async function writeStuckHostPathPod(node: E2eNodeName, name: string, dirName: string): Promise<StuckHostPathPod> {
  const hostDir = join(stackInfo().baseDir, 'host-data', dirName);
  await rm(hostDir, { recursive: true, force: true });
  const pod = newPod(node, name, { logs: { hostPath: { path: hostDir, type: 'Directory' } } });
  await writePod(pod);
  return { pod, hostDir, isMount: (op) => op.operationName === 'volume_mount' && op.podUid === pod.uid };
}

/** A bound CSI claim `claim` on the node, backed by a disk `<node>-<claim>` at the test driver. */
export async function writeClaim(node: E2eNodeName, claim: string): Promise<string> {
  const volumeHandle = `${node}-${claim}-${randomUUID().slice(0, 8)}`;
  await writeManifest(nodeInfo(node).manifestDir, `claim-${claim}.yaml`, csiClaim({ namespace: E2E_NAMESPACE, claim, volumeHandle, claimUid: randomUUID(), capacity: '16Mi' }));
  return volumeHandle;
}

/** The volumes every "ordinary" test pod has: emptyDir, configMap, secret (from the global setup). */
export const basicVolumes: Record<string, VolumeSource> = {
  scratch: { emptyDir: {} },
  config: { configMap: { name: 'app-config' } },
  tls: { secret: { secretName: 'app-tls' } },
};

// CSI TEST DRIVER AND STACK CONTROL

/** Sets a fault on one CSI method of the test driver (drivers/csi-loop README, Control API). */
export async function setDriverFault(method: string, spec: { code?: string; message?: string; delayMs?: number; failNext?: number }): Promise<void> {
  const res = await fetch(`${stackInfo().driverUrl}/faults/${method}`, { method: 'PUT', body: JSON.stringify(spec), headers: { 'content-type': 'application/json' } });
  expect(res.status, `PUT /faults/${method}`).toBe(200);
}

export async function clearDriverFault(method: string): Promise<void> {
  const res = await fetch(`${stackInfo().driverUrl}/faults/${method}`, { method: 'DELETE' });
  expect([200, 204, 404]).toContain(res.status);
}

/** The driver's call log entries for a volume id. */
export async function driverCalls(volumeId: string): Promise<{ seq: number; method: string; code: string }[]> {
  const res = await fetch(`${stackInfo().driverUrl}/calls`);
  const calls = (await res.json()) as { seq: number; method: string; code: string; volumeId?: string }[];
  return calls.filter((c) => c.volumeId === volumeId);
}

/** Restarts a node's agent (SIGTERM, then start on the same port and directories). */
export async function restartAgent(node: E2eNodeName): Promise<void> {
  const res = await fetch(`${stackInfo().controlUrl}/agents/${node}/restart`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
  expect(res.status, await res.text()).toBe(204);
}

// PAGES

/** Saves a full-page screenshot as e2e/artifacts/<name>.png. */
export async function saveScreenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * Opens `path` and waits until the page is live: its first connection indicator says `live`.
 * That state exists only in the browser (the server renders `connecting…`), so the page has
 * hydrated and its event stream delivered a snapshot. Before hydration the server-rendered
 * buttons are plain HTML: a click on one does nothing, and a test that clicks right after
 * `goto` would fail on a loaded machine while an operator would simply click again.
 */
export async function openLive(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await expect(page.getByTestId('connection-status').first()).toHaveAttribute('data-phase', 'live');
}

export function nodePath(node: E2eNodeName): string {
  return `/nodes/${node}`;
}

export function podPath(node: E2eNodeName, uid: string): string {
  return `/nodes/${node}/pods/${uid}`;
}
