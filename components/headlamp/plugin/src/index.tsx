/**
 * VolumeScope's Headlamp plugin (Headlamp's plugin API, built with `headlamp-plugin build`):
 *
 * - on a Pod's details page, a "Volumes" section: the pod's volumes with the mount pipeline, the
 *   first blocking stage, the error verbatim and the next retry (components/headlamp/volumes-views.tsx);
 * - on a Node's details page, the node's VolumeScope counts and health;
 *
 * both read live (every 3 s) from the VolumeScope dashboard's read-only snapshot route with the
 * user's VolumeScope session cookie (components/headlamp/volumescope-source.ts), and link to the
 * dashboard, where the actions are. The dashboard's URL is the plugin setting "Dashboard URL"
 * (Settings → Plugins → volumescope-headlamp-plugin); the dashboard must list Headlamp's origin
 * in VOLUMESCOPE_CORS_ORIGINS and be on the same site (README "Headlamp").
 */
import { ConfigStore, registerDetailsViewSection, registerPluginSettings, type DetailsViewSectionProps } from '@kinvolk/headlamp-plugin/lib';
import { SectionBox } from '@kinvolk/headlamp-plugin/lib/CommonComponents';
import { useCallback, useState, type ChangeEvent } from 'react';
import { NodeCounts, PodVolumes } from '../../volumes-views.tsx';
import { useAgentSnapshot, type FetchLike, type SnapshotState } from '../../volumescope-source.ts';

const PLUGIN = 'volumescope-headlamp-plugin';

interface Settings {
  dashboardUrl?: string;
}
const store = new ConfigStore<Settings>(PLUGIN);

const browserFetch: FetchLike = (url, init) => fetch(url, init);

/** The fields of Headlamp's KubeObject the sections read. */
interface Resource {
  kind: string;
  metadata: { name: string; uid?: string };
  spec?: { nodeName?: string };
}

function useDashboardUrl(): string | null {
  const config = store.useConfig()();
  return dashboardUrlSetting(config?.dashboardUrl);
}

/** The setting as a base URL: an http(s) URL, or `null` when unset or not one. */
function dashboardUrlSetting(raw: string | undefined): string | null {
  const text = raw?.trim() ?? '';
  if (text === '') return null;
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:' ? text : null;
  } catch {
    return null;
  }
}

function Status({ state, dashboardUrl, children }: { state: SnapshotState; dashboardUrl: string | null; children: (snapshot: Extract<SnapshotState, { kind: 'ready' }>) => JSX.Element }) {
  if (state.kind === 'unconfigured') return <p>Set the VolumeScope dashboard URL in Settings → Plugins → {PLUGIN}.</p>;
  if (state.kind === 'loading') return <p>Reading the VolumeScope agent…</p>;
  if (state.kind === 'error') {
    return (
      <p role="alert">
        VolumeScope is not reachable: {state.message}
        {state.loginNeeded && dashboardUrl !== null ? (
          <>
            {' '}
            <a href={dashboardUrl} target="_blank" rel="noreferrer">
              Log in to VolumeScope
            </a>
          </>
        ) : null}
      </p>
    );
  }
  return children(state);
}

function PodSection({ pod }: { pod: Resource }) {
  const node = pod.spec?.nodeName ?? null;
  const dashboardUrl = useDashboardUrl();
  const state = useAgentSnapshot(browserFetch, dashboardUrl, node);
  if (node === null) return <SectionBox title="Volumes">The pod is not scheduled to a node yet: no volume manager works on it.</SectionBox>;
  return (
    <SectionBox title="Volumes">
      <Status state={state} dashboardUrl={dashboardUrl}>{(s) => <PodVolumes snapshot={s.snapshot} podUid={pod.metadata.uid ?? ''} now={Date.now()} dashboardUrl={dashboardUrl} />}</Status>
    </SectionBox>
  );
}

function NodeSection({ node }: { node: Resource }) {
  const dashboardUrl = useDashboardUrl();
  const state = useAgentSnapshot(browserFetch, dashboardUrl, node.metadata.name);
  return (
    <SectionBox title="VolumeScope">
      <Status state={state} dashboardUrl={dashboardUrl}>{(s) => <NodeCounts snapshot={s.snapshot} dashboardUrl={dashboardUrl} />}</Status>
    </SectionBox>
  );
}

registerDetailsViewSection(({ resource }: DetailsViewSectionProps) => {
  const r = resource as unknown as Resource | undefined;
  if (r?.kind === 'Pod') return <PodSection pod={r} />;
  if (r?.kind === 'Node') return <NodeSection node={r} />;
  return null;
});

function SettingsPage() {
  const [value, setValue] = useState(store.get()?.dashboardUrl ?? '');
  const onChange = useCallback((e: ChangeEvent<HTMLInputElement>) => {
    setValue(e.target.value);
    store.update({ dashboardUrl: e.target.value });
  }, []);
  return (
    <label>
      VolumeScope dashboard URL (read with your VolumeScope session; links for actions){' '}
      <input type="url" value={value} onChange={onChange} placeholder="https://volumescope.example.com" />
    </label>
  );
}

registerPluginSettings(PLUGIN, SettingsPage, false);
