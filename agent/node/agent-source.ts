/**
 * The agent's name for the object source contract (lib/sources/source.ts): what the agent
 * needs of its pod and object source, whichever runs (`ManifestSource` or `KubeSource`).
 */
export type { ObjectSource as AgentSource, ObjectSourceChange as AgentSourceChange } from '../../lib/sources/source.ts';
