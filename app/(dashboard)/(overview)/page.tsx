import { connection } from 'next/server';
import { NodesOverview } from '../../../components/overview/nodes-overview.tsx';
import { PodSearch } from '../../../components/overview/pod-search.tsx';
import { ConfigErrorPanel } from '../../../components/page/page-states.tsx';
import { serverAgentsReady } from '../../../lib/dashboard/server-deps.ts';
import { agentsForPage } from '../../../lib/dashboard/server-pages.ts';

export default async function OverviewPage() {
  // The agent list comes from the environment (or discovery) at request time, never from the build.
  await connection();
  // With discovery, right after a restart: the first list of agent pods (bounded wait).
  await serverAgentsReady();
  const agents = agentsForPage();
  if (!agents.ok) return <ConfigErrorPanel error={agents.error} />;
  const list = agents.config.agents.map((a) => ({ name: a.name, url: a.url }));
  const discovery = agents.config.discovery ?? null;
  return (
    <>
      <h1>Nodes</h1>
      {list.length === 0 && discovery === null ? (
        <div className="gate">
          <p>No agents are configured.</p>
          <p>
            Start the dashboard with <code>VOLUMESCOPE_AGENTS=node-a=http://10.0.0.5:7070</code> and{' '}
            <code>VOLUMESCOPE_AGENT_TOKENS=node-a=/etc/volumescope/node-a.token</code> (or <code>VOLUMESCOPE_DASHBOARD_CONFIG</code>), or
            in a cluster with <code>VOLUMESCOPE_DISCOVERY=kubernetes</code>.
          </p>
        </div>
      ) : (
        <>
          <PodSearch />
          <NodesOverview agents={list} discovery={discovery} />
        </>
      )}
    </>
  );
}
