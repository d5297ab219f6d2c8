// The contract every torture campaign implements, so `npm run torture` can run them one after
// another and print one JSON summary. A campaign stops by itself: its loops are bounded in count
// and time, and it talks only to processes it started on this machine (loopback addresses).

/** How much of a campaign to run: `short` is the form CI runs, `full` the one reported in notes. */
export type CampaignSize = 'short' | 'full';

export interface CampaignOptions {
  readonly size: CampaignSize;
  /** A fresh directory the campaign owns (roots, manifests, logs); removed by the runner. */
  readonly workDir: string;
  /** Progress lines for a person watching; never part of the JSON summary. */
  readonly log: (line: string) => void;
}

export interface CampaignResult {
  /** Stable identifier, e.g. "kill-churn", "csi-fault-matrix", "api-fuzz", "malformed-manifests", "soak". */
  readonly name: string;
  /** True only when every check of the campaign held. */
  readonly ok: boolean;
  /** Measured figures (counts, durations in ms, bytes), named so an operator can read them. */
  readonly figures: Readonly<Record<string, number | string | boolean>>;
  /** One line per failed check, naming the input that failed; empty when ok. */
  readonly failures: readonly string[];
}

export interface Campaign {
  readonly name: string;
  run(options: CampaignOptions): Promise<CampaignResult>;
}
