import fc from 'fast-check';
import { micromark } from 'micromark';
import { gfm, gfmHtml } from 'micromark-extension-gfm';
import { describe, expect, it } from 'vitest';
import type { AuditEntry, RecentEvent, Snapshot } from '../api/index.ts';
import { exampleSnapshot, FIXTURE_T0 } from '../api/testing/snapshot-fixtures.ts';
import { markdownCell, nodeMarkdownSummary, podMarkdownSummary, rowStageText } from './markdown-summary.ts';
import { summarizeNode } from './node-summary.ts';
import { deriveVolumeRows, findPod } from './pipeline.ts';
import { parsePublicUrl } from './public-url.ts';

const DB_UID = 'a7d9e3b1-6c45-4b8a-8f2d-0e1c9b7a5d33';
const WEB_UID = '5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10';
const CSI_PG = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-pg';
const CSI_DATA = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-data';
/** The CSI volume's name as a link label: Markdown metacharacters escaped. */
const CSI_DATA_LABEL = CSI_DATA.replaceAll('.', '\\.');
const PG_PATH = `/nodes/node-a/volumes/${encodeURIComponent(CSI_PG)}`;
const NOW = FIXTURE_T0 + 62_000;
const BASE = 'https://vs.example';

function dbPod(snapshot: Snapshot) {
  const pod = findPod(snapshot, DB_UID);
  if (pod === null) throw new Error('fixture: db-0 is missing');
  return pod;
}

function failedMount(at: number, volume: string, podUid: string, message = `MountVolume.SetUp failed for volume "x" : boom ${at}`): RecentEvent {
  return { time: FIXTURE_T0 + at, type: 'Warning', reason: 'FailedMount', podUid, message, volume };
}

/** The lines of a summary's "Last events" list. */
function eventLines(text: string): string[] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith('Last events'));
  if (at < 0) return [];
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('- ')) break;
    out.push(l);
  }
  return out;
}

describe('Copy as Markdown', () => {
  it('a stuck pod reads as its node, time, summary line, one row per volume (error verbatim, failures ×N since T, stuck for D, next retry), its events and links on the public URL', () => {
    // Arrange
    const snapshot = exampleSnapshot();

    // Act
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: BASE });

    // Assert
    expect(text).toBe(
      [
        `**Pod default/db-0** (uid \`${DB_UID}\`) on node **node-a**`,
        '_2026-11-30 08:01:02 UTC, agent seq 42_',
        '',
        '`unmounted volumes=[pgdata], unattached volumes=[]`',
        '',
        '| volume | state | stage | error | failing | next retry |',
        '|---|---|---|---|---|---|',
        `| [pgdata](${BASE}${PG_PATH}) | uncertain | uncertain: device mounted | MountVolume\\.MountDevice failed for volume "pgdata" \\: rpc error\\: code = DeadlineExceeded desc = context deadline exceeded | failures ×3 since 2026-11-30 08:00:59 UTC, stuck for 3 s | retry in 0:01 (2026-11-30 08:01:03 UTC) |`,
        '',
        'Last events (the latest group, aggregated):',
        `- Warning FailedMount, 1 s ago ([pgdata](${BASE}${PG_PATH})): MountVolume\\.MountDevice failed for volume "pgdata" \\: rpc error\\: code = DeadlineExceeded desc = context deadline exceeded`,
        '',
        'Pod errors:',
        '- MountVolume\\.MountDevice failed for volume "pgdata"\\: context deadline exceeded',
        '',
        `[Open the pod in VolumeScope](${BASE}/nodes/node-a/pods/${DB_UID}) · [node node-a](${BASE}/nodes/node-a)`,
        '',
      ].join('\n'),
    );
  });

  it('carries the pod’s phase and containers’ states under the heading where the source has a status, and nothing where it has none', () => {
    // Arrange: db-0 waiting in ContainerCreating for 1 min
    const plain = exampleSnapshot();
    const snapshot: Snapshot = {
      ...plain,
      desired: {
        pods: plain.desired.pods.map((p) =>
          p.uid === DB_UID
            ? { ...p, phase: 'Pending', containers: [{ name: 'db', kind: 'container' as const, state: 'waiting' as const, reason: 'ContainerCreating', since: NOW - 60_000, sinceObserved: true, ready: false, restartCount: 0 }] }
            : p,
        ),
      },
    };

    // Act
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: BASE });
    const without = podMarkdownSummary({ node: 'node-a', pod: dbPod(plain), snapshot: plain, now: NOW, baseUrl: BASE });

    // Assert
    expect(text.split('\n').slice(0, 4)).toEqual([
      `**Pod default/db-0** (uid \`${DB_UID}\`) on node **node-a**`,
      '_2026-11-30 08:01:02 UTC, agent seq 42_',
      // The line carries pod-authored names, escaped (`db\:` renders as `db:`).
      'phase Pending · db\\: ContainerCreating since 1 min',
      '',
    ]);
    expect(without).not.toContain('ContainerCreating');
    expect(without.split('\n')[2]).toBe('');
  });

  it('"stuck for" is live while the operation fails, and the count is the history\'s attempts in all (a Retry now resets neither)', () => {
    const snapshot = exampleSnapshot();
    const history = snapshot.operationHistory.map((h) => ({ ...h, attemptsTotal: 9 }));
    const later = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot: { ...snapshot, operationHistory: history }, now: FIXTURE_T0 + 59_000 + 125_000, baseUrl: null });
    expect(later).toContain('| failures ×9 since 2026-11-30 08:00:59 UTC, stuck for 2 min 5 s |');
  });

  it('without a history of the operation, the pending operation\'s failures are counted, with no time to say "since"', () => {
    const snapshot = { ...exampleSnapshot(), operationHistory: [] };
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: null });
    expect(text).toContain('| failures ×3 | retry in 0:01');
    expect(text).not.toContain('since');
  });

  it('between attempts (no pending operation) the pair\'s history that still fails is used; a recovered one is not', () => {
    const base = exampleSnapshot();
    const failing = base.operationHistory[0];
    if (failing === undefined) throw new Error('fixture');
    const snapshot: Snapshot = {
      ...base,
      operations: [],
      // An older attach history of the same volume that recovered, and the failing mount.
      operationHistory: [{ ...failing, operationName: 'volume_attach', podUid: null, firstFailureAt: FIXTURE_T0, attemptsTotal: 7, succeededAt: FIXTURE_T0 + 1_000 }, failing],
    };
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: null });
    expect(text).toContain('| pgdata | uncertain | uncertain: device mounted | — | failures ×3 since 2026-11-30 08:00:59 UTC, stuck for 3 s | — |');
  });

  it('lists the last three aggregated event groups, newest first, ×N over their span, resolved ones marked', () => {
    // Arrange: four groups on db-0: pgdata FailedMount ×3 (the newest), a Normal event, an older
    // FailedMount of another volume, and the oldest, which must be left out.
    const snapshot = exampleSnapshot();
    const events: RecentEvent[] = [
      { time: FIXTURE_T0 + 1_000, type: 'Warning', reason: 'FailedAttachVolume', podUid: DB_UID, message: 'AttachVolume.Attach failed : oldest', volume: CSI_PG },
      failedMount(10_000, CSI_DATA, DB_UID, 'MountVolume.SetUp failed for volume "data" : older'),
      { time: FIXTURE_T0 + 20_000, type: 'Normal', reason: 'SuccessfulMountVolume', podUid: DB_UID, message: 'MountVolume.SetUp succeeded', volume: CSI_DATA },
      failedMount(30_000, CSI_PG, DB_UID),
      failedMount(45_000, CSI_PG, DB_UID),
      failedMount(61_000, CSI_PG, DB_UID, 'MountVolume.MountDevice failed for volume "pgdata" : latest | piped\nsecond line'),
    ];

    // Act
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot: { ...snapshot, recentEvents: events }, now: NOW, baseUrl: BASE });

    // Assert
    expect(text).toContain('Last events (the latest 3 groups, aggregated):');
    expect(eventLines(text)).toEqual([
      `- Warning FailedMount ×3 over 31 s, last 1 s ago ([pgdata](${BASE}${PG_PATH})): MountVolume\\.MountDevice failed for volume "pgdata" \\: latest \\| piped second line`,
      `- Normal SuccessfulMountVolume, 42 s ago ([${CSI_DATA_LABEL}](${BASE}/nodes/node-a/volumes/${encodeURIComponent(CSI_DATA)})): MountVolume\\.SetUp succeeded`,
      `- Warning FailedMount, 52 s ago ([${CSI_DATA_LABEL}](${BASE}/nodes/node-a/volumes/${encodeURIComponent(CSI_DATA)})): MountVolume\\.SetUp failed for volume "data" \\: older`,
    ]);
    expect(text).not.toContain('oldest');
  });

  it('a mount failure whose volume is mounted now says when it was resolved', () => {
    const snapshot = exampleSnapshot();
    // web-0's data volume is mounted; its mount failed once before and then succeeded.
    const resolved: Snapshot = {
      ...snapshot,
      recentEvents: [failedMount(5_000, CSI_DATA, WEB_UID, 'MountVolume.SetUp failed for volume "data" : transient')],
      operationHistory: [
        ...snapshot.operationHistory,
        { operationName: 'volume_mount', volume: CSI_DATA, podUid: WEB_UID, nodeName: null, firstFailureAt: FIXTURE_T0 + 5_000, attemptsTotal: 2, attempts: [], succeededAt: FIXTURE_T0 + 8_000 },
      ],
    };
    const text = nodeMarkdownSummary({ node: 'node-a', summary: summarizeNode(resolved), rows: deriveVolumeRows(resolved), snapshot: resolved, now: NOW, baseUrl: null });
    expect(eventLines(text)).toEqual(['- Warning FailedMount, 57 s ago (default/web-0 / data): MountVolume\\.SetUp failed for volume "data" \\: transient — resolved: mounted at 2026-11-30 08:00:08 UTC']);
  });

  it('every link is built on the configured public base URL, path prefix included', () => {
    const snapshot = exampleSnapshot();
    const base = parsePublicUrl('https://ops.example.com/tools/volumescope/');
    const pod = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: base });
    const node = nodeMarkdownSummary({ node: 'node-a', summary: summarizeNode(snapshot), rows: deriveVolumeRows(snapshot), snapshot, now: NOW, baseUrl: base });
    for (const text of [pod, node]) {
      const links = [...text.matchAll(/\]\(([^)]*)\)/g)].map((m) => m[1]);
      expect(links.length).toBeGreaterThanOrEqual(3);
      for (const l of links) expect(l).toMatch(/^https:\/\/ops\.example\.com\/tools\/volumescope\/nodes\/node-a(\/|$)/);
    }
    expect(node).toContain(`[Open node node-a in VolumeScope](https://ops.example.com/tools/volumescope/nodes/node-a)`);
    expect(node).toContain(`| [default/db-0](https://ops.example.com/tools/volumescope/nodes/node-a/pods/${DB_UID}) | [pgdata](https://ops.example.com/tools/volumescope${PG_PATH}) |`);
  });

  it('without a base URL the text has no links at all', () => {
    const snapshot = exampleSnapshot();
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: null });
    expect(text).not.toMatch(/\]\(/);
    expect(text).toContain('| pgdata | uncertain |');
  });

  it('a node lists its counts, only the volumes that are not ready with how long they fail, and its last events', () => {
    const snapshot = exampleSnapshot();
    const text = nodeMarkdownSummary({ node: 'node-a', summary: summarizeNode(snapshot), rows: deriveVolumeRows(snapshot), snapshot, now: NOW, baseUrl: null });
    expect(text).toContain('**Node node-a**: degraded (1 in backoff, 1 uncertain, 1 pod with errors)');
    expect(text).toContain('| default/db-0 | pgdata | uncertain | uncertain: device mounted |');
    expect(text).toContain('| failures ×3 since 2026-11-30 08:00:59 UTC, stuck for 3 s |');
    expect(eventLines(text)).toEqual(['- Warning FailedMount, 1 s ago (default/db-0 / pgdata): MountVolume\\.MountDevice failed for volume "pgdata" \\: rpc error\\: code = DeadlineExceeded desc = context deadline exceeded']);
    expect(text).not.toContain('web-0');
  });

  it.each([
    ['a | b', 'a \\| b'],
    ['line one\nline two', 'line one line two'],
    ['back\\slash', 'back\\\\slash'],
  ])('table cells stay one cell: %j', (input, output) => {
    expect(markdownCell(input)).toBe(output);
  });

  it('the stage text says where a waiting volume is stuck', () => {
    const snapshot = exampleSnapshot();
    const rows = deriveVolumeRows({ ...snapshot, actual: { volumes: [] } });
    // The configMap is not attachable: its stage is the kubelet's verification, never "attached".
    expect(rows.map(rowStageText)).toEqual(['waiting: verified on node', 'waiting: attached', 'waiting: attached']);
  });

  it('lists the operator actions on the pod with who (and groups), the incident ID, the reason, the checks and the outcome', () => {
    const snapshot = exampleSnapshot();
    const entry: AuditEntry = {
      time: FIXTURE_T0 + 60_000,
      caller: 'alice@example.com',
      groups: ['volumescope:operators'],
      incidentId: 'INC-4711',
      reason: 'stuck after the driver restart',
      action: 'unmount',
      target: `${DB_UID}/${CSI_PG}`,
      checks: [{ name: 'pod-not-desired', ok: true, detail: 'pod is not in the desired state' }],
      result: 'succeeded',
      message: null,
    };
    const text = podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot: { ...snapshot, audit: [entry] }, now: NOW, baseUrl: null });

    expect(text).toContain('Operator actions (the latest):');
    expect(text).toContain(
      String.raw`- 2026-11-30 08:01:00 UTC **alice\@example\.com** (volumescope\:operators): unmount ` +
        `\`${DB_UID}/${CSI_PG}\` → **succeeded** · incident INC-4711 · reason: stuck after the driver restart · checks: ✓ pod-not-desired: pod is not in the desired state`,
    );
  });

  /** Strings made to inject Markdown: links, images, HTML, autolinks, table breaks. */
  const hostile = fc
    .array(
      fc.oneof(
        fc.constantFrom('[x](https://evil.example)', '![i](https://evil.example/i.png)', '<img src=x onerror=alert(1)>', '<script>alert(1)</script>', 'www.evil.example', 'https://evil.example', 'a@evil.example', '<https://evil.example>', '|', '\n', '`', '**', '_', ')', '(', ']', '['),
        fc.string({ maxLength: 3 }),
      ),
      { minLength: 1, maxLength: 8 },
    )
    .map((parts) => parts.join(''));

  it('injects no link, image or HTML from pod-controlled names, errors, events and audit texts (property, rendered with GFM)', () => {
    fc.assert(
      fc.property(hostile, hostile, hostile, (name, error, reason) => {
        const base = exampleSnapshot();
        const replaced = JSON.parse(JSON.stringify(base), (_key, value: unknown) => {
          if (value === 'db-0' || value === 'pgdata') return name;
          if (typeof value === 'string' && value.includes('deadline exceeded')) return error;
          return value;
        }) as Snapshot;
        const audit: AuditEntry[] = [{ time: FIXTURE_T0, caller: name, groups: [reason], incidentId: name, reason, action: 'unmount', target: `${DB_UID}/${name}`, checks: [{ name, ok: false, detail: error }], result: 'refused', message: error }];
        const snapshot: Snapshot = { ...replaced, audit, recentEvents: [failedMount(61_000, CSI_PG, DB_UID, error)] };
        const texts = [
          podMarkdownSummary({ node: 'node-a', pod: dbPod(snapshot), snapshot, now: NOW, baseUrl: BASE }),
          nodeMarkdownSummary({ node: 'node-a', summary: summarizeNode(snapshot), rows: deriveVolumeRows(snapshot), snapshot, now: NOW, baseUrl: BASE }),
        ];
        for (const text of texts) {
          const html = micromark(text, { extensions: [gfm()], htmlExtensions: [gfmHtml()], allowDangerousHtml: true });
          expect(html).not.toMatch(/<(img|script|iframe)\b/);
          const tags = new Set([...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9]*)/g)].map((m) => m[1]));
          for (const tag of tags) expect(['p', 'strong', 'em', 'code', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'ul', 'li']).toContain(tag);
          for (const m of html.matchAll(/<a href="([^"]*)"/g)) expect(m[1]).toMatch(/^https:\/\/vs\.example\/nodes\/node-a(\/|$)/);
        }
      }),
      { numRuns: 300 },
    );
  });
});
