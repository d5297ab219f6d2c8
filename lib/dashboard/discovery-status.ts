/**
 * What the dashboard server tells pages about agent discovery (`VOLUMESCOPE_DISCOVERY=kubernetes`,
 * see discovery.ts): where it looks, whether it has listed the agent pods yet, and its current
 * failure. Shared by the server and the browser, so it depends on zod only.
 */
import { z } from 'zod';

/** A failure of discovery, blamed on the setting an operator has to look at. */
const DiscoveryProblemSchema = z.object({
  /** The environment variable at fault, e.g. `VOLUMESCOPE_DISCOVERY_NAMESPACE` or `KUBECONFIG`. */
  variable: z.string(),
  /** What went wrong and what to check; never a token. */
  message: z.string(),
  /** When this failure began (dashboard server clock, epoch ms). */
  since: z.number(),
});
/** A failure of discovery; see {@link DiscoveryProblemSchema}. */
export type DiscoveryProblem = z.infer<typeof DiscoveryProblemSchema>;

/** The state of discovery. The agent list itself travels separately (as every agent list does). */
export const DiscoveryStatusSchema = z.object({
  /** The namespace the agent pods are listed in. */
  namespace: z.string(),
  /** The label selector they are listed with. */
  selector: z.string(),
  /** True once the pods were listed (stays true): an empty agent list then means "no agent pods". */
  listed: z.boolean(),
  /** The current failure; `null` while listing and watching work. The last known agents are kept meanwhile. */
  error: DiscoveryProblemSchema.nullable(),
});
/** The state of discovery; see {@link DiscoveryStatusSchema}. */
export type DiscoveryStatus = z.infer<typeof DiscoveryStatusSchema>;

/** One line for people: `VOLUMESCOPE_DISCOVERY_NAMESPACE: …`. */
export function describeDiscoveryProblem(problem: DiscoveryProblem): string {
  return `${problem.variable}: ${problem.message}`;
}
