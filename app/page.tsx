export default function HomePage() {
  return (
    <main>
      <h1>VolumeScope</h1>
      <p>
        The dashboard is not built yet. The volume manager engine lives in <code>lib/</code>; run{' '}
        <code>npm run bench:core</code> to exercise it.
      </p>
    </main>
  );
}
