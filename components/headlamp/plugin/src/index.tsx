/**
 * VolumeScope's Headlamp plugin (Headlamp's plugin API, built with `headlamp-plugin build`):
 *
 * - on a Pod's details page, a "Volumes" section: the pod's volumes with the mount pipeline, the
 *   first blocking stage, the error verbatim and the next retry (components/headlamp/volumes-views.tsx);
 * - on a Node's details page, the node's VolumeScope counts and health;
 *
 * both read live (every 3 s) from the VolumeScope dashboard through the API server's service
 * proxy with the signed-in user's credentials (components/headlamp/volumescope-source.ts), and
 * link to the dashboard, where the actions are. The dashboard's public URL for those links is the
 * plugin setting "Dashboard URL" (Settings → Plugins → volumescope-headlamp-plugin).
 */
import { ApiProxy, ConfigStore, registerDetailsViewSection, registerPluginSettings, type DetailsViewSectionProps } from '@kinvolk/headlamp-plugin/lib';
import { SectionBox } from '@kinvolk/headlamp-plugin/lib/CommonComponents';
import { useCallback, useState, type ChangeEvent } from 'react';
import { NodeCounts, PodVolumes } from '../../volumes-views.tsx';
import { useAgentSnapshot, type HeadlampRequest, type SnapshotState } from '../../volumescope-source.ts';

const PLUGIN = 'volumescope-headlamp-plugin';

interface Settings {
  dashboardUrl?: string;
}
const store = new ConfigStore<Settings>(PLUGIN);

const request: HeadlampRequest = (path) => ApiProxy.request(path) as Promise<unknown>;

/** The fields of Headlamp's KubeObject the sections read. */
interface Resource {
  kind: string;
  metadata: { name: string; uid?: string };
  spec?: { nodeName?: string };
}

function useDashboardUrl(): string | null {
  const config = store.useConfig()();
  const url = config?.dashboardUrl?.trim() ?? '';
  return url === '' ? null : url;
}

function Status({ state, children }: { state: SnapshotState; children: (snapshot: Extract<SnapshotState, { kind: 'ready' }>) => JSX.Element }) {
  if (state.kind === 'loading') return <p>Reading the VolumeScope agent…</p>;
  if (state.kind === 'error') return <p role="alert">VolumeScope is not reachable: {state.message}</p>;
  return children(state);
}

function PodSection({ pod }: { pod: Resource }) {
  const node = pod.spec?.nodeName ?? null;
  const state = useAgentSnapshot(request, node);
  const dashboardUrl = useDashboardUrl();
  if (node === null) return <SectionBox title="Volumes">The pod is not scheduled to a node yet: no volume manager works on it.</SectionBox>;
  return (
    <SectionBox title="Volumes">
      <Status state={state}>{(s) => <PodVolumes snapshot={s.snapshot} podUid={pod.metadata.uid ?? ''} now={Date.now()} dashboardUrl={dashboardUrl} />}</Status>
    </SectionBox>
  );
}

function NodeSection({ node }: { node: Resource }) {
  const state = useAgentSnapshot(request, node.metadata.name);
  const dashboardUrl = useDashboardUrl();
  return (
    <SectionBox title="VolumeScope">
      <Status state={state}>{(s) => <NodeCounts snapshot={s.snapshot} dashboardUrl={dashboardUrl} />}</Status>
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
      Dashboard URL (links to VolumeScope for actions){' '}
      <input type="url" value={value} onChange={onChange} placeholder="https://volumescope.example.com" />
    </label>
  );
}

registerPluginSettings(PLUGIN, SettingsPage, false);
