/**
 * What e2e/global-setup.ts tells the tests about the stack it started, through one environment
 * variable (Playwright starts the workers after the global setup, so they inherit it). Read it
 * lazily: Playwright also loads the test files before the global setup runs, to list the tests.
 */

export const STACK_ENV = 'VOLUMESCOPE_E2E_STACK';

/** The agents' node names. */
export const E2E_NODES = ['e2e-node-a', 'e2e-node-b'] as const;
export type E2eNodeName = (typeof E2E_NODES)[number];

/** The observe-mode agent's node (e2e/observer.ts): beside a "kubelet" whose root dir the setup built. */
export const E2E_OBSERVER = 'e2e-observer';

/** The namespace of every object the tests create. */
export const E2E_NAMESPACE = 'e2e';

export interface NodeInfo {
  name: string;
  /** The agent's API base URL (the tests' own view; the browser never talks to it). */
  url: string;
  tokenFile: string;
  rootDir: string;
  manifestDir: string;
}

export interface StackInfo {
  dashboardUrl: string;
  /** The global setup's control server (agent restarts). */
  controlUrl: string;
  /** The CSI test driver's control API (faults, call log, state). */
  driverUrl: string;
  baseDir: string;
  /** Real mounts (root, private mount namespace) rather than the unprivileged stand-ins. */
  mountsAllowed: boolean;
  driverMode: 'privileged' | 'unprivileged';
  nodes: NodeInfo[];
  /** The observe-mode agent (`manifestDir` is empty: its pods come from the test API server). */
  observer: NodeInfo;
}

export function stackInfo(): StackInfo {
  const raw = process.env[STACK_ENV];
  if (raw === undefined) throw new Error(`${STACK_ENV} is not set: run the tests through playwright.config.ts (npm run test:e2e), whose global setup starts the stack`);
  return JSON.parse(raw) as StackInfo;
}

export function nodeInfo(name: E2eNodeName): NodeInfo {
  const node = stackInfo().nodes.find((n) => n.name === name);
  if (node === undefined) throw new Error(`the e2e stack has no node ${name}`);
  return node;
}
