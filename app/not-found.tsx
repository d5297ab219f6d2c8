import { NotFoundPanel } from '../components/page/page-states.tsx';

export default function NotFound() {
  return (
    <main className="main">
      <NotFoundPanel title="Page not found">
        <p>There is no page at this address.</p>
      </NotFoundPanel>
    </main>
  );
}
