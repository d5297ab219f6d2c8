/**
 * deploy/monitoring/: the Prometheus rules run through `promtool check rules` and
 * `promtool test rules` (Debian's `prometheus` package ships promtool; .ci/run installs it), the
 * PrometheusRule carries exactly the plain rule file's groups, and every metric a rule or a
 * Grafana panel names is one the agent exports (its real registry, `createAgentMetrics()`), so a
 * renamed metric breaks this test instead of an alert silently never firing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createAgentMetrics } from '../../agent/server/metrics.ts';

const dir = fileURLToPath(new URL('.', import.meta.url));
const read = (name: string): string => readFileSync(join(dir, name), 'utf8');

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'inf', 'nan']);

/**
 * The metric names of a PromQL expression: identifiers outside strings, label matchers, `by (…)`
 * lists and range selectors that are not function calls, keywords or numbers. Enough for the
 * expressions of this directory (no `@` modifiers or subqueries).
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (name === undefined || call !== undefined || PROMQL_WORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names].sort();
}

/** Every series name the agent's registry exports (histograms as `_bucket`, `_count`, `_sum`). */
async function exportedNames(): Promise<Set<string>> {
  const metrics = createAgentMetrics();
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${m.name}${suffix}`);
  }
  return names;
}

const rules = parse(read('volumescope.rules.yml')) as RuleFile;
const ruleExprs = rules.groups.flatMap((g) => g.rules.map((r) => ({ name: r.alert ?? r.record ?? '', expr: r.expr })));
interface Panel {
  id: number;
  title: string;
  targets?: { expr: string }[];
}
const dashboard = JSON.parse(read('grafana-dashboard.json')) as { panels: Panel[]; templating: { list: { name: string; query: unknown }[] } };
const panelExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ name: p.title, expr: t.expr })));

describe('metricNames', () => {
  it('finds the metric names and nothing else', () => {
    expect(metricNames('sum by (le, driver_name) (rate(csi_operations_seconds_bucket{grpc_status_code!="OK",x=~"a(b)"}[5m])) / on (instance) up or vector(0) > 0.1')).toEqual(['csi_operations_seconds_bucket', 'up']);
    expect(metricNames('count(volumescope_volume_uncertain{instance=~"$instance"} == 1) or vector(0)')).toEqual(['volumescope_volume_uncertain']);
  });
});

describe('deploy/monitoring', () => {
  it.each([...ruleExprs, ...panelExprs])('$name names only metrics the agent exports', async ({ expr }) => {
    const exported = await exportedNames();
    const names = metricNames(expr);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !exported.has(n))).toEqual([]);
  });

  it('covers the alerts: uncertain volume, backoff at its cap, orphans, unhealthy mount, CSI error rate', () => {
    expect(ruleExprs.map((r) => r.name)).toEqual(
      expect.arrayContaining(['VolumeScopeVolumeUncertain', 'VolumeScopeOperationBackoffAtCap', 'VolumeScopeOrphanedPods', 'VolumeScopeMountUnhealthy', 'VolumeScopeCSIErrorRate']),
    );
  });

  it('the PrometheusRule carries exactly the groups of the plain rule file', () => {
    const cr = parse(read('prometheusrule.yaml')) as { apiVersion: string; kind: string; spec: RuleFile };
    expect(cr.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(cr.kind).toBe('PrometheusRule');
    expect(cr.spec).toEqual(rules);
  });

  it('passes promtool check rules and promtool test rules', () => {
    const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
    expect(promtool.error, 'promtool is missing: install Debian\'s "prometheus" package (.ci/run does)').toBeUndefined();
    const check = execFileSync('promtool', ['check', 'rules', 'volumescope.rules.yml'], { cwd: dir, encoding: 'utf8' });
    expect(check).toContain(`SUCCESS: ${ruleExprs.length} rules found`);
    const test = spawnSync('promtool', ['test', 'rules', 'volumescope.rules.test.yml'], { cwd: dir, encoding: 'utf8' });
    expect(`${test.stdout}${test.stderr}`).toContain('SUCCESS');
    expect(test.status).toBe(0);
  });

  it('the Grafana dashboard has unique panel ids and a datasource and an instance variable', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'instance']);
    expect(panelExprs.length).toBeGreaterThanOrEqual(dashboard.panels.length);
  });
});
